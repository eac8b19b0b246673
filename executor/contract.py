"""The executor contract: request and result models shared by the CLI, the service and clients.

Pure pydantic; the web app imports this module, so it must never import torch or fastapi.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Backend = Literal["auto", "gloo", "nccl"]
Launcher = Literal["torchrun", "python"]


class ExecutorUnavailable(RuntimeError):
    """The executor cannot run this now: unreachable, starting or restarting its warm pool,
    busy, or refusing the request. The service raises it inside, the app's client raises it
    for every way a request can fail; pages then say runs are unavailable."""


class ExecutorBusy(ExecutorUnavailable):
    """Every slot is taken and the queue is full: the run may be tried again shortly.

    `depth` is how many runs wait (when known) and `position` where this one would have stood."""

    def __init__(
        self, message: str, *, position: int | None = None, depth: int | None = None
    ) -> None:
        super().__init__(message)
        self.position = position
        self.depth = depth


class RunStatus(StrEnum):
    """How a whole run ended."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    REJECTED = "rejected"
    INTERNAL_ERROR = "internal_error"


class RankStatus(StrEnum):
    """How one rank ended."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    KILLED = "killed"


# The longest delay a request may ask a rank to wait (rank_delays_s).
MAX_RANK_DELAY_S = 2.0


class RunRequest(BaseModel):
    """A snippet and how to launch it; ranges are checked by `executor.limits`."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="Python source run by every rank as its __main__.")
    nproc: int = Field(default=2, description="Number of ranks (torchrun --nproc_per_node).")
    backend: Backend = Field(
        default="auto", description="auto = nccl when there are nproc CUDA devices, else gloo."
    )
    timeout_s: float = Field(default=10.0, description="Wall-clock limit for the whole run.")
    launcher: Launcher = Field(
        default="torchrun",
        description="torchrun: nproc ranks with torchrun's environment. python: one process run "
        "as `python snippet.py` would be (no torchrun variables); its own children (mp.spawn) "
        "are the ranks, and nproc sizes the memory and process budget for them.",
    )
    gpus: int = Field(
        default=0,
        ge=0,
        description="GPUs the run needs whatever its backend (a single process on several GPUs, "
        "a CUDA collective on gloo); nccl needs one per rank anyway. A run needing any GPU goes "
        "to the GPU pool on the job bus.",
    )
    use_cache: bool = Field(
        default=True, description="Serve a cached observation if one exists (verify sets False)."
    )
    store_result: bool = Field(
        default=True,
        description="Keep a cacheable result in the shared result cache, for everyone who runs "
        "the same code afterwards. Lab runs set False: a learner's own code, run uncached, must "
        "not decide what others are served; a cache-asking run or verify writes it.",
    )
    rank_delays_s: list[Annotated[float, Field(ge=0.0, le=MAX_RANK_DELAY_S)]] = Field(
        default_factory=list,
        max_length=64,
        description="Perturbs scheduling (verify sets it; empty: none): rank r waits "
        "rank_delays_s[r] seconds before it runs the snippet and again before its first write "
        "to stdout, so that a claim holding only by a lucky order of the ranks shows false.",
    )
    stop_when_stuck: bool = Field(
        default=False,
        description="End the run before its limit, as a time-out, once every rank still "
        "running is proven stuck: blocked throughout in a call that waits for another rank, "
        "with no CPU progress (verify sets it for a claim that the run hangs; see "
        "executor/hangstop.py for the evidence and when the executor declines to look).",
    )


class ExceptionInfo(BaseModel):
    """The uncaught exception a rank's snippet raised."""

    type: str = Field(description="Exception class name, e.g. RuntimeError.")
    message: str = Field(description="str() of the exception.")
    module: str | None = Field(default=None, description="Module defining the class.")
    bases: list[str] = Field(
        default_factory=list,
        description="Names of its base classes, nearest first (DistBackendError → "
        "RuntimeError, Exception, BaseException), so a key naming a base class matches.",
    )

    def is_a(self, name: str) -> bool:
        """Whether the exception is of class `name` (short or module-qualified) or inherits it."""
        qualified = f"{self.module}.{self.type}" if self.module else self.type
        return name in (self.type, qualified) or name in self.bases


class StuckAt(BaseModel):
    """Where a rank still running at the time limit was, from its stack dumped just before the
    kill. Detail for people (and for telling a deadlock from slowness), never a status: the dump
    comes from a process running the snippet, so any field may be missing (None)."""

    line: int | None = Field(
        default=None, description="The snippet's line (1 = its first) the rank was executing."
    )
    call: str | None = Field(
        default=None, description="The call it was waiting in, e.g. dist.all_reduce, time.sleep."
    )
    distributed: bool = Field(
        default=False, description="That call is a torch.distributed function (its stack says so)."
    )
    cpu_ms: int | None = Field(
        default=None, description="CPU time the rank used over the sample window before the kill."
    )
    sample_ms: int | None = Field(default=None, description="Length of that sample window.")

    def describe(self) -> str:
        """ "line 12, `dist.all_reduce`", for people; "unknown place" when the dump said nothing."""
        parts = [f"line {self.line}"] if self.line is not None else []
        if self.call:
            parts.append(f"`{self.call}`")
        return ", ".join(parts) or "unknown place"


class RankResult(BaseModel):
    """What one rank did."""

    rank: int
    status: RankStatus
    exit_code: int | None = Field(
        default=None,
        description="Process exit code; -N when killed by signal N; None if never ended.",
    )
    stdout: str = ""
    stderr: str = ""
    truncated: bool = Field(default=False, description="Output was cut at the output limit.")
    exception: ExceptionInfo | None = None
    unseeded_random: bool = Field(
        default=False,
        description="The rank drew from a random generator it never seeded: its output may "
        "vary between runs even when a few runs happened to agree.",
    )
    stuck: StuckAt | None = Field(
        default=None, description="Where the rank was when the time limit killed it (timeouts)."
    )


class Environment(BaseModel):
    """Where a result was observed."""

    torch: str
    backend: str
    device: str
    nproc: int
    python: str
    launcher: str = "torchrun"


class RunResult(BaseModel):
    """The outcome of one run: a failing snippet is data, never an HTTP error."""

    status: RunStatus
    duration_ms: int
    ranks: list[RankResult] = Field(default_factory=list)
    environment: Environment | None = None
    message: str | None = Field(
        default=None, description="Why a run was rejected or failed inside the executor."
    )
    observed_at: str | None = Field(
        default=None, description="ISO 8601 UTC time at which this result was observed."
    )
    cached: bool = Field(default=False, description="Served from the result cache.")
    stopped_when_stuck: bool = Field(
        default=False,
        description="A time-out called before the limit: the request asked for it "
        "(stop_when_stuck) and every rank still running was proven stuck.",
    )


class OutputEvent(BaseModel):
    """A chunk of output from one rank's stream, streamed as it arrives, coalesced (at most one
    per stream every 20 ms or 4 KiB): a rank's stdout and stderr are not interleaved as written
    within that window. The RunResult holds each stream exact."""

    rank: int
    stream: Literal["stdout", "stderr"]
    text: str
