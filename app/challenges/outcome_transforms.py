"""Derive a distractor's outcome from the key's by a named misconception (`as_if_outcome:`).

Each transform is a pure function of the key's outcome, as one variant renders it (a dict, rank
keys already numbers), and the variant's rank count. Each makes a claim the key contradicts, so
that a distractor derived from a true key is false by construction (verify still runs it);
where the key leaves room for the misconception to be true (only one rank prints the value
already, say), the transform refuses, and validate says so at the variant. Pure: the standard
library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Claims = dict[str, Any]


class TransformError(ValueError):
    """A transform that does not apply to this variant's key."""


@dataclass(frozen=True)
class Transform:
    """One named misconception: what it claims, and how it is made from the key's outcome."""

    pattern: str  # the name, N for a rank number: "only-rank-N"
    belief: str  # what a learner holding it expects, for the authoring guide
    derive: Callable[[dict[str, Any], int, int], dict[str, Any]]  # (key, nproc, N) -> outcome


def claims_of(outcome: Mapping[str, Any], rank: int) -> Claims:
    """What an outcome claims of one rank: its `all` claims, then the rank's own over them."""
    ranks = outcome.get("ranks") or {}
    merged: Claims = {}
    for key in ("all", str(rank)):
        merged.update({k: v for k, v in (ranks.get(key) or {}).items() if v is not None})
    return merged


def _stdout(outcome: Mapping[str, Any], rank: int, name: str) -> str:
    stdout = claims_of(outcome, rank).get("stdout")
    if stdout is None:
        raise TransformError(f"{name} needs the key to say what rank {rank} prints (stdout:)")
    return str(stdout)


def _printed(outcome: Mapping[str, Any], nproc: int) -> dict[int, str]:
    """Each rank's exact stdout, where the outcome gives it."""
    found = {rank: claims_of(outcome, rank).get("stdout") for rank in range(nproc)}
    return {rank: str(stdout) for rank, stdout in found.items() if stdout is not None}


def _rank_in_range(rank: int, nproc: int, name: str) -> None:
    if rank >= nproc:
        raise TransformError(f"{name}: rank {rank} does not exist on {nproc} ranks")


def only_rank(key: dict[str, Any], nproc: int, rank: int) -> dict[str, Any]:
    """Rank N prints what the key says it prints, and no other rank prints that."""
    name = f"only-rank-{rank}"
    _rank_in_range(rank, nproc, name)
    value = _stdout(key, rank, name)
    sharing = [
        other for other, out in _printed(key, nproc).items() if other != rank and out == value
    ]
    if not sharing:
        raise TransformError(
            f"{name}: the key has no other rank print what rank {rank} prints, so the "
            "misconception would be true"
        )
    claim = {k: v for k, v in claims_of(key, rank).items() if k != "differs_across_ranks"}
    return {"ranks": {str(rank): {**claim, "differs_across_ranks": True}}}


def every_rank_like(key: dict[str, Any], nproc: int, rank: int) -> dict[str, Any]:
    """Every rank prints what the key says rank N prints (the result lands everywhere)."""
    name = f"every-rank-like-{rank}"
    _rank_in_range(rank, nproc, name)
    value = _stdout(key, rank, name)
    if all(out == value for out in _printed(key, nproc).values()):
        raise TransformError(
            f"{name}: the key has no rank print anything but what rank {rank} prints, so the "
            "misconception would be true"
        )
    claim = {k: v for k, v in claims_of(key, rank).items() if k != "differs_across_ranks"}
    return {"ranks": {"all": claim}}


def rank_order(key: dict[str, Any], nproc: int, _rank: int) -> dict[str, Any]:
    """The key's claims, and the ranks print in the same order on every run."""
    if nproc < 2:
        raise TransformError("rank-order: one rank has no order to print in")
    if key.get("order_varies") is False:
        raise TransformError("rank-order: the key already says the order is the same every run")
    if not (key.get("ranks") or {}):
        raise TransformError("rank-order: the key says nothing any rank prints")
    printed = _printed(key, nproc)
    if len(printed) == nproc and len(set(printed.values())) == 1:
        # Which rank printed first is only seen where ranks print different things
        # (app.verification.rules.varying_order): no run could show this false.
        raise TransformError(
            "rank-order: the key has every rank print the same, so no order can be seen"
        )
    return {**key, "order_varies": False}


def unchanged_input(key: dict[str, Any], nproc: int, _rank: int) -> dict[str, Any]:
    """No two ranks print the same: each still holds its own (rank-dependent) input."""
    printed = list(_printed(key, nproc).values())
    if len(set(printed)) == len(printed):
        raise TransformError(
            "unchanged-input: the key has no two ranks print the same, so the misconception "
            "would be true"
        )
    return {"ranks": {"all": {"differs_across_ranks": True}}}


TRANSFORMS = (
    Transform("only-rank-N", "only rank N receives the result", only_rank),
    Transform("every-rank-like-N", "every rank receives what rank N gets", every_rank_like),
    Transform("rank-order", "the ranks print in rank order", rank_order),
    Transform("unchanged-input", "the call leaves every rank's value as it was", unchanged_input),
)
_NAMES = {t.pattern: t for t in TRANSFORMS}


def parse(name: str, shown: str | None = None) -> tuple[Transform, int]:
    """The transform a (filled) name names, with its rank (0 where it takes none); `shown` is
    the name as written, for the message."""
    match = re.fullmatch(r"(.+)-(\d+)", name)
    if match is not None and f"{match[1]}-N" in _NAMES:
        return _NAMES[f"{match[1]}-N"], int(match[2])
    if name in _NAMES and not name.endswith("-N"):
        return _NAMES[name], 0
    known = ", ".join(t.pattern for t in TRANSFORMS)
    raise TransformError(f"as_if_outcome {shown or name!r} names no transform; known: {known}")


def apply(name: str, key: dict[str, Any], nproc: int) -> dict[str, Any]:
    """The outcome the named misconception makes of the key's (TransformError if it cannot)."""
    transform, rank = parse(name)
    return transform.derive(key, nproc, rank)
