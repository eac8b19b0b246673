"""The executor's pure limit logic: no fixtures, no torch."""

from __future__ import annotations

import json
import math

import pytest

from executor.contract import RankStatus, RunRequest, RunStatus
from executor.limits import (
    MIB,
    Limits,
    LimitViolation,
    check_gpus,
    check_request,
    gpus_needed,
    max_body_bytes,
    rank_status,
    resolve_backend,
    run_budget,
    run_status,
    shm_bytes,
)

LIMITS = Limits()


def request(**changes: object) -> RunRequest:
    return RunRequest.model_validate({"code": "print(1)", "nproc": 2, **changes})


def test_a_default_request_is_within_limits() -> None:
    check_request(request(), LIMITS)


@pytest.mark.parametrize("nproc", [0, -1, LIMITS.max_nproc + 1])
def test_nproc_out_of_range_is_refused_with_the_range_in_the_message(nproc: int) -> None:
    with pytest.raises(LimitViolation) as caught:
        check_request(request(nproc=nproc), LIMITS)
    assert caught.value.status_code == 422
    assert f"between 1 and {LIMITS.max_nproc} (got {nproc})" in caught.value.message


def test_oversize_code_is_refused_as_too_large() -> None:
    with pytest.raises(LimitViolation) as caught:
        check_request(request(code="#" * (LIMITS.max_code_bytes + 1)), LIMITS)
    assert caught.value.status_code == 413
    assert "bytes" in caught.value.message


def test_code_size_counts_utf8_bytes_not_characters() -> None:
    code = "é" * (LIMITS.max_code_bytes // 2 + 1)
    with pytest.raises(LimitViolation):
        check_request(request(code=code), LIMITS)


@pytest.mark.parametrize("timeout", [0.0, 0.1, LIMITS.max_timeout_s + 1, math.nan, math.inf])
def test_a_timeout_outside_the_range_is_refused(timeout: float) -> None:
    with pytest.raises(LimitViolation) as caught:
        check_request(request(timeout_s=timeout), LIMITS)
    assert "timeout_s must be between" in caught.value.message


def test_auto_backend_is_gloo_without_a_gpu_per_rank() -> None:
    assert resolve_backend("auto", gpus=0, nproc=2) == "gloo"
    assert resolve_backend("auto", gpus=1, nproc=2) == "gloo"


def test_auto_backend_is_nccl_when_the_run_holds_a_gpu_per_rank() -> None:
    assert resolve_backend("auto", gpus=2, nproc=2) == "nccl"


def test_an_explicit_backend_is_kept() -> None:
    assert resolve_backend("nccl", gpus=0, nproc=2) == "nccl"
    assert resolve_backend("gloo", gpus=2, nproc=2) == "gloo"


def test_nccl_needs_a_gpu_per_rank_and_gloo_none() -> None:
    assert gpus_needed("nccl", nproc=3, host_gpus=8) == 3
    assert gpus_needed("gloo", nproc=3, host_gpus=8) == 0


def test_auto_takes_gpus_only_where_the_host_has_one_per_rank_free_or_not() -> None:
    assert gpus_needed("auto", nproc=2, host_gpus=2) == 2
    assert gpus_needed("auto", nproc=3, host_gpus=2) == 0  # gloo on the CPU instead
    assert gpus_needed("auto", nproc=2, host_gpus=0) == 0


def test_a_run_needing_more_gpus_than_the_host_has_is_refused_with_both_numbers() -> None:
    assert check_gpus(request(backend="nccl", nproc=2), host_gpus=4) == 2
    with pytest.raises(LimitViolation) as caught:
        check_gpus(request(backend="nccl", nproc=4), host_gpus=2)
    assert caught.value.status_code == 422
    assert caught.value.message == (
        "this run needs 4 GPUs (backend nccl: one GPU per rank); this executor has 2"
    )
    assert check_gpus(request(backend="auto", nproc=4), host_gpus=2) == 0  # auto falls to gloo


def test_a_run_holds_the_gpus_it_declares_whatever_its_backend() -> None:
    assert gpus_needed("gloo", nproc=1, host_gpus=4, declared=2) == 2  # one process, two GPUs
    assert gpus_needed("nccl", nproc=2, host_gpus=4, declared=3) == 3
    assert gpus_needed("nccl", nproc=3, host_gpus=4, declared=1) == 3  # one per rank at least
    assert check_gpus(request(backend="gloo", nproc=1, gpus=2), host_gpus=2) == 2
    with pytest.raises(LimitViolation) as caught:
        check_gpus(request(backend="gloo", nproc=1, gpus=2), host_gpus=0)
    assert caught.value.message == (
        "this run needs 2 GPUs (backend gloo: it declares 2); this executor has 0"
    )


def test_a_gpu_run_gets_at_least_the_gib_of_shm_nccl_wants() -> None:
    small = Limits(shm_bytes=64 * MIB)
    assert shm_bytes(small, gpu=True) == 1024 * MIB
    assert shm_bytes(small, gpu=False) == 64 * MIB
    assert shm_bytes(Limits(shm_bytes=2048 * MIB), gpu=True) == 2048 * MIB


def test_the_memory_budget_grows_with_the_number_of_ranks() -> None:
    assert run_budget(4, 5, LIMITS).memory_bytes > run_budget(2, 5, LIMITS).memory_bytes
    assert run_budget(4, 5, LIMITS).pids > run_budget(2, 5, LIMITS).pids


def test_an_nccl_run_is_sized_for_a_cuda_context_per_rank() -> None:
    limits = Limits(memory_bytes_base=100, memory_bytes_per_rank=10, memory_bytes_per_gpu_rank=1000)
    assert run_budget(2, 5, limits, backend="nccl").memory_bytes == 100 + 2 * 1000
    assert run_budget(2, 5, limits, backend="gloo").memory_bytes == 100 + 2 * 10
    assert run_budget(2, 5, limits).memory_bytes == 100 + 2 * 10  # gloo unless told otherwise
    # A run that declares GPUs without NCCL (one process on 2 GPUs) needs a CUDA context too.
    assert run_budget(1, 5, limits, backend="gloo", gpus=2).memory_bytes == 100 + 1 * 1000


def test_by_default_a_gpu_rank_gets_far_more_memory_than_a_cpu_rank() -> None:
    gpu, cpu = run_budget(1, 5, LIMITS, backend="nccl"), run_budget(1, 5, LIMITS, backend="gloo")
    assert gpu.memory_bytes - cpu.memory_bytes >= 3 * 1024**3  # a CUDA context does not fit 512 MiB
    assert (gpu.pids, gpu.cpu_seconds) == (cpu.pids, cpu.cpu_seconds)  # memory is what differs


def test_the_cpu_budget_outlasts_the_wall_deadline() -> None:
    assert run_budget(2, 7.5, LIMITS).cpu_seconds >= 8


def test_a_rank_is_judged_by_its_wait_status_alone() -> None:
    # The rank's own record is forgeable by its snippet (fd 3): only the kernel's word counts.
    assert rank_status(-6, timed_out=False) == (RankStatus.KILLED, -6)
    assert rank_status(3, timed_out=False) == (RankStatus.ERROR, 3)


def test_a_rank_still_running_at_the_deadline_timed_out() -> None:
    assert rank_status(None, timed_out=True) == (RankStatus.TIMEOUT, None)


def test_a_rank_killed_by_a_signal_is_killed() -> None:
    assert rank_status(-9, timed_out=False) == (RankStatus.KILLED, -9)


def test_a_rank_that_exits_is_judged_by_its_exit_code() -> None:
    assert rank_status(0, timed_out=False) == (RankStatus.OK, 0)
    assert rank_status(2, timed_out=False) == (RankStatus.ERROR, 2)


def test_all_ranks_ok_is_an_ok_run() -> None:
    assert run_status([RankStatus.OK, RankStatus.OK]) is RunStatus.OK


def test_one_failing_rank_makes_the_run_an_error() -> None:
    assert run_status([RankStatus.OK, RankStatus.ERROR]) is RunStatus.ERROR


def test_limit_events_outrank_rank_outcomes() -> None:
    ranks = [RankStatus.OK, RankStatus.KILLED]
    assert run_status(ranks, timed_out=True) is RunStatus.TIMEOUT
    assert run_status(ranks, timed_out=True, output_exceeded=True) is RunStatus.OUTPUT_LIMIT
    assert run_status(ranks, output_exceeded=True, memory_exceeded=True) is RunStatus.MEMORY_LIMIT


def test_a_lone_surrogate_in_the_code_is_refused_with_its_position() -> None:
    with pytest.raises(LimitViolation) as caught:
        check_request(request(code="print(1)  # \ud800"), LIMITS)
    assert caught.value.status_code == 422
    assert caught.value.message == (
        "code must be Unicode text that UTF-8 can encode: character 12 is a lone surrogate"
        " ('\\ud800')"
    )


def test_the_largest_code_fits_the_body_limit_even_when_every_byte_is_escaped() -> None:
    escaped = json.dumps({"code": "\x01" * LIMITS.max_code_bytes, "nproc": 8, "timeout_s": 60.0})
    assert len(escaped.encode()) <= max_body_bytes(LIMITS)
