"""Result cache keyed by content hash: a verified snippet's real output is served at once."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from executor import EXECUTOR_VERSION
from executor.contract import RankStatus, RunRequest, RunResult, RunStatus


def cacheable(result: RunResult) -> bool:
    """Whether a fresh result says how the snippet itself ends, whatever the host's load: it
    ended ok, or a rank of it raised or exited non-zero by itself. A timeout, a memory or output
    limit, a rank killed by a signal, an internal error or a rejection can come from the moment
    (a starved CPU, threads or memory taken by other runs, a full queue): cached, one bad moment
    would be served to everyone who runs the same code afterwards."""
    if result.cached:
        return False  # served from a cache already: it was stored when it was observed
    if result.status is RunStatus.OK:
        return True
    return result.status is RunStatus.ERROR and any(
        rank.status is RankStatus.ERROR for rank in result.ranks
    )


def cache_key(request: RunRequest, torch_version: str, sandboxed: bool) -> str:
    """Hash the code, launch settings, torch version and executor version."""
    material = {
        "code": request.code,
        "nproc": request.nproc,
        "backend": request.backend,
        "timeout_s": request.timeout_s,
        "launcher": request.launcher,
        "gpus": request.gpus,
        "torch": torch_version,
        "executor": EXECUTOR_VERSION,
        "sandboxed": sandboxed,  # a snippet may print its uid: trusted runs differ
    }
    if request.rank_delays_s:  # a perturbed run is another observation (unperturbed keys stay)
        material["rank_delays_s"] = request.rank_delays_s
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


class ResultCache:
    """An in-memory LRU in front of an optional directory of JSON files."""

    def __init__(self, entries: int, directory: Path | None = None) -> None:
        self.entries = entries
        self.directory = directory
        self._memory: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> RunResult | None:
        """Return the cached result marked `cached`, or None."""
        with self._lock:
            text = self._memory.get(key)
            if text is not None:
                self._memory.move_to_end(key)
        if text is None and self.directory is not None:
            try:
                text = (self.directory / f"{key}.json").read_text()
            except OSError:
                return None
            self._remember(key, text)
        if text is None:
            return None
        found = RunResult.model_validate_json(text)
        if not cacheable(found):  # stored by an older executor that kept such results
            return None
        return found.model_copy(update={"cached": True})

    def put(self, key: str, result: RunResult) -> None:
        """Store a result if it says how the snippet itself ends (`cacheable`)."""
        if not cacheable(result):
            return
        text = result.model_dump_json()
        self._remember(key, text)
        if self.directory is not None:
            # Write then rename: a reader never sees half a file, even across a crash.
            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(handle, "w") as out:
                out.write(text)
            os.replace(temporary, self.directory / f"{key}.json")

    def _remember(self, key: str, text: str) -> None:
        with self._lock:
            self._memory[key] = text
            self._memory.move_to_end(key)
            while len(self._memory) > self.entries:
                self._memory.popitem(last=False)
