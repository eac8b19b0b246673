"""What every process forked from a warm parent knows of it: the zygote's context."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from executor import sandbox
from executor.gpus import Gpu
from executor.limits import Limits


@dataclass(frozen=True)
class ZygoteContext:
    """What every run needs to know about the warm process it was forked from."""

    trusted: bool
    plan: sandbox.SandboxPlan | None
    sandbox_error: str | None
    limits: Limits
    torch_version: str
    python_version: str
    gpus: tuple[Gpu, ...] = ()  # the host's GPUs runs may use (found by the service, gpus.py)
    reseed: bool = True
    sibling_dir: str | None = None  # where the siblings' workers listen (see siblings.py)
    siblings: int = 0
    # The pages of the warm parent a typical run writes, copied by each staged rank (prefault.py)
    hot_pages: tuple[tuple[int, int], ...] = ()


def now_iso() -> str:
    """Return the current UTC time in ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
