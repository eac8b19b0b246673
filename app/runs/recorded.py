"""Serve a proven hang's recorded outcome instead of running it to its time-out again."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from app.verification import proofs

# The proofs file as last read: (its path, mtime and size) and its proofs. Verify rewrites the
# file; a new stamp reads it again.
_read: tuple[tuple[Path, int, int], dict[str, proofs.Proof]] | None = None
_lock = threading.Lock()


def current(path: Path) -> dict[str, proofs.Proof]:
    """The proofs file's proofs as it is now (read again only when it changed; {} if none)."""
    return _proofs(path)


def _proofs(path: Path) -> dict[str, proofs.Proof]:
    global _read
    try:
        stat = path.stat()
    except OSError:
        return {}
    stamp = (path, stat.st_mtime_ns, stat.st_size)
    with _lock:
        if _read is None or _read[0] != stamp:
            try:
                _read = (stamp, proofs.load(path))
            except ValueError:  # a broken file records nothing: Run it runs
                _read = (stamp, {})
        return _read[1]


def lookup(path: Path, key: str, digest: str) -> dict[str, Any] | None:
    """The run verify observed for `key` (a proven hang) when it was observed for exactly this
    content hash, marked `recorded`; None otherwise (any edit changes the hash: it runs)."""
    proof = _proofs(path).get(key)
    if proof is None or proof.hash != digest or proof.observed is None:
        return None
    return {**proof.observed, "recorded": True}


async def frames(result: dict[str, Any]) -> AsyncIterator[str]:
    """The recorded result as Run it's one SSE `result` event (its ranks' output is in it)."""
    yield f"event: result\ndata: {json.dumps(result)}\n\n"
