"""The course at a glance (CONTENT.md): per topic, its items, executable items, cards, explain
items and their concepts, cheat sheet, labs, the misconceptions its distractors name, and what
`ranklab verify` last proved of them (challenges/proofs.json), against the curriculum's floors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from app.challenges import course_rules, prose, variants
from app.challenges.catalog import Catalog, TopicView
from app.challenges.schema import ChallengeSet, ChoiceBase, proven_by_run
from app.verification import proofs as proof_file

CONTENT_PATH = Path(__file__).resolve().parents[2] / "CONTENT.md"
# What every topic of the course should have.
FLOORS = {"set_items": 5, "cards": 8, "explain": 2}


@dataclass(frozen=True)
class TopicCounts:
    """What one topic holds."""

    id: str
    title: str
    set_items: int
    executable: int
    cards: int
    explain: int
    concepts: int
    cheat_sheet: bool
    labs: int
    # What the proofs file says of the topic's executable items, lab steps and proofs.
    verify: Counter[str] = field(default_factory=Counter)
    # What its cards and cheat-sheet claims rest on: proven, sourced, neither (and no fact).
    card_basis: Counter[str] = field(default_factory=Counter)
    claim_basis: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(
        cls, topic: TopicView, proofs: Mapping[str, proof_file.Proof] | None = None
    ) -> TopicCounts:
        """Count a topic's content, and its verify statuses by the given proofs."""
        items = [item for facts in topic.sets for item in facts.set.items]
        topics = [topic.loaded_topic] if topic.loaded_topic else []
        hashes = proof_file.current_hashes(topic.loaded_sets, topic.labs, topics)
        card_basis, claim_basis = prose.tally(topic.loaded_topic, topic.loaded_sets, proofs or {})
        return cls(
            id=topic.id,
            title=topic.title,
            set_items=len(items),
            executable=sum(proven_by_run(item) for item in items),
            cards=len(topic.cards),
            explain=len(topic.explain),
            concepts=sum(len(getattr(entry.item, "concepts", [])) for entry in topic.explain),
            cheat_sheet=topic.cheat_sheet is not None,
            labs=len(topic.labs),
            verify=proof_file.tally(proofs or {}, hashes),
            card_basis=card_basis,
            claim_basis=claim_basis,
        )

    @property
    def proven(self) -> bool:
        """Whether every executable item, lab step and proof passed verify (or needs GPUs)."""
        return all(status in proof_file.PROVEN for status in +self.verify)

    @property
    def meets_floors(self) -> bool:
        """Whether the topic has what every topic of the course should."""
        return (
            self.set_items >= FLOORS["set_items"]
            and 2 * self.executable >= self.set_items
            and self.cards >= FLOORS["cards"]
            and self.explain >= FLOORS["explain"]
            and self.cheat_sheet
        )


STATUS_WORDS = {
    "pass": "pass",
    "needs_gpus": "need GPUs",
    "fail": "FAIL",
    "unproven": "not verified",
}


def verify_cell(verify: Counter[str]) -> str:
    """A topic's verify statuses in words, e.g. "6 pass, 1 need GPUs"."""
    parts = [f"{verify[status]} {STATUS_WORDS[status]}" for status in proof_file.STATUSES]
    return ", ".join(part for part in parts if not part.startswith("0 ")) or "nothing to run"


def key_spread(challenge_set: ChallengeSet) -> str:
    """Where a set's keys sit in file order, e.g. "A 5, B 2, C 1" (each key of a multi-select
    item counted): learners see the options shuffled, but a lopsided spread is worth a look."""
    keys: Counter[str] = Counter()
    for item in challenge_set.items:
        if isinstance(item, ChoiceBase):
            places = {option.id: place for place, option in enumerate(item.options)}
            keys.update("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[places[key]] for key in item.answer_ids)
    return ", ".join(f"{letter} {keys[letter]}" for letter in sorted(keys)) or "no options"


def _variant_lines(catalog: Catalog, proofs: Mapping[str, proof_file.Proof]) -> list[str]:
    """Each item with parameters: its parameters, its variants and how many are proven (the
    goal: 40 executable set items across 12 topics with at least 4 proven variants each)."""
    rows: list[str] = []
    counted: Counter[str] = Counter()
    topics_with: set[str] = set()
    for topic in catalog.topics():
        for loaded in topic.loaded_sets:
            for item in loaded.challenge_set.items:
                domains = variants.params_of(item)
                if not domains:
                    continue
                made = len(variants.variants_of(item))
                proven = len(proof_file.proven_variant_keys(proofs, loaded, item))
                names = ", ".join(f"`{name}` ({len(values)})" for name, values in domains.items())
                sample = "" if made == variants.count(item) else f" of {variants.count(item)}"
                rows.append(
                    f"| `{topic.id}` | `{loaded.challenge_set.id}/{item.id}` | {names} "
                    f"| {made}{sample} | {proven} |"
                )
                counted.update(items=1, variants=made, proven=proven)
                if proven >= 4:
                    counted.update(four=1)
                    topics_with.add(topic.id)
    lines = [
        "## Variants",
        "",
        "Items with parameters (`params:`): each variant is run and proven on its own, and a "
        "learner is shown only proven variants. Goal: 40 executable set items across 12 topics "
        "with at least 4 proven variants each.",
        "",
        "| topic | item | parameters (values) | variants | proven |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"{counted['items']} items with parameters, {counted['variants']} variants, "
        f"{counted['proven']} proven; {counted['four']} items in {len(topics_with)} topics have "
        "at least 4 proven variants.",
        "",
    ]
    return lines


def _key_spread_lines(catalog: Catalog) -> list[str]:
    lines = [
        "## Where the keys sit",
        "",
        "Each set's keys by their place among the options in the file (A: listed first). "
        "Learners see each item's options shuffled (pinned ones excepted), so this is about "
        "authoring habits, not what a guesser can exploit.",
        "",
        "| set | keys by place in the file |",
        "|---|---|",
    ]
    for topic in catalog.topics():
        for loaded in topic.loaded_sets:
            lines.append(f"| `{loaded.challenge_set.id}` | {key_spread(loaded.challenge_set)} |")
    return [*lines, ""]


def _key_length_row(name: str, lengths: course_rules.KeyLengths) -> str:
    share = lengths.key_longest / lengths.items if lengths.items else 0.0
    flagged = ", ".join(f"`{item_id}`" for item_id in lengths.long_keys) or "none"
    return (
        f"| {name} | {lengths.key_longest} of {lengths.items} ({share:.0%}) "
        f"| {lengths.chance:.0%} | {'yes' if lengths.near_chance else 'no'} | {flagged} |"
    )


def _key_length_lines(catalog: Catalog) -> list[str]:
    lines = [
        "## Is the key the longest option?",
        "",
        "Per set and per lesson check: how many choice items have a key longer than every "
        "distractor, against chance (keys over options, averaged), and whether that is within "
        f"{course_rules.KEY_LONGEST_MARGIN * 100:.0f} points of chance (or the nearest count to "
        f"it). Items whose key is at least {course_rules.KEY_LENGTH_RATIO}× the mean "
        "distractor's length are named: `ranklab validate` flags both.",
        "",
        "| questions | key longest | chance | near chance | key ≥ "
        f"{course_rules.KEY_LENGTH_RATIO}× distractors |",
        "|---|---|---|---|---|",
    ]
    for topic in catalog.topics():
        for loaded in topic.loaded_sets:
            lengths = course_rules.KeyLengths.of(loaded.challenge_set.items)
            lines.append(_key_length_row(f"set `{loaded.challenge_set.id}`", lengths))
        lesson = topic.loaded_topic.topic.lesson if topic.loaded_topic else None
        if lesson is not None:
            lengths = course_rules.KeyLengths.of(lesson.check)
            lines.append(_key_length_row(f"lesson check `{topic.id}`", lengths))
    return [*lines, ""]


def basis_cell(basis: Counter[str], total_of: tuple[str, ...] = prose.KINDS) -> str:
    """What a topic's cards or claims rest on, e.g. "5 / 3 / 0"."""
    return " / ".join(str(basis[kind]) for kind in total_of)


def _prose_lines(counts: list[TopicCounts]) -> list[str]:
    """The proven-prose table: per topic, cards and cheat-sheet claims proven by a run, sourced
    or neither, then the totals against the goal."""
    cards: Counter[str] = sum((c.card_basis for c in counts), Counter())
    claims: Counter[str] = sum((c.claim_basis for c in counts), Counter())
    lines = [
        "",
        "## Proven prose",
        "",
        "What each card and cheat-sheet claim rests on: **proven** by a run (its `proof:` passed "
        "`ranklab verify` as it is now), **sourced** (a docs URL or torch source path with the "
        "torch version read), or **neither**. Cheat-sheet lines marked `nofact` state no torch "
        "behaviour. Goal: at least half of all cards proven by a run, and none neither.",
        "",
        "| topic | cards proven / sourced / neither | cheat-sheet claims proven / sourced / "
        "neither | no fact |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{c.id}` | {basis_cell(c.card_basis)} | {basis_cell(c.claim_basis)} "
        f"| {c.claim_basis[prose.NO_FACT]} |"
        for c in counts
    ]
    all_cards = sum(cards[kind] for kind in prose.KINDS)
    met = 2 * cards[prose.PROVEN] >= all_cards and not cards[prose.NEITHER] + claims[prose.NEITHER]
    lines += [
        f"| **total** | {basis_cell(cards)} | {basis_cell(claims)} | {claims[prose.NO_FACT]} |",
        "",
        f"{cards[prose.PROVEN]} of {all_cards} cards proven by a run, "
        f"{cards[prose.NEITHER]} cards and {claims[prose.NEITHER]} cheat-sheet claims resting on "
        f"neither: goal {'met' if met else 'not yet met'}.",
    ]
    return lines


def _misconception_lines(catalog: Catalog) -> list[str]:
    """Per topic: how many of its sets' distractors name a misconception, then each
    misconception its items expose, with the belief, the items and what corrects it."""
    lines = [
        "",
        "## Misconceptions",
        "",
        "Each distractor may name the wrong belief it stands for (`misconception:`, from "
        "`challenges/misconceptions.yaml`); results pages and the admin dashboards count first "
        "picks per misconception. Per topic: the distractors of its sets that name one.",
        "",
        "| topic | distractors naming a misconception | misconceptions exposed |",
        "|---|---|---|",
    ]
    rows: list[str] = []
    for topic in catalog.topics():
        exposed: dict[str, list[str]] = {}
        tagged = distractors = 0
        for loaded in topic.loaded_sets:
            for item in loaded.challenge_set.items:
                if not isinstance(item, ChoiceBase):
                    continue
                for option in item.options:
                    if option.id in item.answer_ids:
                        continue
                    distractors += 1
                    if option.misconception is not None:
                        tagged += 1
                        where = exposed.setdefault(option.misconception, [])
                        if item.id not in where:
                            where.append(item.id)
        lines.append(f"| `{topic.id}` | {tagged} of {distractors} | {len(exposed)} |")
        for name, items in exposed.items():
            entry = catalog.misconceptions.get(name)
            belief = entry.belief if entry else "(not in the catalogue)"
            fixed = entry.corrected_by.href if entry else ""
            rows.append(
                f"| `{topic.id}` | `{name}` | {belief} | {', '.join(f'`{i}`' for i in items)} "
                f"| `{fixed}` |"
            )
    return [
        *lines,
        "",
        "| topic | misconception | the wrong belief | items exposing it | corrected by |",
        "|---|---|---|---|---|",
        *rows,
    ]


def render(catalog: Catalog, proofs: Mapping[str, proof_file.Proof] | None = None) -> str:
    """CONTENT.md: a table of every topic, then the totals (stable for the same content)."""
    counts = [TopicCounts.of(topic, proofs) for topic in catalog.topics()]
    total: Counter[str] = sum((c.verify for c in counts), Counter())
    lines = [
        "# Course content",
        "",
        "Generated by `ranklab content` from `challenges/` (a test fails when it is stale).",
        f"Floors per topic: a timed set of ≥ {FLOORS['set_items']} items, at least half of them "
        f"executable (proved by `ranklab verify`), ≥ {FLOORS['cards']} flashcards, "
        f"≥ {FLOORS['explain']} explain-it items and a cheat sheet.",
        "The verify column is what `ranklab verify --proofs challenges/proofs.json challenges` "
        "last observed for the topic's executable items, lab steps and proofs, on CPU ranks "
        "(gloo); an item edited since shows as not verified.",
        "",
        "| topic | set items | executable | cards | explain (concepts) | cheat sheet | labs "
        "| verify (items, lab steps, proofs) | floors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in counts:
        lines.append(
            f"| {c.title} (`{c.id}`) | {c.set_items} | {c.executable} | {c.cards} "
            f"| {c.explain} ({c.concepts}) | {'yes' if c.cheat_sheet else 'no'} | {c.labs} "
            f"| {verify_cell(c.verify)} | {'met' if c.meets_floors else 'not yet'} |"
        )
    lines += [
        "",
        f"{len(counts)} topics ({sum(c.meets_floors for c in counts)} meeting the floors), "
        f"{sum(c.set_items for c in counts)} set items "
        f"({sum(c.executable for c in counts)} executable), "
        f"{sum(c.cards for c in counts)} cards, {sum(c.explain for c in counts)} explain items, "
        f"{sum(c.labs for c in counts)} labs. Verify: {verify_cell(total)}.",
        *_prose_lines(counts),
        *_misconception_lines(catalog),
        "",
    ]
    lines += _variant_lines(catalog, proofs or {})
    lines += _key_spread_lines(catalog)
    lines += _key_length_lines(catalog)
    return "\n".join(lines)
