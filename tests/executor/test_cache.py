"""The result cache: content-hash keys, LRU, on-disk copies. No torch needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from executor.cache import ResultCache, cache_key
from executor.contract import RankResult, RankStatus, RunRequest, RunResult, RunStatus


def result(status: RunStatus = RunStatus.OK, ranks: list[RankResult] | None = None) -> RunResult:
    return RunResult(
        status=status, duration_ms=5, observed_at="2026-11-22T03:00:00.000Z", ranks=ranks or []
    )


def test_the_key_changes_with_code_settings_and_torch_version() -> None:
    base = RunRequest(code="print(1)", nproc=2)
    key = cache_key(base, "2.13.0+cpu", sandboxed=True)
    assert key == cache_key(base.model_copy(), "2.13.0+cpu", sandboxed=True)
    assert key != cache_key(base.model_copy(update={"code": "print(2)"}), "2.13.0+cpu", True)
    assert key != cache_key(base.model_copy(update={"nproc": 3}), "2.13.0+cpu", True)
    assert key != cache_key(base.model_copy(update={"timeout_s": 3.0}), "2.13.0+cpu", True)
    assert key != cache_key(base, "2.14.0+cpu", sandboxed=True)
    assert key != cache_key(base, "2.13.0+cpu", sandboxed=False)


def test_the_key_ignores_whether_the_caller_wanted_a_cached_answer() -> None:
    base = RunRequest(code="print(1)", nproc=2)
    fresh = base.model_copy(update={"use_cache": False})
    assert cache_key(base, "t", True) == cache_key(fresh, "t", True)


def test_a_cached_result_says_it_is_cached_and_keeps_when_it_was_observed() -> None:
    cache = ResultCache(entries=4)
    cache.put("k", result())
    hit = cache.get("k")
    assert hit is not None
    assert hit.cached is True
    assert hit.observed_at == "2026-11-22T03:00:00.000Z"


def test_the_least_recently_used_entry_is_evicted() -> None:
    cache = ResultCache(entries=2)
    cache.put("a", result())
    cache.put("b", result())
    assert cache.get("a") is not None
    cache.put("c", result())
    assert cache.get("b") is None
    assert cache.get("a") is not None


def _ranks(*statuses: RankStatus) -> list[RankResult]:
    return [RankResult(rank=rank, status=status) for rank, status in enumerate(statuses)]


# Each of these can come from the host's load of the moment, not from the snippet (a starved
# run times out, a rank is killed, a limit is hit because others hold memory): never kept.
LOAD_DEPENDENT = {
    "timeout": result(RunStatus.TIMEOUT, _ranks(RankStatus.TIMEOUT, RankStatus.TIMEOUT)),
    "memory_limit": result(RunStatus.MEMORY_LIMIT, _ranks(RankStatus.KILLED)),
    "output_limit": result(RunStatus.OUTPUT_LIMIT, _ranks(RankStatus.OK)),
    "internal_error": result(RunStatus.INTERNAL_ERROR),
    "rejected": result(RunStatus.REJECTED),
    "a rank killed": result(RunStatus.ERROR, _ranks(RankStatus.OK, RankStatus.KILLED)),
}


@pytest.mark.parametrize("name", list(LOAD_DEPENDENT))
def test_a_result_that_load_can_change_is_never_cached(name: str, tmp_path: Path) -> None:
    cache = ResultCache(entries=4, directory=tmp_path)
    cache.put("k", LOAD_DEPENDENT[name])
    assert cache.get("k") is None
    assert ResultCache(entries=4, directory=tmp_path).get("k") is None  # nor kept on disk


@pytest.mark.parametrize("name", list(LOAD_DEPENDENT))
def test_such_a_result_kept_by_an_older_executor_is_not_served(name: str, tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text(LOAD_DEPENDENT[name].model_dump_json())
    assert ResultCache(entries=4, directory=tmp_path).get("k") is None


def test_an_error_a_rank_raised_itself_is_cached() -> None:
    cache = ResultCache(entries=4)
    cache.put("k", result(RunStatus.ERROR, _ranks(RankStatus.ERROR, RankStatus.KILLED)))
    hit = cache.get("k")
    assert hit is not None
    assert hit.status is RunStatus.ERROR


def test_the_disk_cache_survives_a_new_process(tmp_path: Path) -> None:
    ResultCache(entries=4, directory=tmp_path).put(
        "k", result(RunStatus.ERROR, _ranks(RankStatus.ERROR))
    )
    hit = ResultCache(entries=4, directory=tmp_path).get("k")
    assert hit is not None
    assert hit.status is RunStatus.ERROR
    assert hit.cached is True
