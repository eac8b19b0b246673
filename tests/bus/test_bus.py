"""The pure parts of the job bus: routing, event encoding, the follower, heartbeats, busy."""

from __future__ import annotations

import json

import pytest

from executor import bus
from executor.contract import ExecutorBusy, ExecutorUnavailable, RunRequest, RunStatus


def _event(number: int, attempt: int, kind: bus.EventKind = "output") -> bus.BusEvent:
    return bus.BusEvent(f"{number}-0", attempt, kind, {}, "agent-1")


def test_nccl_runs_go_to_the_gpu_pool_and_everything_else_to_cpu() -> None:
    assert bus.pool_for(RunRequest(code="", backend="nccl")) == "gpu"
    assert bus.pool_for(RunRequest(code="", backend="gloo")) == "cpu"
    assert bus.pool_for(RunRequest(code="", backend="auto")) == "cpu"
    assert bus.pool_for(RunRequest(code="", backend="gloo", gpus=1)) == "gpu"  # declares a GPU


def test_run_ids_are_distinct_and_long_enough_to_be_unguessable() -> None:
    ids = {bus.new_run_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(run_id) == 32 for run_id in ids)


def test_an_event_survives_its_stream_encoding() -> None:
    fields = bus.encode_event(2, "output", {"rank": 1, "stream": "stdout", "text": "hi"}, "a")
    event = bus.decode_event("5-1", fields)
    assert event == bus.BusEvent("5-1", 2, "output", {"rank": 1, "stream": "stdout",
                                                       "text": "hi"}, "a")  # fmt: skip


def test_an_unknown_event_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown event kind"):
        bus.decode_event("1-0", {"attempt": "1", "kind": "gossip", "data": "{}"})


def test_the_follower_shows_one_attempt_then_restarts_for_a_newer_one() -> None:
    follower = bus.Follower()
    seen = [
        follower.take(event)
        for event in (
            _event(1, 1, "start"),
            _event(2, 1),
            _event(3, 2, "start"),  # the first agent died: a second attempt begins
            _event(4, 1),  # the first agent was only stalled: its late output is hidden
            _event(5, 2),
            _event(6, 1, "result"),  # any result ends the run: the result key is read
        )
    ]
    assert seen == ["skip", "show", "restart", "skip", "show", "result"]
    assert follower.last_id == "6-0"


def test_a_follower_that_joins_late_shows_the_newest_attempt_without_a_restart() -> None:
    follower = bus.Follower()
    assert follower.take(_event(7, 2)) == "show"
    assert follower.take(_event(8, 1)) == "skip"


def test_only_fresh_well_formed_heartbeats_count_as_live_agents() -> None:
    now = 1000.0
    beats = {
        "fresh": json.dumps({"slots": 2, "seen": now - 1}),
        "stale": json.dumps({"slots": 2, "seen": now - bus.AGENT_STALE_S - 1}),
        "garbage": "not json",
        "list": "[1, 2]",
    }
    assert list(bus.live_agents(beats, now)) == ["fresh"]


def test_busy_says_where_the_run_would_stand_and_is_an_executor_busy() -> None:
    error = bus.busy_error("cpu", 12)
    assert isinstance(error, ExecutorBusy)
    assert isinstance(error, ExecutorUnavailable)  # pages already say "unavailable" for it
    assert (error.position, error.depth) == (13, 12)
    assert "busy" in str(error)
    assert "number 13" in str(error)


def test_a_set_aside_run_tells_the_learner_what_happened() -> None:
    result = bus.set_aside_result(3)
    assert result.status is RunStatus.INTERNAL_ERROR
    assert result.message is not None
    assert "failed on 3 executor hosts in a row" in result.message
    assert "could not be read" in (bus.set_aside_result(None).message or "")


def test_a_queued_run_leaves_out_default_fields_so_older_agents_still_read_it() -> None:
    """A field added to the contract (gpus) must not make an agent of the previous release,
    which forbids unknown fields, set every run aside as unreadable during a rolling upgrade."""
    plain = RunRequest(code="print(1)", nproc=2, backend="gloo")
    sent = json.loads(bus._entry("r1", plain, None)["request"])
    assert "gpus" not in sent and RunRequest.model_validate(sent) == plain
    declared = RunRequest(code="print(1)", nproc=1, gpus=2)
    assert RunRequest.model_validate_json(bus._entry("r2", declared, None)["request"]) == declared
