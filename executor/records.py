"""A rank's own record (fd 3): untrusted detail about how its snippet ended, checked here.

The rank writes one JSON line before os._exit: the snippet's uncaught exception and whether it
drew unseeded random numbers. That process runs the snippet, so the snippet can write on fd 3
too: forge a record, send megabytes, or send garbage. Nothing the executor trusts comes from
here (a rank's status and exit code come from the kernel's wait status, see
limits.rank_status); what does is capped in size, checked field by field, and taken once per
rank. A record that fails any check is reported as that run's problem (RecordError), never an
exception that would turn into an HTTP 500 or a retried job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from executor.contract import ExceptionInfo

# What one honest record can weigh: the message (JSON may escape a character as 6 bytes) and
# the exception's type, module and base class names.
RECORD_OVERHEAD_BYTES = 8192
FIELDS = {"rank", "exit_code", "exception", "unseeded_random"}


class RecordError(ValueError):
    """The rank's record is not one the rank itself would write."""


@dataclass(frozen=True)
class RankRecord:
    """The checked detail of one rank's record."""

    exception: dict[str, Any] | None = None
    unseeded_random: bool = False


def record_limit(exception_chars: int) -> int:
    """The most bytes an honest record can take, for an exception message of that length."""
    return RECORD_OVERHEAD_BYTES + 6 * exception_chars


def parse(data: bytes, rank: int, exception_chars: int, overflowed: bool) -> RankRecord | None:
    """Check the bytes a rank sent on fd 3; None when it sent none (killed, or closed fd 3)."""
    if overflowed:
        raise RecordError(f"more than {record_limit(exception_chars)} bytes")
    if not data:
        return None
    if data.count(b"\n") != 1 or not data.endswith(b"\n"):
        raise RecordError("not exactly one line")
    try:
        record = json.loads(data)
    except ValueError as error:
        raise RecordError(f"not JSON ({error})") from None
    if not isinstance(record, dict) or not set(record) <= FIELDS:
        raise RecordError("not a record object")
    if record.get("rank", rank) != rank:
        raise RecordError(f"it names rank {record.get('rank')!r}")
    unseeded = record.get("unseeded_random", False)
    if not isinstance(unseeded, bool):
        raise RecordError("unseeded_random is not a boolean")
    exception = record.get("exception")
    if exception is None:
        return RankRecord(None, unseeded)
    try:
        info = ExceptionInfo.model_validate(exception, strict=True)
    except ValidationError as error:
        raise RecordError(f"a malformed exception ({error.error_count()} errors)") from None
    if not isinstance(exception, dict) or not set(exception) <= set(ExceptionInfo.model_fields):
        raise RecordError("a malformed exception (unknown fields)")
    if len(info.message) > exception_chars:
        raise RecordError(f"an exception message over {exception_chars} characters")
    return RankRecord(info.model_dump(), unseeded)
