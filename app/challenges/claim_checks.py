"""Warn where an option's text says more than its outcome claims.

Verify judges an outcome on exactly what it states (app.verification.rules): a rank it does not
name, or a hang it says nothing about, cannot make it true or false. So an option whose text
says "rank 1 prints 3.0" while its outcome pins only rank 0 is judged on less than the learner
reads: a distractor may be "false" for a reason the text never gives, a key "proven" without
the part that matters. These are warnings, not errors: the text may name a rank in passing
("rank 0 broadcasts, so …"), and only the author can tell.

The reading is deliberately plain: it finds rank numbers ("rank 1", "ranks 0 and 2", "ranks
0-3"), every-rank phrases ("both ranks", "on every rank") and outcome words (hangs, deadlocks,
raises, an error, prints, exits), outside code spans, and pairs each outcome word with the
nearest rank named in its sentence, before it or else after it.

Pure: the standard library and the challenge schema.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from app.challenges.base import ChoiceBase, ItemBase, Outcome, RankExpectation

EVERY = -1  # the subject "every rank"
# An option is a line or two: a longer text is read up to here, so that no content, however
# hostile, makes validate slow.
MAX_TEXT = 4000


class Said(Enum):
    """What kind of outcome a word in the text claims, and the fields that constrain it."""

    HANGS = "whether {who} hangs (hangs:, or a rank's status:)"
    RAISES = "whether {who} raises (exception:, message_regex:, status:, exit_code:)"
    PRINTS = "what {who} prints (stdout:, stdout_regex:, stderr_regex:, differs_across_ranks:)"
    ENDS = "how {who} ends (status:, exit_code:, hangs:)"


_WORDS: list[tuple[Said, re.Pattern[str]]] = [
    (
        Said.HANGS,
        re.compile(
            r"\b(?:hang|hangs|hung|hanging|deadlock\w*|stuck|blocks? forever|waits? forever"
            r"|blocked forever|never (?:returns|finishes|completes|ends))\b",
            re.I,
        ),
    ),
    (
        Said.RAISES,
        re.compile(
            r"\b(?:raise[sd]?|raising|throws?|thrown|exceptions?|errors?|crash\w*|fails?"
            r"|failing|failed|\w+(?:Error|Exception))\b",
            re.I,
        ),
    ),
    (Said.PRINTS, re.compile(r"\b(?:prints?|printed|printing|outputs?)\b", re.I)),
    (
        Said.ENDS,
        re.compile(
            r"\b(?:exits?|exited|finish(?:es|ed)?|completes?|completed|terminates?)\b", re.I
        ),
    ),
]
# A number followed by "." or a digit is a value ("rank 0, 2.0 on rank 1"), not a rank.
_RANK_NUMBER = r"\d+(?![.\d])"
_NUMBER_LIST = rf"{_RANK_NUMBER}(?:\s*(?:,|and|or|&|/|-|–|to)\s*(?:rank\s+)?{_RANK_NUMBER})*"
_RANKS = re.compile(rf"\branks?\s*(?:=\s*)?({_NUMBER_LIST})", re.I)
_EVERY_RANK = re.compile(r"\b(?:both|all|every|each)(?:\s+of\s+the)?\s+ranks?\b|\bboth\b", re.I)
_SENTENCE_END = re.compile(r"[.;!?](?=\s|$)|\n\s*\n")


@dataclass(frozen=True)
class Mention:
    """A rank (or EVERY) named at a place in the text."""

    rank: int
    at: int


def _plain_text(text: str) -> str:
    """The text with code spans blanked out (same length, so offsets still line up): what a
    snippet's code says is not what the option claims. A scan, not a regular expression: a
    backtracking one takes seconds on a line of unclosed backticks."""
    plain = list(text)
    at = 0
    while (start := text.find("`", at)) >= 0:
        after = start
        while after < len(text) and text[after] == "`":
            after += 1
        close = text.find(text[start:after], after)
        if close < 0:
            at = after
            continue
        at = close + (after - start)
        plain[start:at] = " " * (at - start)
    return "".join(plain)


def _numbers(listed: str) -> list[int]:
    numbers = [int(n) for n in re.findall(r"\d+", listed)]
    ranged = re.fullmatch(r"\s*(\d+)\s*(?:-|–|to)\s*(\d+)\s*", listed)
    if ranged and int(ranged.group(1)) < int(ranged.group(2)) <= 64:
        return list(range(int(ranged.group(1)), int(ranged.group(2)) + 1))
    return numbers


def _mentions(text: str) -> list[Mention]:
    found = [
        Mention(rank, match.start())
        for match in _RANKS.finditer(text)
        for rank in _numbers(match.group(1))
    ]
    found += [Mention(EVERY, match.start()) for match in _EVERY_RANK.finditer(text)]
    return sorted(found, key=lambda mention: mention.at)


@dataclass(frozen=True)
class Reading:
    """A text read once: its sentence breaks and its rank mentions, for look-ups by offset
    (bisection keeps a long hostile text linear-ish, not words × mentions)."""

    length: int
    break_starts: list[int]
    break_ends: list[int]
    mentions: list[Mention]
    positions: list[int]  # where each mention is, for bisection

    @classmethod
    def of(cls, plain: str, nproc: int) -> Reading:
        """Read a plain text (code spans blanked) of a run of nproc ranks."""
        breaks = list(_SENTENCE_END.finditer(plain))
        mentions = [mention for mention in _mentions(plain) if mention.rank < max(nproc, 1)]
        starts, ends = [b.start() for b in breaks], [b.end() for b in breaks]
        return cls(len(plain), starts, ends, mentions, [mention.at for mention in mentions])

    def subject(self, at: int) -> list[int]:
        """The rank(s) an outcome word at `at` is said of: the nearest named before it in its
        sentence (with the ranks listed together), else the nearest after it; none: the run."""
        index = bisect.bisect_right(self.break_ends, at)
        start = self.break_ends[index - 1] if index else 0
        end = self.break_starts[index] if index < len(self.break_starts) else self.length
        positions = self.positions
        before = bisect.bisect_left(positions, at)
        if before and positions[before - 1] >= start:
            nearest = positions[before - 1]
        else:
            after = bisect.bisect_right(positions, at)
            if after == len(positions) or positions[after] >= end:
                return []
            nearest = positions[after]
        first = bisect.bisect_left(positions, nearest)
        last = bisect.bisect_right(positions, nearest)
        return [mention.rank for mention in self.mentions[first:last]]


def _expectations(outcome: Outcome, rank: int) -> list[RankExpectation]:
    return [claim for key, claim in outcome.ranks.items() if key in ("all", str(rank))]


def _constrains(said: Said, outcome: Outcome, claims: list[RankExpectation]) -> bool:
    run_hangs = outcome.hangs is True
    for claim in claims:
        status = claim.implied_status(run_hangs)
        if said is Said.PRINTS and (
            claim.stdout is not None
            or claim.stdout_regex is not None
            or claim.stderr_regex is not None
            or claim.differs_across_ranks is not None
            or claim.varies_between_runs is not None
        ):
            return True
        if said is Said.RAISES and (
            status is not None or claim.exception is not None or claim.exit_code is not None
        ):
            return True
        if said in (Said.HANGS, Said.ENDS) and (status is not None or claim.exit_code is not None):
            return True
    return False


def _names_rank(outcome: Outcome, rank: int, nproc: int) -> bool:
    compares = any(claim.differs_across_ranks is not None for claim in outcome.ranks.values())
    if "all" in outcome.ranks or compares:  # a comparison with every other rank names them
        return True
    if rank == EVERY:
        return all(str(number) in outcome.ranks for number in range(nproc))
    return str(rank) in outcome.ranks


def _said_of(said: Said, outcome: Outcome, ranks: list[int], nproc: int) -> bool:
    if not ranks:  # said of the run: a run-level claim, or one about any rank, covers it
        if said in (Said.HANGS, Said.ENDS) and outcome.hangs is not None:
            return True
        return _constrains(said, outcome, list(outcome.ranks.values()))
    for rank in ranks:
        numbers = [rank] if rank != EVERY else list(range(nproc))
        if not all(_constrains(said, outcome, _expectations(outcome, n)) for n in numbers):
            return False
    return True


def _describe(ranks: list[int]) -> str:
    if not ranks:
        return "the run"
    if ranks == [EVERY]:
        return "every rank"
    return "rank " + ", ".join(str(rank) for rank in ranks if rank != EVERY)


def unclaimed(text: str, outcome: Outcome, nproc: int) -> Iterator[str]:
    """Yield each rank or outcome the text names that the outcome does not constrain."""
    plain = _plain_text(text[:MAX_TEXT])
    reading = Reading.of(plain, nproc)
    reported: set[str] = set()
    for mention in reading.mentions:
        if not _names_rank(outcome, mention.rank, nproc):
            what = _describe([mention.rank])
            message = f"the text names {what}, but the outcome says nothing about {what}"
            if mention.rank == EVERY:
                claimed = ", ".join(sorted(outcome.ranks)) or "none"
                message = (
                    f"the text names every rank, but the outcome claims only rank(s) {claimed} "
                    "(give all, or each rank)"
                )
            if message not in reported:
                reported.add(message)
                yield message
    for said, pattern in _WORDS:
        for match in pattern.finditer(plain):
            ranks = reading.subject(match.start())
            named = [rank for rank in ranks if _names_rank(outcome, rank, nproc)]
            if ranks and not named:
                continue  # already reported: the outcome says nothing about those ranks
            if _said_of(said, outcome, named, nproc):
                continue
            who = _describe(named)
            message = (
                f"the text says {match.group(0)!r} of {who}, but the outcome does not "
                f"constrain {said.value.format(who=who)}"
            )
            if message not in reported:
                reported.add(message)
                yield message


def item_warnings(item: ItemBase, nproc: int) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Yield (path within the item, message) for each option whose text outruns its outcome."""
    if not isinstance(item, ChoiceBase):
        return
    for index, option in enumerate(item.options):
        if option.outcome is not None:
            for message in unclaimed(option.text, option.outcome, nproc):
                yield ("options", index, "text"), f"option {option.id}: {message}"
