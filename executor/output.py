"""What the ranks write, as the slot worker reads it: capped, decoded, kept for the result, and
streamed as coalesced events.

A rank that prints a few bytes at a time would otherwise make an event of every read (a lab run
made ~49k events, 4 MB of SSE): events are coalesced per rank and stream, one at most every
COALESCE_S or COALESCE_BYTES, whichever comes first; past EVENTS_BEFORE_SLOWDOWN events a run's
ranks send at most one every SLOW_COALESCE_S. A rank's streams are sent in the order their
pending text began (print, then a traceback: stdout, then stderr), but what a rank wrote to
stdout and stderr within one such window is not interleaved as written: each stream's text comes
whole, in one event. Sending what was pending at each switch between the streams kept that
interleaving, and let a rank that alternated them make an event of every write (4 ranks, 9 s:
~32k events, 2 MB of SSE). The result always carries the whole output, exact, per stream.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from executor import records, stacks
from executor.limits import RunBudget

Send = Callable[[dict[str, Any]], None]
COALESCE_S = 0.02
COALESCE_BYTES = 4096
EVENTS_BEFORE_SLOWDOWN = 1000
SLOW_COALESCE_S = 0.5


@dataclass
class Pending:
    """One stream's text that waits to be sent, since its first character came."""

    since: float
    parts: list[str] = field(default_factory=list)
    size: int = 0


@dataclass
class RankOutput:
    """What one rank wrote: its text by stream, its record, its stack dump, and what waits to be
    sent."""

    rank: int
    text: dict[str, list[str]] = field(default_factory=lambda: {"stdout": [], "stderr": []})
    decoders: dict[str, Any] = field(default_factory=dict)
    record: bytes = b""
    record_overflowed: bool = False
    stack: bytes = b""  # its stack dump, kept only once asked for (see Output.capturing)
    bytes_seen: int = 0
    truncated: bool = False
    # What waits to be sent, by stream, in the order each stream's pending text began.
    pending: dict[str, Pending] = field(default_factory=dict)

    def stdout(self) -> str:
        """Everything the rank printed."""
        return "".join(self.text["stdout"])

    def stderr(self) -> str:
        """Everything the rank wrote to stderr."""
        return "".join(self.text["stderr"])


class Output:
    """The run's output as the slot worker collects it."""

    def __init__(self, processes: int, exception_chars: int) -> None:
        self.ranks = [RankOutput(rank) for rank in range(processes)]
        self.exception_chars = exception_chars
        self.budget: RunBudget | None = None
        self.total_bytes = 0
        self.exceeded = False  # the output cap was hit
        self.capturing = False  # stack dumps are wanted now
        self.stack_at = 0.0  # when stack dump bytes last came
        self.events = 0
        self.send: Send = lambda event: None
        self.orphaned = False  # the client went away: nobody reads the events

    def take(self, rank: RankOutput, stream: str, data: bytes) -> None:
        """Take bytes a rank wrote on one of its pipes."""
        if stream == "stack":
            # Drained always (a blocked writer would hang until the deadline), kept only from
            # the request on and capped: what the snippet wrote there before is dropped.
            if self.capturing:
                rank.stack = (rank.stack + data)[: stacks.DUMP_LIMIT_BYTES]
                self.stack_at = time.monotonic()
            return
        if stream == "result":
            # Kept apart from the output and capped: the snippet can write here too. Past the
            # cap the pipe is still drained (a blocked writer would hang until the deadline).
            limit = records.record_limit(self.exception_chars)
            if rank.record_overflowed or len(rank.record) + len(data) > limit:
                rank.record, rank.record_overflowed = b"", True
            else:
                rank.record += data
            return
        assert self.budget is not None
        room = min(
            self.budget.output_bytes_per_rank - rank.bytes_seen,
            self.budget.output_bytes_total - self.total_bytes,
        )
        if len(data) > room:
            data = data[: max(room, 0)]
            rank.truncated = self.exceeded = True
        rank.bytes_seen += len(data)
        self.total_bytes += len(data)
        decoder = rank.decoders.setdefault(stream, codecs.getincrementaldecoder("utf-8")("replace"))
        self._keep(rank, stream, decoder.decode(data))

    def finish(self) -> None:
        """Decode what the decoders held back and send everything still pending."""
        for rank in self.ranks:
            for stream, decoder in rank.decoders.items():
                self._keep(rank, stream, decoder.decode(b"", final=True))
            self._flush(rank)

    def flush_due(self, now: float) -> float | None:
        """Send what has waited long enough; return when the next pending event is due."""
        due: float | None = None
        interval = self._interval()
        for rank in self.ranks:
            for stream, waiting in list(rank.pending.items()):  # the longest waiting first
                at = waiting.since + interval
                if now < at:
                    due = at if due is None else min(due, at)
                    break  # the rank's other streams began later still
                self._flush(rank, stream)
        return due

    def _keep(self, rank: RankOutput, stream: str, text: str) -> None:
        if not text:
            return
        rank.text[stream].append(text)
        # A switch between the streams sends nothing: each stream waits out its own window.
        waiting = rank.pending.get(stream)
        if waiting is None:
            waiting = rank.pending[stream] = Pending(time.monotonic())
        waiting.parts.append(text)
        waiting.size += len(text)
        if waiting.size >= COALESCE_BYTES:
            self._flush(rank, stream)

    def _interval(self) -> float:
        return COALESCE_S if self.events < EVENTS_BEFORE_SLOWDOWN else SLOW_COALESCE_S

    def _flush(self, rank: RankOutput, until: str | None = None) -> None:
        """Send the rank's pending streams up to `until` (all when None), each as one event, in
        the order their pending text began: a stream that began earlier is never sent after
        one that began later."""
        for stream in list(rank.pending):
            waiting = rank.pending.pop(stream)
            self.events += 1
            self.emit({"event": "output", "rank": rank.rank, "stream": stream,
                       "text": "".join(waiting.parts)})  # fmt: skip
            if stream == until:
                return

    def emit(self, event: dict[str, Any]) -> None:
        """Send an event, unless nobody reads them any more."""
        if self.orphaned:
            return
        try:
            self.send(event)
        except OSError:
            self.orphaned = True  # the client went away: stop the run, nobody will read it
