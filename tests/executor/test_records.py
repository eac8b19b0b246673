"""A rank's fd-3 record is untrusted: checked field by field, capped, one line, or refused."""

from __future__ import annotations

import json

import pytest

from executor.records import RankRecord, RecordError, parse, record_limit

CHARS = 2000
HONEST = {
    "rank": 1,
    "exit_code": 1,
    "exception": {"type": "ValueError", "module": "builtins", "bases": ["Exception"],
                  "message": "bad"},
    "unseeded_random": True,
}  # fmt: skip


def line(record: object) -> bytes:
    return (json.dumps(record) + "\n").encode()


def test_an_honest_record_gives_its_exception_and_random_flag() -> None:
    record = parse(line(HONEST), 1, CHARS, overflowed=False)
    assert record == RankRecord(HONEST["exception"], True)  # type: ignore[arg-type]


def test_no_record_is_no_detail() -> None:
    assert parse(b"", 0, CHARS, overflowed=False) is None


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (line(HONEST) + line(HONEST), "exactly one line"),  # a forged record, then the real one
        (line(HONEST)[:-1], "exactly one line"),
        (b"{not json\n", "not JSON"),
        (line([1]), "not a record"),
        (line({**HONEST, "padding": "x"}), "not a record"),
        (line({**HONEST, "rank": 0}), "names rank 0"),
        (line({**HONEST, "unseeded_random": "yes"}), "not a boolean"),
        (line({**HONEST, "exception": "not an object"}), "malformed exception"),
        (line({**HONEST, "exception": {"type": 1, "message": "m"}}), "malformed exception"),
        (line({**HONEST, "exception": {"type": "E", "message": "m", "x": 1}}), "unknown fields"),
        (line({**HONEST, "exception": {"type": "E", "message": "m" * (CHARS + 1)}}), "over"),
    ],
)
def test_a_record_the_rank_would_not_write_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(RecordError, match=why):
        parse(data, 1, CHARS, overflowed=False)


def test_a_record_past_the_cap_is_refused_whatever_was_kept() -> None:
    with pytest.raises(RecordError, match=f"more than {record_limit(CHARS)} bytes"):
        parse(b"", 1, CHARS, overflowed=True)


def test_the_cap_leaves_room_for_the_longest_honest_message() -> None:
    escaped = {**HONEST, "exception": {**HONEST["exception"], "message": "\x01" * CHARS}}  # type: ignore[dict-item]
    assert len(line(escaped)) <= record_limit(CHARS)
