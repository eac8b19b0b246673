"""The result cache: content-hash keys, LRU, on-disk copies. No torch needed."""

from __future__ import annotations

from pathlib import Path

from executor.cache import ResultCache, cache_key
from executor.contract import RunRequest, RunResult, RunStatus


def result(status: RunStatus = RunStatus.OK) -> RunResult:
    return RunResult(status=status, duration_ms=5, observed_at="2026-11-22T03:00:00.000Z")


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


def test_rejected_and_internal_errors_are_never_cached() -> None:
    cache = ResultCache(entries=4)
    cache.put("r", result(RunStatus.REJECTED))
    cache.put("i", result(RunStatus.INTERNAL_ERROR))
    assert cache.get("r") is None
    assert cache.get("i") is None


def test_the_disk_cache_survives_a_new_process(tmp_path: Path) -> None:
    ResultCache(entries=4, directory=tmp_path).put("k", result(RunStatus.TIMEOUT))
    hit = ResultCache(entries=4, directory=tmp_path).get("k")
    assert hit is not None
    assert hit.status is RunStatus.TIMEOUT
    assert hit.cached is True
