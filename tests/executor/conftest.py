"""The executor fixtures (`executor`, `sandboxed`, `secret_dir`) live in tests/conftest.py, shared
with tests/parity; `CANARY` and `run` live in tests/support/executor.py and are re-exported here
for modules that still import them from this one."""

from __future__ import annotations

from tests.support.executor import CANARY, run

__all__ = ["CANARY", "run"]
