"""Load challenge YAML files, collecting every error as `path:line:col: message`.

ruamel.yaml keeps the position of every key and item, so schema errors point at the line that
caused them, not only YAML syntax errors. Duplicate keys are errors (ruamel refuses them).
A file over the limits in `app.challenges.limits` (size, nesting, aliases, nodes) is refused
before it is loaded, so hostile content costs a second at most and the other files still load.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError

from app.challenges import (
    cheatsheet,
    checks,
    claim_checks,
    content_checks,
    limits,
    misconceptions,
    plain_errors,
    prerequisites,
    variant_checks,
    variants,
)
from app.challenges.schema import EXECUTABLE_KINDS, ChallengeSet, InlineProof, Topic
from app.kinds import KINDS
from app.kinds.spec import Kind
from app.labs.schema import Lab

YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, order=True)
class LoadError:
    """One problem in one file, with a 1-based position."""

    path: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


@dataclass
class LoadedSet:
    """A valid set with where it came from and its resolved snippets (item id -> code)."""

    challenge_set: ChallengeSet
    path: str
    code: dict[str, str] = field(default_factory=dict)
    fixed_code: dict[str, str] = field(default_factory=dict)  # debug items' proven fixes
    warnings: list[LoadError] = field(default_factory=list)  # worth a look; not errors
    proof_code: dict[str, str] = field(default_factory=dict)  # item id -> its inline proof's
    # Where each `proof: ID` of an item is written, to report an id its topic lacks.
    proof_refs: dict[str, tuple[int, int]] = field(default_factory=dict)
    fact_at: dict[str, tuple[int, int]] = field(default_factory=dict)  # item id -> its `fact:`
    id_at: tuple[int, int] = (1, 1)  # where its `id:` and `topic:` values are written
    topic_at: tuple[int, int] = (1, 1)
    entry_at: dict[str, tuple[int, int]] = field(default_factory=dict)  # item id -> its `id:`
    # (item id, option id) -> where its `misconception:` value is written
    misconception_at: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    # app.verification.evidence.item_hash's, per item id: what it hashed (compared by
    # identity) and the hash. A closed question's page shows where its key was proven,
    # looked up by the item's hash: a JSON dump and SHA-256 of the item each time otherwise.
    hashes: dict[str, tuple[object, str | None, str | None, str]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # Variants as items of their own, `<item id>@<variant key>` -> "nproc=3, OP=MAX"
    # (app.verification.variant_sets); the expanded copy is made once per loaded set.
    variant_labels: dict[str, str] = field(default_factory=dict)
    expanded: LoadedSet | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A parameterised item's snippet, however the set was built (read from its files, or
        # rebuilt from a stored version), is what render rewrites per variant.
        for item in getattr(self.challenge_set, "items", ()):  # () for a bare test double
            if item.id in self.code:
                variants.attach_source(item, self.code[item.id])


@dataclass
class LoadedTopic:
    """A valid topic file with where it came from and its cheat sheet's Markdown (if any)."""

    topic: Topic
    path: str
    cheat_sheet: str | None = None  # as written, claim markers included
    proof_code: dict[str, str] = field(default_factory=dict)  # named proof id -> code
    entry_proof_code: dict[str, str] = field(default_factory=dict)  # card/item id -> inline's
    claims: list[cheatsheet.Claim] = field(default_factory=list)  # the cheat sheet's claims
    fact_at: dict[str, tuple[int, int]] = field(default_factory=dict)  # entry id -> `fact:`
    lesson_code: dict[str, str] = field(default_factory=dict)  # lesson example id -> code
    item_code: dict[str, str] = field(default_factory=dict)  # own item id -> its shown snippet
    lesson_at: dict[str, tuple[int, int]] = field(
        default_factory=dict
    )  # example/check/option -> `id:`
    requires_at: list[tuple[int, int]] = field(default_factory=list)  # each `requires:` entry
    id_at: tuple[int, int] = (1, 1)  # where its `id:` value is written
    entry_at: dict[str, tuple[int, int]] = field(default_factory=dict)  # card/item id -> `id:`
    # The file holding the cheat sheet and the line before its first: where claim lines are.
    claims_in: tuple[str, int] = ("", 0)

    def __post_init__(self) -> None:
        # As LoadedSet's: a rebuilt version's parameterised items keep the snippet render rewrites.
        for item in getattr(self.topic, "items", ()):
            if item.id in self.item_code:
                variants.attach_source(item, self.item_code[item.id])


@dataclass
class LoadedLab:
    """A valid lab with where it came from and each step's resolved code (by step id): the
    starter (None: the step continues from the previous one) and the reference solution."""

    lab: Lab
    path: str
    starters: dict[str, str | None] = field(default_factory=dict)
    solutions: dict[str, str] = field(default_factory=dict)
    warnings: list[LoadError] = field(default_factory=list)  # worth a look; not errors
    id_at: tuple[int, int] = (1, 1)  # where its `id:` and `topic:` values are written
    topic_at: tuple[int, int] = (1, 1)

    def starter_for_verify(self, step_id: str) -> str:
        """The code a learner opens the step with, a continuing step's being the previous
        step's reference solution."""
        previous: str | None = None
        for step in self.lab.steps:
            code = self.starters[step.id]
            if step.id == step_id:
                return code if code is not None else (previous or "")
            previous = self.solutions[step.id]
        raise KeyError(step_id)


@dataclass
class LoadReport:
    """Everything a load found: the valid sets and every error."""

    sets: list[LoadedSet] = field(default_factory=list)
    topics: list[LoadedTopic] = field(default_factory=list)
    labs: list[LoadedLab] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)
    warnings: list[LoadError] = field(default_factory=list)  # reported; the content still loads
    files: list[str] = field(default_factory=list)
    # The course's misconceptions.yaml, when it has a valid one: entries by id.
    misconceptions: dict[str, misconceptions.Misconception] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether no file had an error."""
        return not self.errors


def challenge_files(root: Path) -> list[Path]:
    """List the challenge YAML files under a folder (or the file itself), sorted."""
    if root.is_file():
        return [root]
    return sorted(
        p
        for p in root.rglob("*")
        if p.suffix in YAML_SUFFIXES and p.is_file() and p.name != misconceptions.FILE_NAME
    )


TOPIC_FILE = "topic.yaml"  # a topic's file
LAB_FILE = "lab.yaml"  # a lab's file; every other YAML file is a challenge set


def load_path(
    root: Path,
    display_root: Path | None = None,
    live: Mapping[tuple[str, str], str] | None = None,
    files: Sequence[Path] | None = None,
    known: Callable[[LoadedSet | LoadedTopic | LoadedLab], int] | None = None,
) -> LoadReport:
    """Load every challenge set and topic file under root (or only `files` of it, in course
    order: app.challenges.course); never stop at the first error.

    `live` maps (kind, id) to the file of the version being served: where two files claim one
    id, that file keeps it and the other is refused; else the one of which `known` counts the
    most parts the proofs file holds proofs of (a copy, edited, is refused, not the file the
    proofs were made from); else the first by path."""
    report = LoadReport()
    claimed: dict[tuple[str, str], list[LoadedSet | LoadedTopic | LoadedLab]] = {}
    broken_topic = False
    for path in challenge_files(root) if files is None else files:
        shown = _display(path, display_root)
        report.files.append(shown)
        loaded: LoadedSet | LoadedTopic | LoadedLab | None
        if path.name == LAB_FILE:
            loaded, errors = load_lab_file(path, shown)
        elif path.name == TOPIC_FILE:
            loaded, errors = load_topic_file(path, shown)
            broken_topic = broken_topic or loaded is None
        else:
            loaded, errors = load_file(path, shown)
        report.errors.extend(errors)
        if loaded is not None:
            claimed.setdefault(_unit_key(loaded), []).append(loaded)
    for (kind, unit_id), claimants in claimed.items():
        keeper, why = _keeper(claimants, (live or {}).get((kind, unit_id)), known)
        for other in claimants:
            if other is not keeper:
                report.errors.append(_taken(kind, unit_id, other, keeper, why))
        if isinstance(keeper, LoadedLab):
            report.labs.append(keeper)
            report.warnings.extend(keeper.warnings)
        elif isinstance(keeper, LoadedTopic):
            report.topics.append(keeper)
        else:
            report.sets.append(keeper)
            report.warnings.extend(keeper.warnings)
    seen_ids = {loaded.challenge_set.id: loaded.path for loaded in report.sets}
    # A topic's own items are looked up under the topic's id, a set's under the set's: one
    # name for two decks would make an item's address ambiguous.
    for topic in list(report.topics):
        if topic.topic.id in seen_ids:
            where = seen_ids[topic.topic.id]
            report.errors.append(
                LoadError(
                    topic.path,
                    *topic.id_at,
                    f"topic id {topic.topic.id!r} is also the id of the "
                    f"set in {where}: give the topic another id",
                )
            )
            report.topics.remove(topic)
    if not broken_topic:  # a broken topic file may be the one named: its own errors come first
        report.errors.extend(_unknown_topics(report))
    report.errors.extend(_set_proof_ref_errors(report, broken_topic))
    report.errors.extend(_requires_errors(report.topics, broken_topic))
    report.warnings.extend(_duplicate_facts(report))
    report.errors.extend(_misconception_errors(root, display_root, report, whole=files is None))
    report.errors.sort()
    report.warnings.sort()
    return report


def _unit_key(loaded: LoadedSet | LoadedTopic | LoadedLab) -> tuple[str, str]:
    if isinstance(loaded, LoadedLab):
        return "lab", loaded.lab.id
    if isinstance(loaded, LoadedTopic):
        return "topic", loaded.topic.id
    return "set", loaded.challenge_set.id


def _keeper(
    claimants: list[LoadedSet | LoadedTopic | LoadedLab],
    live_path: str | None,
    known: Callable[[LoadedSet | LoadedTopic | LoadedLab], int] | None,
) -> tuple[LoadedSet | LoadedTopic | LoadedLab, str]:
    """The file that keeps an id, and why: the one being served, else the first the proofs
    file knows, else the first by path."""
    served = next((one for one in claimants if one.path == live_path), None)
    if served is not None:
        # Not "new": the other file may have been served before, under another version.
        return served, "holds it and is being served"
    if known is not None and len(claimants) > 1:
        counts = [known(one) for one in claimants]
        most = max(counts)
        # An unchanged copy is known as well as its original: then the order by path decides.
        if most > 0 and counts.count(most) == 1:
            proven = claimants[counts.index(most)]
            return proven, "holds it too, and the proofs file holds proofs of its content"
    return claimants[0], "holds it too, and comes first by path"


def _taken(
    kind: str,
    unit_id: str,
    other: LoadedSet | LoadedTopic | LoadedLab,
    keeper: LoadedSet | LoadedTopic | LoadedLab,
    why_kept: str,
) -> LoadError:
    """The error of a file refused because another holds its id, at its `id:`."""
    why = f"{keeper.path} {why_kept}"
    return LoadError(
        other.path,
        *other.id_at,
        f"{kind} id {unit_id!r} is already taken: {why}. This file is refused: give it another id",
    )


def _unknown_topics(report: LoadReport) -> list[LoadError]:
    """A set's or lab's `topic:` must name a topic file (by id or title), unless it says it
    starts a topic of its own: a typo would otherwise make a new public topic."""
    topics = _topics_by_name(report.topics)
    names = sorted({*(t.topic.id for t in report.topics), *(t.topic.title for t in report.topics)})
    errors: list[LoadError] = []
    named: list[LoadedSet | LoadedLab] = [*report.sets, *report.labs]
    for loaded in named:
        unit = loaded.challenge_set if isinstance(loaded, LoadedSet) else loaded.lab
        if unit.own_topic or unit.topic in topics or unit.topic.casefold() in topics:
            continue
        close = difflib.get_close_matches(unit.topic, names, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        errors.append(
            LoadError(
                loaded.path,
                *loaded.topic_at,
                f"topic {unit.topic!r} names no topic.yaml{hint} (a new topic of its own "
                "needs `own_topic: true`)",
            )
        )
    failed = {error.path for error in errors}
    report.sets = [one for one in report.sets if one.path not in failed]
    report.labs = [one for one in report.labs if one.path not in failed]
    return errors


def _read_document(path: Path, shown: str) -> tuple[CommentedMap | None, str, list[LoadError]]:
    """Read and parse one YAML file within the limits: (document, text, errors)."""
    try:
        with path.open("rb") as file:
            # One byte past the limit is enough to refuse a huge file without reading it all.
            data = file.read(limits.MAX_FILE_BYTES + 1)
        problem = limits.size_problem(max(len(data), path.stat().st_size))
        text = "" if problem else data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return None, "", [LoadError(shown, 1, 1, f"cannot read file: {error}")]
    try:
        document, problem = (None, problem) if problem else limits.load_within_limits(text)
        if problem is not None:
            return None, text, [LoadError(shown, problem.line, problem.column, problem.message)]
    except YAMLError as error:
        return None, text, [_yaml_error(shown, text, error)]
    if not isinstance(document, CommentedMap):
        return None, text, [LoadError(shown, 1, 1, "the file must be a mapping (id:, title:, …)")]
    return document, text, []


def load_file(path: Path, shown: str) -> tuple[LoadedSet | None, list[LoadError]]:
    """Parse and validate one challenge set file; return the set (if valid) and its errors."""
    document, text, errors = _read_document(path, shown)
    if document is None:
        return None, errors
    try:
        challenge_set = ChallengeSet.model_validate(_plain(document))
    except ValidationError as error:
        return None, _schema_errors(shown, document, error, ChallengeSet)
    code, errors = _resolve_snippets(path, shown, document, challenge_set, "code")
    fixed_code, fixed_errors = _resolve_snippets(path, shown, document, challenge_set, "fixed_code")
    image_errors = _external_image_errors(shown, text, document, challenge_set)
    proof_code: dict[str, str] = {}
    proof_refs: dict[str, tuple[int, int]] = {}
    fact_at: dict[str, tuple[int, int]] = {}
    for index, item in enumerate(challenge_set.items):
        if isinstance(item.proof, str):
            proof_refs[item.id] = _value_position(document, ("items", index, "proof"))
        if item.fact is not None:
            fact_at[item.id] = _value_position(document, ("items", index, "fact"))
        if isinstance(item.proof, InlineProof):
            snippet, problem = _proof_code(path, item.proof)
            if problem is not None:
                where = ("items", index, "proof", "code_file")
                image_errors.append(_at(shown, document, where, problem))
            elif snippet is not None:
                proof_code[item.id] = snippet
    image_errors += _run_checks(path, shown, document, text, challenge_set)
    for index, item in enumerate(challenge_set.items):
        snippet = getattr(item, "code_file", None) or "the code"
        found = variant_checks.item_errors(
            item, code.get(item.id), fixed_code.get(item.id), snippet
        )
        image_errors += [_at(shown, document, ("items", index, *w), m) for w, m in found]
    if errors or fixed_errors or image_errors:
        return None, errors + fixed_errors + image_errors
    warnings = [
        _at(shown, document, ("items", index, *where), f"warning: {message}")
        for index, item in enumerate(challenge_set.items)
        for where, message in claim_checks.item_warnings(item, _nproc(item))
    ]
    loaded = LoadedSet(
        challenge_set, shown, code, fixed_code, warnings, proof_code, proof_refs, fact_at,
        _value_position(document, ("id",)), _value_position(document, ("topic",)),
    )  # fmt: skip
    loaded.entry_at = {
        item.id: _value_position(document, ("items", index, "id"))
        for index, item in enumerate(challenge_set.items)
    }
    loaded.misconception_at = {
        (item.id, option.id): _value_position(
            document, ("items", index, "options", place, "misconception")
        )
        for index, item in enumerate(challenge_set.items)
        for place, option in enumerate(getattr(item, "options", []))
        if option.misconception is not None
    }
    return loaded, []


def _misconception_errors(
    root: Path, display_root: Path | None, report: LoadReport, whole: bool
) -> list[LoadError]:
    """Read the course's misconceptions.yaml into the report; every option naming an id it
    lacks, at the option's `misconception:`; and (when the whole course was loaded) every
    entry whose correction does not exist, at the field naming it."""
    path = (root if root.is_dir() else root.parent) / misconceptions.FILE_NAME
    has_file = path.is_file()
    errors: list[LoadError] = []
    if has_file:
        shown = _display(path, display_root)
        document, _text, errors = _read_document(path, shown)
        if document is not None:
            try:
                catalogue = misconceptions.Catalogue.model_validate(_plain(document))
            except ValidationError as error:
                errors = _schema_errors(shown, document, error, misconceptions.Catalogue)
            else:
                report.misconceptions = catalogue.by_id()
                if whole:
                    topics = {one.topic.id: one.topic for one in report.topics}
                    sheets = {one.topic.id: one.cheat_sheet for one in report.topics}
                    for index, name, problem in misconceptions.target_problems(
                        catalogue, topics, sheets
                    ):
                        where = ("misconceptions", index, "corrected_by", name)
                        errors.append(_at_value(shown, document, where, problem))
        if errors:  # a broken catalogue has errors of its own: its references wait for it
            return errors
    for loaded in report.sets:
        for (item_id, option_id), (line, column) in loaded.misconception_at.items():
            tagged = loaded.challenge_set.item(item_id)
            option = next(o for o in getattr(tagged, "options", []) if o.id == option_id)
            unknown = misconceptions.unknown_problem(
                option.misconception or "", report.misconceptions, has_file
            )
            if unknown is not None:
                errors.append(LoadError(loaded.path, line, column, unknown))
    return errors


def load_topic_file(path: Path, shown: str) -> tuple[LoadedTopic | None, list[LoadError]]:
    """Parse and validate one topic.yaml; return the topic (if valid) and its errors."""
    document, text, errors = _read_document(path, shown)
    if document is None:
        return None, errors
    try:
        topic = Topic.model_validate(_plain(document))
    except ValidationError as error:
        return None, _schema_errors(shown, document, error, Topic)
    errors = _external_image_errors(shown, text, document, topic)
    loaded = LoadedTopic(topic, shown, topic.cheat_sheet, id_at=_value_position(document, ("id",)))
    if topic.cheat_sheet_file is not None:
        cheat_sheet, problem = _read_beside(path, topic.cheat_sheet_file, "cheat_sheet_file")
        if problem is not None:
            errors.append(_at(shown, document, ("cheat_sheet_file",), problem))
        elif cheat_sheet is not None:
            errors += _markdown_errors(shown, cheat_sheet, 1, "cheat_sheet_file")
            loaded.cheat_sheet = cheat_sheet
            sheet_shown = str(Path(shown).parent / topic.cheat_sheet_file)
            errors += _claim_errors(loaded, sheet_shown, 0)
    elif topic.cheat_sheet is not None:
        line, _column = _value_position(document, ("cheat_sheet",))
        errors += _claim_errors(loaded, shown, line)  # a block scalar starts a line below
    errors += _resolve_topic_proofs(path, shown, document, loaded)
    errors += _resolve_lesson_code(path, shown, document, loaded)
    errors += _run_checks(path, shown, document, text, topic)
    errors += _resolve_item_code(path, shown, document, loaded)
    for index, item in enumerate(topic.items):  # a topic's own items may have params too
        snippet = getattr(item, "code_file", None) or "the code"
        found = variant_checks.item_errors(item, loaded.item_code.get(item.id), None, snippet)
        errors += [_at(shown, document, ("items", index, *w), m) for w, m in found]
    for list_name, entries in (("cards", topic.cards), ("items", topic.items)):
        for index, entry in enumerate(entries):
            loaded.entry_at[entry.id] = _value_position(document, (list_name, index, "id"))
            if entry.fact is not None:
                loaded.fact_at[entry.id] = _value_position(document, (list_name, index, "fact"))
    if topic.lesson is not None:
        for section_index, section in enumerate(topic.lesson.sections):
            for index, example in enumerate(section.examples):
                where = ("lesson", "sections", section_index, "examples", index, "id")
                loaded.lesson_at[example.id] = _value_position(document, where)
        for index, question in enumerate(topic.lesson.check):
            loaded.lesson_at[question.id] = _value_position(
                document, ("lesson", "check", index, "id")
            )
            for number, option in enumerate(question.options):  # "question/option": no slug
                loaded.lesson_at[f"{question.id}/{option.id}"] = _value_position(
                    document, ("lesson", "check", index, "options", number, "id")
                )
    loaded.requires_at = [
        _position(document, ("requires", index)) for index in range(len(topic.requires))
    ]
    if errors:
        return None, errors
    return loaded, []


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _unknown_proof(name: str, known: Sequence[str], topic: str) -> str:
    if not known:
        return f"proof {name!r}: topic {topic!r} has no `proofs:`"
    return f"proof {name!r} is not a proof of topic {topic!r}{_did_you_mean(name, known)}"


def _claim_errors(loaded: LoadedTopic, shown: str, first_line: int) -> list[LoadError]:
    """Parse the cheat sheet's claims; place each bad marker in the file that holds it."""
    assert loaded.cheat_sheet is not None
    claims, problems = cheatsheet.claims(loaded.cheat_sheet)
    loaded.claims = claims
    loaded.claims_in = (shown, first_line)
    known = [proof.id for proof in loaded.topic.proofs]
    errors = [
        LoadError(shown, first_line + problem.line, problem.column, problem.message)
        for problem in problems
    ]
    errors += [
        LoadError(
            shown,
            first_line + claim.marker_line,
            claim.marker_column,
            _unknown_proof(claim.proof, known, loaded.topic.id),
        )
        for claim in claims
        if claim.proof is not None and claim.proof not in known
    ]
    return errors


def _resolve_topic_proofs(
    path: Path, shown: str, document: CommentedMap, loaded: LoadedTopic
) -> list[LoadError]:
    """Read named and inline proofs' code files; check that every named reference exists."""
    topic = loaded.topic
    errors: list[LoadError] = []
    for index, proof in enumerate(topic.proofs):
        code, problem = _proof_code(path, proof)
        if problem is not None:
            errors.append(_at(shown, document, ("proofs", index, "code_file"), problem))
        elif code is not None:
            loaded.proof_code[proof.id] = code
    known = [proof.id for proof in topic.proofs]
    for list_name, entries in (("cards", topic.cards), ("items", topic.items)):
        for index, entry in enumerate(entries):
            where = (list_name, index, "proof")
            if isinstance(entry.proof, str) and entry.proof not in known:
                line, column = _value_position(document, where)
                message = _unknown_proof(entry.proof, known, topic.id)
                errors.append(LoadError(shown, line, column, f"{list_name}.{index}: {message}"))
            elif isinstance(entry.proof, InlineProof):
                code, problem = _proof_code(path, entry.proof)
                if problem is not None:
                    errors.append(_at(shown, document, (*where, "code_file"), problem))
                elif code is not None:
                    loaded.entry_proof_code[entry.id] = code
    return errors


def _resolve_lesson_code(
    path: Path, shown: str, document: CommentedMap, loaded: LoadedTopic
) -> list[LoadError]:
    """Read the lesson's example snippets (inline, or their code_file beside the YAML)."""
    lesson = loaded.topic.lesson
    if lesson is None:
        return []
    errors: list[LoadError] = []
    for section_index, section in enumerate(lesson.sections):
        for index, example in enumerate(section.examples):
            code, problem = _proof_code(path, example.as_proof())
            where = ("lesson", "sections", section_index, "examples", index, "code_file")
            if problem is not None:
                errors.append(_at(shown, document, where, problem))
            elif code is not None:
                loaded.lesson_code[example.id] = code
    return errors


def _resolve_item_code(
    path: Path, shown: str, document: CommentedMap, loaded: LoadedTopic
) -> list[LoadError]:
    """Read the snippet each of the topic's own items shows (inline, or its code_file beside
    the YAML), as a set's items have theirs read."""
    errors: list[LoadError] = []
    for index, item in enumerate(loaded.topic.items):
        code, code_file = getattr(item, "code", None), getattr(item, "code_file", None)
        if isinstance(code_file, str):
            code, problem = _read_beside(path, code_file, "code_file")
            if problem is not None:
                errors.append(_at(shown, document, ("items", index, "code_file"), problem))
        if isinstance(code, str):
            loaded.item_code[item.id] = code
            variants.attach_source(item, code)  # what render rewrites per variant
    return errors


def _proof_code(path: Path, proof: InlineProof) -> tuple[str | None, str | None]:
    """A proof's snippet, inline or from its code_file beside the YAML: (code, problem)."""
    if proof.code_file is None:
        return proof.code, None
    return _read_beside(path, proof.code_file, "code_file")


def _topics_by_name(topics: list[LoadedTopic]) -> dict[str, LoadedTopic]:
    """Topics by id and by title whatever its case, as a set's `topic:` names them."""
    by_name = {t.topic.id: t for t in topics}
    by_name.update({t.topic.title.casefold(): t for t in topics})
    return by_name


def _set_proof_ref_errors(report: LoadReport, broken_topic: bool) -> list[LoadError]:
    """A set item's `proof: ID` names a proof of the set's topic (by the topic's id or title)."""
    topics = _topics_by_name(report.topics)
    errors: list[LoadError] = []
    for loaded in report.sets:
        name = loaded.challenge_set.topic
        topic = topics.get(name) or topics.get(name.casefold())
        if topic is None and broken_topic:
            continue  # a broken topic file has errors of its own: the references wait for it
        known = [proof.id for proof in topic.topic.proofs] if topic else []
        for index, item in enumerate(loaded.challenge_set.items):
            if isinstance(item.proof, str) and item.proof not in known:
                line, column = loaded.proof_refs[item.id]
                message = _unknown_proof(item.proof, known, loaded.challenge_set.topic)
                if topic is None:  # the set's `topic:` names no topic file: perhaps a typo
                    names = [t.topic.id for t in report.topics]
                    message = (
                        f"proof {item.proof!r}: no topic file has the id or title {name!r}"
                        f"{plain_errors.did_you_mean(name, names)}"
                    )
                errors.append(LoadError(loaded.path, line, column, f"items.{index}: {message}"))
    return errors


def _requires_errors(topics: list[LoadedTopic], broken_topic: bool) -> list[LoadError]:
    """Each topic's `requires:` names topics that exist, with no cycle among them (an id that
    may be a broken topic file's waits for that file's own errors to be fixed)."""
    requirements = [
        prerequisites.Requirement(loaded.topic.id, required, loaded.path, line, column)
        for loaded in topics
        for required, (line, column) in zip(loaded.topic.requires, loaded.requires_at, strict=True)
    ]
    known = [loaded.topic.id for loaded in topics]
    return [
        LoadError(problem.path, problem.line, problem.column, problem.message)
        for problem in prerequisites.problems(requirements, known)
    ]


def _duplicate_facts(report: LoadReport) -> list[LoadError]:
    """Warn where one `fact:` is asked in two topics: a duplicate to merge."""
    topics = _topics_by_name(report.topics)
    places: dict[str, list[_FactPlace]] = {}
    for loaded_topic in report.topics:
        topic = loaded_topic.topic
        for entry in [*topic.cards, *topic.items]:
            if entry.fact is not None:
                line, column = loaded_topic.fact_at.get(entry.id, (1, 1))
                place = _FactPlace(topic.id, loaded_topic.path, line, column, entry.id)
                places.setdefault(entry.fact, []).append(place)
    for loaded in report.sets:
        name = loaded.challenge_set.topic
        named = topics.get(name) or topics.get(name.casefold())
        set_topic = named.topic.id if named else name
        for item in loaded.challenge_set.items:
            if item.fact is not None:
                line, column = loaded.fact_at.get(item.id, (1, 1))
                entry_id = f"{loaded.challenge_set.id}/{item.id}"
                place = _FactPlace(set_topic, loaded.path, line, column, entry_id)
                places.setdefault(item.fact, []).append(place)
    warnings = []
    for fact, found in sorted(places.items()):
        first = found[0]
        for other in found[1:]:
            if other.topic != first.topic:
                warnings.append(
                    LoadError(
                        other.path,
                        other.line,
                        other.column,
                        f"warning: fact {fact!r} of {other.entry} (topic {other.topic}) is also "
                        f"asked by {first.entry} (topic {first.topic}, {first.path}:{first.line})"
                        ": merge the duplicate",
                    )
                )
    return warnings


@dataclass(frozen=True)
class _FactPlace:
    """Where a `fact:` is asked: the topic, the file and position, the card or item."""

    topic: str
    path: str
    line: int
    column: int
    entry: str


def load_lab_file(path: Path, shown: str) -> tuple[LoadedLab | None, list[LoadError]]:
    """Parse and validate one lab.yaml; return the lab (if valid) with its code, and errors."""
    document, text, errors = _read_document(path, shown)
    if document is None:
        return None, errors
    try:
        lab = Lab.model_validate(_plain(document))
    except ValidationError as error:
        return None, _schema_errors(shown, document, error, Lab)
    errors = _external_image_errors(shown, text, document, lab)
    loaded = LoadedLab(lab, shown, id_at=_value_position(document, ("id",)))
    loaded.topic_at = _value_position(document, ("topic",))
    for index, step in enumerate(lab.steps):
        for field_name, inline, named in (
            ("starter", step.starter, step.starter_file),
            ("solution", step.solution, step.solution_file),
        ):
            code = inline
            if named is not None:
                code, problem = _read_beside(path, named, f"{field_name}_file")
                if problem is not None:
                    where = ("steps", index, f"{field_name}_file")
                    errors.append(_at(shown, document, where, problem))
                    continue
            if field_name == "starter":
                loaded.starters[step.id] = code
            elif code is not None:
                loaded.solutions[step.id] = code
    errors += _run_checks(path, shown, document, text, lab)
    if errors:
        return None, errors
    loaded.warnings = _lab_warnings(shown, document, lab)
    return loaded, []


def _nproc(item: Any) -> int:
    launch = getattr(item, "launch", None)
    return launch.nproc if launch is not None else 1


def _lab_warnings(shown: str, document: CommentedMap, lab: Lab) -> list[LoadError]:
    """A lab check's `says` is read like an option's text: it should not outrun its `expect`."""
    warnings = []
    for index, step in enumerate(lab.steps):
        for number, check in enumerate(step.checks):
            for message in claim_checks.unclaimed(check.says, check.expect, step.launch.nproc):
                says = ("steps", index, "checks", number, "says")
                warnings.append(_at(shown, document, says, f"warning: check: {message}"))
        for number, question in enumerate(step.questions):
            for where, message in claim_checks.item_warnings(question, step.launch.nproc):
                location = ("steps", index, "questions", number, *where)
                warnings.append(_at(shown, document, location, f"warning: {message}"))
    return warnings


def _read_beside(path: Path, name: str, field: str) -> tuple[str | None, str | None]:
    """Read a file named in `field`, beside the YAML file: (text, problem)."""
    target = (path.parent / name).resolve()
    if path.parent.resolve() not in target.parents:
        return None, f"{field} {name!r} must stay inside the folder of {path.name}"
    try:
        too_big = limits.size_problem(target.stat().st_size)
        if too_big is not None:
            return None, f"{field}: {too_big.message}"
        return target.read_text(encoding="utf-8"), None
    except UnicodeDecodeError as error:
        return None, f"{field} {name!r} is not UTF-8 text: {error.reason}"
    except OSError:
        return None, f"{field} {name!r} not found beside {path.name}"


def _external_image_errors(
    shown: str, text: str, document: CommentedMap, model: BaseModel
) -> list[LoadError]:
    """Report each image from another site and each note to authors in the learner-facing
    Markdown, at the text itself."""
    errors: list[LoadError] = []
    for location, markdown in content_checks.markdown_fields(model):
        search_from = _offset(text, *_value_position(document, location))
        field_path = ".".join(str(part) for part in location)
        problems = [
            (url, f"external image {url!r}: images must come from this site (a path, not a URL)")
            for url in content_checks.external_images(markdown)
        ] + [
            (phrase, f"{phrase!r} speaks to authors, not learners: say where an item came from "
             "in a YAML comment")
            for phrase in content_checks.author_notes(markdown)
        ] + [
            (phrase, f"{phrase!r} names an option by its letter or place, or an item by its "
             "place: options are shuffled for each learner and items drawn alone; name what "
             "it says instead")
            for phrase in content_checks.option_references(markdown)
        ]  # fmt: skip
        for needle, problem in problems:
            found = text.find(needle, search_from)
            if found >= 0:  # point at the text itself; else at the field's value
                search_from = found + len(needle)
            before = text[: found if found >= 0 else search_from]
            line, column = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
            errors.append(LoadError(shown, line, column, f"{field_path}: {problem}"))
    return errors


def _markdown_errors(shown: str, markdown: str, line: int, what: str) -> list[LoadError]:
    """The same checks on a Markdown file of its own (a cheat sheet), at its lines."""
    errors = []
    problems = [
        (url, f"external image {url!r}: images must come from this site (a path, not a URL)")
        for url in content_checks.external_images(markdown)
    ] + [
        (phrase, f"{phrase!r} speaks to authors, not learners: keep such notes out of it")
        for phrase in content_checks.author_notes(markdown)
    ]  # fmt: skip
    for needle, problem in problems:
        before = markdown[: max(markdown.find(needle), 0)]
        errors.append(
            LoadError(shown, line, 1, f"{what} line {before.count(chr(10)) + 1}: {problem}")
        )
    return errors


def _value_position(document: CommentedMap, location: tuple[Any, ...]) -> tuple[int, int]:
    """The 1-based position where the value at location starts (its key's, if unknown)."""
    parent: Any = document
    for part in location[:-1]:
        parent = parent[part]
    try:
        line, column = parent.lc.value(location[-1])
    except (AttributeError, KeyError, TypeError):
        return _position(document, location)
    return line + 1, column + 1


def _offset(text: str, line: int, column: int) -> int:
    """The character offset of a 1-based line and column."""
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
    return start + column - 1


def _yaml_error(shown: str, text: str, error: YAMLError) -> LoadError:
    """Place a YAML error: syntax errors carry a mark, unreadable characters an offset."""
    said = plain_errors.yaml_problem(text, error)
    if said is not None:
        return LoadError(shown, said.line, said.column, said.message)
    if isinstance(error, MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(str(part) for part in (error.context, error.problem) if part)
        return LoadError(shown, line, column, problem or str(error))
    if isinstance(error, ReaderError):
        before = text[: error.position]
        line, column = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
        return LoadError(shown, line, column, f"unacceptable character #x{error.character:04x}")
    return LoadError(shown, 1, 1, str(error))


def _resolve_snippets(
    path: Path, shown: str, document: CommentedMap, challenge_set: ChallengeSet, field: str
) -> tuple[dict[str, str], list[LoadError]]:
    """Resolve each item's `field` (inline) or `field_file` (beside the YAML) to source text."""
    code: dict[str, str] = {}
    errors: list[LoadError] = []
    file_field = f"{field}_file"
    for index, item in enumerate(challenge_set.items):
        source = getattr(item, field, None)
        code_file = getattr(item, file_field, None)
        if code_file is not None:
            source, problem = _read_beside(path, code_file, file_field)
            if problem is not None:
                errors.append(_at(shown, document, ("items", index, file_field), problem))
                continue
        if source is not None:
            code[item.id] = source
        elif field == "code" and isinstance(item, EXECUTABLE_KINDS):
            errors.append(_at(shown, document, ("items", index), "executable item has no code"))
    return code, errors


def _run_checks(
    path: Path, shown: str, document: CommentedMap, text: str, model: BaseModel
) -> list[LoadError]:
    """Ranks beyond a snippet's launch, at the rank; snippets Python cannot compile, at the
    snippet's own line (in its .py file, or in the YAML for inline code)."""
    errors = [_at(shown, document, where, message) for where, message in checks.rank_errors(model)]
    for where, source, is_file in checks.snippets(model):
        if is_file:
            code, problem = _read_beside(path, source, where[-1])
            if problem is not None or code is None:
                continue  # reported where the file is resolved
            file_shown = str(Path(shown).parent / source)
            found = checks.syntax_error(code, file_shown)
            if found is not None:
                line, column, message = found
                used = _value_position(document, where)[0]
                message += f" (the {where[-1]} of {Path(shown).name}:{used})"
                errors.append(LoadError(file_shown, line, column, message))
            continue
        found = checks.syntax_error(source, shown)
        if found is not None:
            line, column, message = found
            errors.append(LoadError(shown, *_inline_position(document, text, where, line, column),
                                    message))  # fmt: skip
    return errors


def _inline_position(
    document: CommentedMap, text: str, where: tuple[Any, ...], line: int, column: int
) -> tuple[int, int]:
    """Where line and column of an inline snippet are in the YAML file: a block scalar
    (`code: |`) starts on the next line, indented; a one-line value where it starts."""
    value_line, value_column = _value_position(document, where)
    lines = text.splitlines()
    opener = lines[value_line - 1][value_column - 1 :] if value_line <= len(lines) else ""
    if not opener.startswith(("|", ">")):  # a one-line value: past its opening quote, if any
        return value_line, value_column + column - 1 + opener.startswith(("'", '"'))
    body = value_line + line
    content = lines[body - 1] if body <= len(lines) else ""
    indent = len(content) - len(content.lstrip(" "))
    return body, indent + column


def _plain(node: Any) -> Any:
    """Turn ruamel's commented containers into plain dicts and lists for pydantic."""
    if isinstance(node, dict):
        return {str(key): _plain(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_plain(value) for value in node]
    return node


def _schema_errors(
    shown: str, document: CommentedMap, error: ValidationError, model: type[BaseModel]
) -> list[LoadError]:
    """Pydantic's errors in plain words, each at the value it is about; a `missing` field that
    an unknown field's "did you mean" already names is said once, at the misspelling."""
    details = error.errors()
    misspelt = set()
    for detail in details:
        if detail["type"] == "extra_forbidden":
            location = _keep_yaml_path(detail["loc"])
            holder = plain_errors.model_at(model, document, location)
            close = plain_errors.closest(str(location[-1]), holder.model_fields if holder else [])
            if close is not None:
                misspelt.add((location[:-1], close))
    errors = []
    for detail in details:
        location = _keep_yaml_path(detail["loc"])
        if detail["type"] == "missing" and (location[:-1], location[-1]) in misspelt:
            continue
        errors.append(_locate(shown, document, detail, model))
    references = checks.reference_errors(document)
    if references:
        errors = [e for e in errors if not checks.said_by_references(e.message)]
        errors += [_at_value(shown, document, where, message) for where, message in references]
    return errors


def _locate(shown: str, document: CommentedMap, error: Any, model: type[BaseModel]) -> LoadError:
    location = _keep_yaml_path(error["loc"])
    if error["type"] == "union_tag_invalid" and error.get("ctx", {}).get("tag") in KINDS:
        return _at(shown, document, location, _misplaced_kind(KINDS[error["ctx"]["tag"]]))
    if error["type"] == "union_tag_invalid":
        location = (*location, "kind")
    if error["type"] == "value_error":
        location = _point_at(document, location, str(error["msg"]))
    name = next((str(part) for part in reversed(location) if isinstance(part, str)), "")
    holder = plain_errors.model_at(model, document, location)
    said = plain_errors.plain(error, name, holder)
    scalar_check = error["type"] == "value_error" and _is_scalar(document, location)
    if (said.at_value or scalar_check) and location:
        return _at_value(shown, document, location, said.message)
    return _at(shown, document, location, said.message)


# A model's own check raises at the whole item or step: the fields it is about, first present
# first, so that the error points at one of them instead of the item's first line.
_POINT_AT: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("pin at most all but two", ("options",)),
    ("a key stands for no misconception", ("options",)),
    ("every option is a key", ("answer",)),
    ("a list answer needs", ("answer",)),
    ("give exactly one of code or code_file", ("code_file", "code")),
    ("give at most one of fixed_code", ("fixed_code_file",)),
    ("a source gives exactly one of url or path", ("path", "url")),
    ("give at most one of cheat_sheet", ("cheat_sheet_file",)),
    ("must be one of nproc_choices", ("nproc",)),
    ("nproc choice", ("nproc_choices",)),
    ("give exactly one of starter", ("starter_file", "continue_previous", "starter")),
    ("give exactly one of solution", ("solution_file", "solution")),
    ("the first step has no previous step", ((0, "continue_previous"),)),
)


def _point_at(document: CommentedMap, location: tuple[Any, ...], message: str) -> tuple[Any, ...]:
    """The field a model check's message is about, where the document has it."""
    for words, fields in _POINT_AT:
        if words in message:
            for name in fields:
                target = (*location, *(name if isinstance(name, tuple) else (name,)))
                if _has(document, target):
                    return target
    return location


def _is_scalar(document: CommentedMap, location: tuple[Any, ...]) -> bool:
    """Whether location holds a plain value (a check of it points at the value, not the key)."""
    node: Any = document
    for part in location:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    return not isinstance(node, dict | list)


def _has(document: CommentedMap, location: tuple[Any, ...]) -> bool:
    node: Any = document
    for part in location:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    return True


def _at_value(
    shown: str, document: CommentedMap, location: tuple[Any, ...], message: str
) -> LoadError:
    line, column = _value_position(document, location)
    return LoadError(shown, line, column, message)


def _misplaced_kind(kind: Kind) -> str:
    """Why a registered kind cannot stand where it was written."""
    if kind.is_card:
        return f"kind {kind.name!r} goes in a topic file's `cards:` list"
    if not kind.in_sets:
        return f"kind {kind.name!r} belongs in a topic file (topic.yaml), not in a timed set"
    return (
        f"kind {kind.name!r} is executable: it belongs in a challenge set, where "
        "`ranklab verify` proves its key"
    )


def _keep_yaml_path(location: Sequence[Any]) -> tuple[Any, ...]:
    """Drop the discriminator tags pydantic inserts (e.g. 'choice') so the path matches the YAML."""
    kept: list[Any] = []
    for part in location:
        if isinstance(part, str) and kept and isinstance(kept[-1], int) and part in _KIND_TAGS:
            continue
        if kept and kept[-1] == "proof" and part in ("id", "inline"):
            continue  # the tags of a `proof:`'s two forms
        kept.append(part)
    return tuple(kept)


_KIND_TAGS = frozenset(KINDS)


def _at(shown: str, document: CommentedMap, location: Iterable[Any], message: str) -> LoadError:
    line, column = _position(document, tuple(location))
    return LoadError(shown, line, column, message)


def _position(document: CommentedMap, location: tuple[Any, ...]) -> tuple[int, int]:
    """Find the 1-based position of the deepest part of location present in the document."""
    node: Any = document
    line, column = 0, 0
    for part in location:
        if isinstance(node, CommentedMap) and part in node:
            line, column = node.lc.key(part)
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and part < len(node):
            line, column = node.lc.item(part)
            node = node[part]
        else:
            if isinstance(node, (CommentedMap, CommentedSeq)) and (line, column) == (0, 0):
                line, column = node.lc.line, node.lc.col
            break
    return line + 1, column + 1


def _display(path: Path, display_root: Path | None) -> str:
    if display_root is not None:
        try:
            return str(path.resolve().relative_to(display_root.resolve()))
        except ValueError:
            pass
    return str(path)
