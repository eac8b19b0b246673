"""Whether a file's page is in the page cache, asked outside any sandbox or filter."""

from __future__ import annotations

import os
from pathlib import Path


def cached(path: Path) -> bool:
    """Whether the file's first page sits in the page cache: a read that may not wait for I/O
    (RWF_NOWAIT) gets it."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        return os.preadv(descriptor, [bytearray(1)], 0, os.RWF_NOWAIT) == 1
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)
