"""One place turns an item into a RunRequest: Run it and verify run what the item says."""

from __future__ import annotations

from app.runs.service import run_request
from tests.support.items import predict_item


def test_the_request_carries_every_launch_setting_of_the_item() -> None:
    item = predict_item(launch={"nproc": 3, "launcher": "python", "timeout_s": 7})
    request = run_request(item, "print(1)")
    assert (request.code, request.nproc, request.launcher) == ("print(1)", 3, "python")
    assert (request.timeout_s, request.backend, request.use_cache) == (7, "auto", True)


def test_verify_asks_for_its_own_limit_and_no_cache() -> None:
    request = run_request(predict_item(), "print(1)", timeout_s=30, use_cache=False)
    assert (request.timeout_s, request.use_cache, request.launcher) == (30, False, "torchrun")
