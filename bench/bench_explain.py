"""Precision and recall of explain-it concept matching on the hand-labelled answers.

Every (answer, concept) pair is one decision: the matcher says covered or not, a person said
covered or not (tests/fixtures/explain/labelled.yaml). Prints the figures the README quotes and
every disagreement, so a change to the matcher can be judged on what it gets wrong.

    make bench-explain    (or: .venv/bin/python bench/bench_explain.py)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.kinds.explain.matching import Concept, score  # noqa: E402

LABELLED = ROOT / "tests" / "fixtures" / "explain" / "labelled.yaml"


@dataclass
class Tally:
    """Counts of agreements and disagreements with the labels."""

    true_positive: int = 0
    false_positive: int = 0
    false_negative: int = 0
    true_negative: int = 0
    answers: int = 0

    @property
    def precision(self) -> float:
        found = self.true_positive + self.false_positive
        return self.true_positive / found if found else 1.0

    @property
    def recall(self) -> float:
        wanted = self.true_positive + self.false_negative
        return self.true_positive / wanted if wanted else 1.0


def evaluate(path: Path = LABELLED, report: list[str] | None = None) -> Tally:
    """Run the matcher over every labelled answer; append each disagreement to `report`."""
    tally = Tally()
    for item in YAML(typ="safe").load(path.read_text())["items"]:
        concepts = [Concept(c["name"], tuple(c["phrasings"])) for c in item["concepts"]]
        names = {concept.name for concept in concepts}
        for answer in item["answers"]:
            labelled = set(answer["covers"])
            assert labelled <= names, f"{item['id']}: unknown concept in {labelled - names}"
            tally.answers += 1
            for match in score(answer["text"], concepts):
                truth = match.concept in labelled
                if match.covered and truth:
                    tally.true_positive += 1
                elif match.covered:
                    tally.false_positive += 1
                    if report is not None:
                        report.append(f"false +  {match.concept!r} via {match.sentence!r}")
                elif truth:
                    tally.false_negative += 1
                    if report is not None:
                        report.append(f"missed   {match.concept!r} in {answer['text']!r}")
                else:
                    tally.true_negative += 1
    return tally


def main() -> None:
    """Print precision, recall and the disagreements."""
    report: list[str] = []
    tally = evaluate(report=report)
    decisions = tally.true_positive + tally.false_positive + tally.false_negative
    decisions += tally.true_negative
    print(f"answers: {tally.answers}, concept decisions: {decisions}")
    print(f"precision: {tally.precision:.2f}  ({tally.true_positive} of "
          f"{tally.true_positive + tally.false_positive} matches correct)")  # fmt: skip
    print(f"recall:    {tally.recall:.2f}  ({tally.true_positive} of "
          f"{tally.true_positive + tally.false_negative} covered concepts found)")  # fmt: skip
    for line in report:
        print(" ", line)


if __name__ == "__main__":
    main()
