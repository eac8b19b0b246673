"""The warm parent's list of modules to import: with `warm_compile`, what torch.compile loads."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.executor  # a fork of a torch process runs a DDP and a compile step

# Run in a fresh interpreter: the list is what a fork of a torch-only parent newly imports.
FIND = """
import json, sys
from executor import zygote
zygote._import_torch()
print(json.dumps(zygote._modules_used_by(zygote._warmup_snippet({"warm_compile": %s}))))
"""
# Modules only a torch.compile call loads: the tracer's graph, AOTAutograd, inductor's entry.
COMPILE_ONLY = {
    "torch._dynamo.backends.common",
    "torch._functorch._aot_autograd.graph_capture",
    "torch._inductor.decomposition",
}


def _modules(warm_compile: bool) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", FIND % warm_compile], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_warm_compile_adds_what_torch_compile_imports_to_the_warm_list() -> None:
    plain, compiling = _modules(False), _modules(True)
    assert not COMPILE_ONLY & plain
    assert compiling >= COMPILE_ONLY
    assert plain <= compiling  # the DDP step's modules stay warm
