"""The job bus end to end: real redis-server, real `ranklab agent` processes with real gloo
ranks, app-side clients in their own processes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
import redis

from app.bus_client import RedisExecutorClient
from executor import bus
from executor.contract import ExecutorBusy, OutputEvent, RunRequest, RunResult, RunStatus
from tests.bus.conftest import ROOT, Fleet, result_events
from tests.support.waiting import wait_for

pytestmark = pytest.mark.executor
RUNS = 200


def _drained(client: redis.Redis) -> bool:
    groups: Any = client.xinfo_groups(bus.runs_key("cpu"))
    group = next(found for found in groups if found["name"] == bus.GROUP)
    return group["lag"] == 0 and group["pending"] == 0


def test_two_apps_and_three_agents_complete_every_run_exactly_once(
    fleet: Fleet, db: redis.Redis
) -> None:
    half = RUNS // 2
    apps = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.bus.submitter", fleet.redis_url, str(first), str(half)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for first in (0, half)
    ]
    reports: list[dict[str, Any]] = []
    for app in apps:
        out, err = app.communicate(timeout=240)
        assert app.returncode == 0, err.decode()
        reports.extend(json.loads(line) for line in out.decode().splitlines())

    assert sorted(report["number"] for report in reports) == list(range(RUNS))
    assert len({report["run_id"] for report in reports}) == RUNS
    agents_used = set()
    for report in reports:
        number = report["number"]
        expected = {str(rank): f"run {number} rank {rank}\n" for rank in range(1 + number % 2)}
        assert report["status"] == "ok", report
        assert report["stdout"] == expected
        assert report["streamed"] == expected  # the live output is the result's, once
        finals = result_events(db, report["run_id"])
        assert len(finals) == 1, f"run {number} has {len(finals)} results"
        events: Any = db.xrange(bus.events_key(report["run_id"]))
        agents_used.add(events[0][1]["agent"])
    assert len(agents_used) == 3  # every agent took part
    assert _drained(db)  # every entry taken and acked


def test_a_run_survives_its_agent_being_killed_mid_run(fleet: Fleet, db: redis.Redis) -> None:
    client = RedisExecutorClient(fleet.redis_url)
    # Silent for 7 s once started: longer than one XREAD BLOCK of the reader (5 s).
    code = (
        "import os, time\nprint('started', os.environ['RANK'], flush=True)\n"
        "time.sleep(7)\nprint('finished', os.environ['RANK'])\n"
    )
    run_id = client.submit(RunRequest(code=code, nproc=2, backend="gloo", timeout_s=30))

    def first_output() -> str | None:
        entries: Any = db.xrange(bus.events_key(run_id))
        outputs = [fields["agent"] for _id, fields in entries if fields["kind"] == "output"]
        return outputs[0] if outputs else None

    victim = wait_for(first_output, 30, "the run to start")
    fleet.kill(victim)
    events = list(client.follow(run_id, 60))
    final = events[-1]
    assert isinstance(final, RunResult)
    assert final.status is RunStatus.OK
    assert [rank.stdout for rank in final.ranks] == ["started 0\nfinished 0\n",
                                                     "started 1\nfinished 1\n"]  # fmt: skip
    entries: Any = db.xrange(bus.events_key(run_id))
    starts = [(fields["attempt"], fields["agent"]) for _id, fields in entries
              if fields["kind"] == "start"]  # fmt: skip
    assert starts[0] == ("1", victim)
    assert starts[-1][0] == "2" and starts[-1][1] != victim  # taken over by another agent
    assert len(result_events(db, run_id)) == 1
    assert entries[-1][1]["agent"] != victim
    replacement = fleet.spawn()
    fleet.wait_ready([replacement])


def test_sigterm_lets_an_agent_finish_its_run_before_it_leaves(
    fleet: Fleet, db: redis.Redis
) -> None:
    client = RedisExecutorClient(fleet.redis_url)
    code = "import time\nprint('begun', flush=True)\ntime.sleep(2)\nprint('done')\n"
    run_id = client.submit(RunRequest(code=code, nproc=1, backend="gloo", timeout_s=30))

    def running_on() -> str | None:
        entries: Any = db.xrange(bus.events_key(run_id))
        return next((f["agent"] for _id, f in entries if f["kind"] == "output"), None)

    leaving = wait_for(running_on, 30, "the run to start")
    assert fleet.stop(leaving) == 0  # returns once the agent has exited
    final = list(client.follow(run_id, 30))[-1]
    assert isinstance(final, RunResult)
    assert final.ranks[0].stdout == "begun\ndone\n"
    entries: Any = db.xrange(bus.events_key(run_id))
    assert [f["attempt"] for _id, f in entries if f["kind"] == "start"] == ["1"]  # not re-run
    assert entries[-1][1]["agent"] == leaving  # it finished the run itself
    assert leaving not in db.hkeys(bus.agents_key("cpu"))  # and withdrew its heartbeat
    replacement = fleet.spawn()
    fleet.wait_ready([replacement])


def test_a_poison_run_is_dead_lettered_with_a_learner_facing_result(
    fleet: Fleet, db: redis.Redis
) -> None:
    stream = bus.runs_key("cpu")
    request = RunRequest(code="print('never runs')", nproc=1, backend="gloo")
    run_id = bus.new_run_id()
    # Three agents each took it and died: add it and take it in one transaction, so no live
    # agent gets it first, then let two more "agents" claim it.
    with db.pipeline(transaction=True) as pipe:
        pipe.xadd(stream, {"run_id": run_id, "request": request.model_dump_json()})
        pipe.xreadgroup(bus.GROUP, "ghost-1", {stream: ">"}, count=1)
        entry_id, taken = pipe.execute()
    assert taken[0][1][0][0] == entry_id
    for ghost in ("ghost-2", "ghost-3"):
        db.xclaim(stream, bus.GROUP, ghost, 0, [entry_id])
    unreadable = bus.new_run_id()
    db.xadd(stream, {"run_id": unreadable, "request": '{"code": 1'})

    client = RedisExecutorClient(fleet.redis_url)
    events = list(client.follow(run_id, 60))  # a live agent reclaims it after RECLAIM_AFTER_S
    assert events == [bus.set_aside_result(3)]
    assert isinstance(events[0], RunResult)
    assert events[0].message == (
        "This run failed on 3 executor hosts in a row and was set aside; "
        "try again or ask your instructor."
    )
    assert list(client.follow(unreadable, 30)) == [bus.set_aside_result(None)]
    dead: Any = db.xrange(bus.dead_key("cpu"))
    reasons = {fields["run_id"]: fields["reason"] for _id, fields in dead}
    assert reasons[run_id] == "delivered 4 times"
    assert reasons[unreadable] == "unreadable"
    wait_for(lambda: _drained(db), 30, "the poison entries to be acked")
    for ghost in ("ghost-1", "ghost-2", "ghost-3"):
        db.xgroup_delconsumer(stream, bus.GROUP, ghost)


def test_a_reader_that_reconnects_with_the_last_event_id_gets_the_rest(fleet: Fleet) -> None:
    client = RedisExecutorClient(fleet.redis_url)
    code = (
        "import time\nfor line in range(8):\n"
        "    print('line', line, flush=True)\n    time.sleep(0.15)\n"
    )
    run_id = client.submit(RunRequest(code=code, nproc=1, backend="gloo", timeout_s=30))

    async def read(after: str | None, stop_after: int | None) -> list[tuple[str, str, Any]]:
        seen: list[tuple[str, str, Any]] = []
        async for event in client.events(run_id, after):
            seen.append(event)
            if stop_after is not None and len(seen) == stop_after:
                break  # the connection drops
        return seen

    first = asyncio.run(read(None, 2))
    assert [name for _id, name, _data in first] == ["output", "output"]
    rest = asyncio.run(read(first[-1][0], None))
    ids = [event_id for event_id, _name, _data in first + rest]
    assert len(ids) == len(set(ids))  # no repeats
    assert ids == sorted(ids, key=lambda event_id: tuple(map(int, event_id.split("-"))))
    assert rest[-1][1] == "result"
    text = "".join(data["text"] for _id, name, data in first + rest if name == "output")
    assert text == "".join(f"line {line}\n" for line in range(8))  # no gaps
    assert rest[-1][2]["ranks"][0]["stdout"] == text


def test_hanging_up_on_astream_stops_the_run_on_its_agent(fleet: Fleet, db: redis.Redis) -> None:
    client = RedisExecutorClient(fleet.redis_url)
    code = "import time\nprint('waiting', flush=True)\ntime.sleep(50)\n"
    request = RunRequest(code=code, nproc=1, backend="gloo", timeout_s=60)

    async def hang_up() -> None:
        events: Any = client.astream(request)  # an async generator: it has aclose
        first = await anext(events)
        assert isinstance(first, OutputEvent)
        await events.aclose()  # what Stop (or a closed tab) does to the lab's relay

    before = set(db.scan_iter(match="ranklab:run:*:cancel"))
    asyncio.run(hang_up())
    (cancel,) = set(db.scan_iter(match="ranklab:run:*:cancel")) - before
    run_id = cancel.split(":")[2]

    def stopped() -> RunResult | None:
        raw = db.get(bus.result_key(run_id))
        return RunResult.model_validate_json(raw) if raw else None

    result = wait_for(stopped, 30, "the agent to stop the run")  # long before its 50 s sleep
    assert result.message == bus.STOPPED_MESSAGE


def test_over_the_limit_a_submit_is_refused_as_busy_with_its_position(db: redis.Redis) -> None:
    db.delete(bus.runs_key("gpu"))  # no agent serves the gpu pool here: runs stay waiting
    client = RedisExecutorClient(_url(db), queue_limit=3)
    request = RunRequest(code="print(1)", nproc=2, backend="nccl")
    for _ in range(3):
        client.submit(request)
    stats = bus.queue_stats(db, "gpu")
    assert (stats.depth, stats.pending, stats.agents) == (3, 0, 0)
    assert stats.oldest_wait_s >= 0
    with pytest.raises(ExecutorBusy) as refused:
        client.submit(request)
    assert (refused.value.position, refused.value.depth) == (4, 3)
    assert "busy" in str(refused.value)
    assert client.health("gpu") is None  # no agent: runs are unavailable, pages say so
    assert bus.queue_stats(db, "gpu").depth == 3  # the refused run was not queued
    db.delete(bus.runs_key("gpu"))


def test_backpressure_still_counts_when_redis_cannot_tell_the_depth(db: redis.Redis) -> None:
    db.delete(bus.runs_key("gpu"))
    request = RunRequest(code="print(1)", nproc=2, backend="nccl")
    for _ in range(4):
        RedisExecutorClient(_url(db), queue_limit=10).submit(request)
    entries: Any = db.xrange(bus.runs_key("gpu"))
    db.xdel(bus.runs_key("gpu"), entries[1][0])  # a hole in the waiting range: 3 wait
    groups: Any = db.xinfo_groups(bus.runs_key("gpu"))
    assert groups[0]["lag"] is None  # Redis cannot count across the hole
    with pytest.raises(ExecutorBusy) as refused:
        RedisExecutorClient(_url(db), queue_limit=3).submit(request)
    assert refused.value.depth == 3
    assert bus.queue_stats(db, "gpu").depth == 3
    RedisExecutorClient(_url(db), queue_limit=4).submit(request)  # under this limit: queued
    assert bus.queue_stats(db, "gpu").depth == 4
    db.delete(bus.runs_key("gpu"))


def _url(db: redis.Redis) -> str:
    kwargs = db.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


def test_health_reports_the_pool_s_agents_and_slots(fleet: Fleet) -> None:
    health = RedisExecutorClient(fleet.redis_url).health()
    assert health is not None
    assert health["status"] == "ok"
    assert health["sandbox"] == "trusted"  # labs refuse to run learner code on these agents
    assert health["agents"] >= 3
    assert health["slots"] >= 3
    assert str(health["torch"]).startswith("2.")


def test_the_app_uses_the_bus_when_a_queue_url_is_set(fleet: Fleet) -> None:
    from app.config import Settings
    from app.main import _executor_client

    assert isinstance(_executor_client(Settings(queue_url=fleet.redis_url)), RedisExecutorClient)
    result = _executor_client(Settings(queue_url=fleet.redis_url)).run(
        RunRequest(code="print('via the app')", nproc=1, backend="gloo")
    )
    assert result.ranks[0].stdout == "via the app\n"
