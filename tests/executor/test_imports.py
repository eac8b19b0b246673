"""The web app imports the contract, the limits and the CLI: none of them may pull in torch; nor
may GPU discovery, which runs in the service before the zygote forks anything."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import executor.contract, executor.limits, executor.gpus
heavy = {"torch", "numpy", "fastapi", "starlette", "httpx", "uvicorn", "sqlmodel"}
assert not heavy & set(sys.modules), sorted(heavy & set(sys.modules))
import executor.cli, executor.service, executor.runner
assert "torch" not in sys.modules and "numpy" not in sys.modules
"""


def test_contract_and_limits_import_only_stdlib_and_pydantic() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
