"""Times and counts as the pages write them: one format for a time, counts in words."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from app.templating import counted, when

LOS_ANGELES = ZoneInfo("America/Los_Angeles")


def test_a_time_from_the_executor_reads_as_every_page_writes_a_time():
    # The executor's observed_at is an ISO string in UTC; a page shows it in the learner's zone.
    assert when("2026-11-29T10:30:00.123Z", LOS_ANGELES) == "Sun 29 Nov 2026, 02:30 PST"
    assert when(datetime(2026, 11, 29, 10, 30, tzinfo=UTC), LOS_ANGELES) == (
        "Sun 29 Nov 2026, 02:30 PST"
    )
    assert when(datetime(2026, 11, 29, 10, 30)) == "Sun 29 Nov 2026, 10:30 UTC"  # naive: UTC


def test_a_string_that_is_no_time_is_shown_as_it_is_and_none_is_nothing():
    assert when("yesterday") == "yesterday"
    assert when(None) == ""


def test_counts_are_words_not_rank_s():
    assert counted(1, "rank") == "1 rank"
    assert counted(2, "rank") == "2 ranks"
    assert counted(0, "error") == "0 errors"
