"""Precision and recall of the explain-it verdicts on the labelled corpus of learner answers.

Every (answer, concept) pair is one decision: the scorer gives credited, opposite, unsure or
missing; the corpus (tests/fixtures/explain_corpus.yaml) says what a careful reader concluded:
credited, opposite or missing. Scored with the concepts and phrasings the course ships
(challenges/*/topic.yaml). Prints one table for the items used while tuning, one for the
held-out items, one for all, and every wrong verdict, so a change can be judged on what it
gets wrong.

    make bench-explain    (or: .venv/bin/python bench/bench_explain.py [--all-errors])
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.kinds.explain.matching import Concept, Verdict, score  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "explain_corpus.yaml"
CHALLENGES = ROOT / "challenges"
TRUTHS = (Verdict.CREDITED, Verdict.OPPOSITE, Verdict.MISSING)


@dataclass
class Tally:
    """Decisions counted by (what the reader concluded, what the scorer said)."""

    answers: int = 0
    cells: Counter[tuple[Verdict, Verdict]] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    @property
    def decisions(self) -> int:
        return sum(self.cells.values())

    def given(self, verdict: Verdict) -> int:
        """How often the scorer gave this verdict."""
        return sum(n for (_, said), n in self.cells.items() if said is verdict)

    def truly(self, verdict: Verdict) -> int:
        """How often the reader concluded this verdict."""
        return sum(n for (truth, _), n in self.cells.items() if truth is verdict)

    def wrong(self, verdict: Verdict) -> int:
        """How often the scorer gave this verdict where the reader concluded another."""
        return self.given(verdict) - self.cells[(verdict, verdict)]

    def precision(self, verdict: Verdict) -> float:
        given = self.given(verdict)
        return self.cells[(verdict, verdict)] / given if given else 1.0

    def recall(self, verdict: Verdict) -> float:
        truly = self.truly(verdict)
        return self.cells[(verdict, verdict)] / truly if truly else 1.0

    def rate(self, verdict: Verdict) -> float:
        """Wrong verdicts of this kind per answer of the corpus."""
        return self.wrong(verdict) / self.answers if self.answers else 0.0

    def table(self) -> str:
        """A Markdown table: one row per verdict."""
        rows = [
            f"{self.answers} answers, {self.decisions} concept decisions",
            "",
            "| verdict | given | right | precision | reader's count | recall |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for verdict in TRUTHS:
            right = self.cells[(verdict, verdict)]
            rows.append(
                f"| {verdict} | {self.given(verdict)} | {right} | "
                f"{self.precision(verdict):.2f} | {self.truly(verdict)} | "
                f"{self.recall(verdict):.2f} |"
            )
        unsure = ", ".join(f"{self.cells[(truth, Verdict.UNSURE)]} {truth}" for truth in TRUTHS)
        rows.append(f"| unsure | {self.given(Verdict.UNSURE)} | — | — | — | — ({unsure}) |")
        rows += [
            "",
            f"wrong credit: {self.wrong(Verdict.CREDITED)} "
            f"({self.rate(Verdict.CREDITED):.1%} of answers); wrong opposite: "
            f"{self.wrong(Verdict.OPPOSITE)} ({self.rate(Verdict.OPPOSITE):.1%} of answers)",
        ]
        return "\n".join(rows)


def shipped_concepts(root: Path = CHALLENGES) -> dict[str, list[Concept]]:
    """The concepts of every explain item the course ships, by item id."""
    items: dict[str, list[Concept]] = {}
    for path in sorted(root.glob("*/topic.yaml")):
        for item in YAML(typ="safe").load(path.read_text()).get("items", []):
            if item.get("kind") == "explain":
                items[item["id"]] = [
                    Concept(c["name"], tuple(c["phrasings"])) for c in item["concepts"]
                ]
    return items


def evaluate(path: Path = CORPUS, held_out: bool | None = None) -> Tally:
    """Score the corpus (only the held-out items, only the others, or all: None)."""
    shipped = shipped_concepts()
    tally = Tally()
    for entry in YAML(typ="safe").load(path.read_text())["items"]:
        if held_out is not None and bool(entry.get("held_out")) != held_out:
            continue
        concepts = shipped[entry["item"]]
        for answer in entry["answers"]:
            tally.answers += 1
            says, denies = set(answer.get("says", [])), set(answer.get("denies", []))
            for number, match in enumerate(score(answer["text"], concepts), start=1):
                truth = (
                    Verdict.CREDITED
                    if number in says
                    else Verdict.OPPOSITE
                    if number in denies
                    else Verdict.MISSING
                )
                tally.cells[(truth, match.verdict)] += 1
                if match.verdict is not truth and match.verdict is not Verdict.UNSURE:
                    tally.errors.append(
                        f"{entry['item']} #{number} ({answer['style']}): said {match.verdict}, "
                        f"reader {truth}: {answer['text']!r} via {match.phrasing!r}"
                    )
    return tally


def main() -> None:
    """Print the tables, and the wrong verdicts on the items used for tuning."""
    tuning, held, every = evaluate(held_out=False), evaluate(held_out=True), evaluate()
    print("## Tuning items\n\n" + tuning.table())
    print("\n## Held-out items\n\n" + held.table())
    print("\n## All\n\n" + every.table())
    shown = every.errors if "--all-errors" in sys.argv else tuning.errors
    for line in shown:
        print(" ", line)


if __name__ == "__main__":
    main()
