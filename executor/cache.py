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
from executor.contract import RunRequest, RunResult, RunStatus

# Outcomes that say nothing about the snippet itself are never cached.
UNCACHEABLE = {RunStatus.REJECTED, RunStatus.INTERNAL_ERROR}


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
        return RunResult.model_validate_json(text).model_copy(update={"cached": True})

    def put(self, key: str, result: RunResult) -> None:
        """Store a result unless its status says nothing about the snippet."""
        if result.status in UNCACHEABLE or result.cached:
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
