"""The secret key of an install that set none: random, made once, kept in its state folder.

Outside production `make run` and `ranklab serve` start without RANKLAB_SECRET_KEY. A fixed
default there was public, so anyone could sign what the key signs: a first-arrival stamp that
makes a late answer count as on time, flashcard tokens, CSRF tokens, device cookies. Instead the
first start makes a random one in a file only its owner may read, and every later start and
every worker process reads the same file, so sessions, forms and stamps outlive a restart and
`--workers N` agree.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

FILE_NAME = "secret-key"
_MIN_LENGTH = 32


def read_or_make(folder: Path) -> tuple[str, Path]:
    """The install's secret and its file in `folder`, made (mode 0600) if there is none yet."""
    path = folder / FILE_NAME
    if not path.exists():
        _make(path)
    return _read(path), path


def _make(path: Path) -> None:
    """Write a new secret whole, then link it into place: several processes starting at once
    each try, one wins, and all read the winner's (no one reads a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{FILE_NAME}-")  # mode 0600
    try:
        with os.fdopen(handle, "w") as file:
            file.write(secrets.token_urlsafe(48) + "\n")
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileExistsError):  # another process's came first: it stands
            os.link(temporary, path)
    finally:
        os.unlink(temporary)


def _read(path: Path) -> str:
    secret = path.read_text(encoding="utf-8").strip()
    if len(secret) < _MIN_LENGTH:
        raise ValueError(
            f"{path} holds no usable secret key: delete it to have a new one made, "
            "or set RANKLAB_SECRET_KEY"
        )
    return secret
