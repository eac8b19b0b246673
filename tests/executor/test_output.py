"""How a rank's output becomes events (executor/output.py): coalesced per rank and stream, its
streams in the order they began, the result's text exact. Real ranks writing floods are in
tests/attacks/test_event_flood.py and test_stream_switch_flood.py."""

from __future__ import annotations

from typing import Any

import pytest

from executor import output
from executor.limits import Limits, run_budget


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(output.time, "monotonic", clock)
    return clock


def collected(processes: int = 1) -> tuple[output.Output, list[dict[str, Any]]]:
    run = output.Output(processes, exception_chars=1000)
    run.budget = run_budget(processes, 10, Limits())
    sent: list[dict[str, Any]] = []
    run.send = sent.append
    return run, sent


def shown(sent: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(event["stream"], event["text"]) for event in sent]


def test_a_rank_alternating_its_streams_sends_one_event_per_stream_per_window(
    clock: Clock,
) -> None:
    run, sent = collected()
    rank = run.ranks[0]
    for _ in range(500):
        run.take(rank, "stdout", b"a")
        run.take(rank, "stderr", b"b")
        clock.now += 0.00002  # 500 switches within 20 ms
    assert sent == []
    assert run.flush_due(clock.now) == pytest.approx(100.0 + output.COALESCE_S)
    assert sent == []
    clock.now = 100.0 + output.COALESCE_S
    assert run.flush_due(clock.now) is None
    assert shown(sent) == [("stdout", "a" * 500), ("stderr", "b" * 500)]
    assert (rank.stdout(), rank.stderr()) == ("a" * 500, "b" * 500)


def test_a_rank_s_streams_are_sent_in_the_order_they_began(clock: Clock) -> None:
    run, sent = collected()
    rank = run.ranks[0]
    run.take(rank, "stdout", b"before\n")
    clock.now += 0.001
    run.take(rank, "stderr", b"Traceback\n")
    run.take(rank, "stdout", b"after\n")
    clock.now += output.COALESCE_S
    run.flush_due(clock.now)
    # Within the window, the interleaving is approximate: each stream's text comes whole.
    assert shown(sent) == [("stdout", "before\nafter\n"), ("stderr", "Traceback\n")]
    run.take(rank, "stderr", b"warning\n")
    clock.now += 0.001
    run.take(rank, "stdout", b"printed\n")
    run.finish()
    assert shown(sent)[2:] == [("stderr", "warning\n"), ("stdout", "printed\n")]
    assert (rank.stdout(), rank.stderr()) == ("before\nafter\nprinted\n", "Traceback\nwarning\n")


def test_each_stream_waits_its_own_window(clock: Clock) -> None:
    run, sent = collected()
    rank = run.ranks[0]
    run.take(rank, "stdout", b"a")
    clock.now += 0.015
    run.take(rank, "stderr", b"b")
    assert run.flush_due(clock.now) == pytest.approx(100.0 + output.COALESCE_S)
    clock.now = 100.0 + output.COALESCE_S
    assert run.flush_due(clock.now) == pytest.approx(100.015 + output.COALESCE_S)
    assert shown(sent) == [("stdout", "a")]
    clock.now = 100.015 + output.COALESCE_S
    assert run.flush_due(clock.now) is None
    assert shown(sent) == [("stdout", "a"), ("stderr", "b")]


def test_a_full_stream_is_sent_at_once_after_what_began_before_it(clock: Clock) -> None:
    run, sent = collected()
    rank = run.ranks[0]
    run.take(rank, "stdout", b"first\n")
    run.take(rank, "stderr", b"x" * output.COALESCE_BYTES)
    assert shown(sent) == [("stdout", "first\n"), ("stderr", "x" * output.COALESCE_BYTES)]


def test_past_the_first_events_a_stream_sends_one_every_slow_interval(clock: Clock) -> None:
    run, sent = collected()
    rank = run.ranks[0]
    run.events = output.EVENTS_BEFORE_SLOWDOWN
    start = clock.now
    while clock.now < start + 2:
        run.take(rank, "stdout", b"a")
        run.take(rank, "stderr", b"b")
        run.flush_due(clock.now)
        clock.now += 0.001
    # 2 s: at most one event per stream every SLOW_COALESCE_S.
    assert len(sent) <= 2 * (2 / output.SLOW_COALESCE_S), shown(sent)
