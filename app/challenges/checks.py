"""Checks the schema cannot place: duplicate ids and answers naming no option (said at the
duplicate or the answer, not at the item), ranks an outcome names beyond its snippet's `nproc`,
and snippets Python cannot compile.

The schema's own validators still refuse duplicates and unknown answers (so a model is never
built from them), but raise at the whole item; these walk the YAML document itself, where every
value has its line and column.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

from app.challenges.base import (
    InlineProof,
    Launch,
    Launcher,
    Outcome,
    is_rank_key,
    is_variant_rank_key,
)
from app.challenges.plain_errors import did_you_mean

Location = tuple[Any, ...]

# The lists whose entries carry an `id:` unique among them, and what their entries are called.
ID_LISTS = {
    "items": "item",
    "options": "option",
    "cards": "card",
    "proofs": "proof",
    "steps": "step",
    "questions": "question",
}
# Cards and items of a topic share one id space (both are addressed as topic/id).
SHARED = ("cards", "items")

# What the schema's validators say of the same problems, at the whole item: dropped where the
# checks here have said it at the value.
_SCHEMA_WORDS = (
    "option ids must be unique",
    "answer names unknown option",
    "is used twice in this",
    "proof id(s)",
    "step ids must be unique",
    "question ids must be unique",
    'must be "all", a rank number',
)


def said_by_references(message: str) -> bool:
    """Whether a schema error is one reference_errors says better."""
    return any(words in message for words in _SCHEMA_WORDS)


def reference_errors(document: Any) -> list[tuple[Location, str]]:
    """Every duplicate id (at the duplicate, naming the first's line) and every answer that
    names no option (at the answer), anywhere in the document."""
    return list(_walk(document, ()))


def _walk(node: Any, location: Location) -> Iterator[tuple[Location, str]]:
    if isinstance(node, dict):
        yield from _duplicates(node, location)
        yield from _answers(node, location)
        yield from _rank_keys(node, location)
        for key, value in node.items():
            yield from _walk(value, (*location, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, (*location, index))


def _duplicates(node: dict[Any, Any], location: Location) -> Iterator[tuple[Location, str]]:
    groups = [[name] for name in ID_LISTS if name not in SHARED]
    groups.append(list(SHARED))
    for names in groups:
        first: dict[str, int] = {}
        for name in names:
            entries = node.get(name)
            if not isinstance(entries, list):
                continue
            for index, entry in enumerate(entries):
                entry_id = entry.get("id") if isinstance(entry, dict) else None
                if not isinstance(entry_id, str):
                    continue
                line = _line_of(entry, "id")
                if entry_id in first:
                    yield (
                        (*location, name, index, "id"),
                        f"{ID_LISTS[name]} id {entry_id!r} is already used at line "
                        f"{first[entry_id]}: give this one another id",
                    )
                else:
                    first[entry_id] = line


def _answers(node: dict[Any, Any], location: Location) -> Iterator[tuple[Location, str]]:
    options, answer = node.get("options"), node.get("answer")
    if not isinstance(options, list) or answer is None:
        return
    ids = [str(o["id"]) for o in options if isinstance(o, dict) and isinstance(o.get("id"), str)]
    named = (
        [(index, value) for index, value in enumerate(answer)]
        if isinstance(answer, list)
        else [(None, answer)]
    )
    for index, value in named:
        if str(value) in ids:
            continue
        where = (*location, "answer") if index is None else (*location, "answer", index)
        yield (
            where,
            f"answer {str(value)!r} names no option{did_you_mean(str(value), ids)} "
            f"(this item's options are {', '.join(ids) or 'none'})",
        )


def _rank_keys(node: dict[Any, Any], location: Location) -> Iterator[tuple[Location, str]]:
    ranks = node.get("ranks")
    if not isinstance(ranks, dict):
        return
    for key in ranks:
        if not is_rank_key(str(key)):
            yield (
                (*location, "ranks", key),
                f'rank key {str(key)!r} is not a rank: use "all" or a rank number such as "0"'
                ' (in an item with params also "others" or "{expression}")'
                f"{did_you_mean(str(key), ['all', 'others'])}",
            )


def _line_of(entry: Any, key: str) -> int:
    try:
        return int(entry.lc.value(key)[0]) + 1
    except (AttributeError, KeyError, TypeError):
        return 1


# --- ranks -----------------------------------------------------------------------------------


def rank_errors(model: Any) -> list[tuple[Location, str]]:
    """Each rank an outcome names that its snippet's launch does not start (a set, topic or
    lab model; the walk follows the fields that hold a launch)."""
    return list(_ranks_in(model, ()))


def _ranks_in(model: Any, location: Location) -> Iterator[tuple[Location, str]]:
    launch = getattr(model, "launch", None)
    params = getattr(model, "params", None) or {}
    rank_counts = params.get("nproc")
    if isinstance(launch, Launch) and rank_counts:
        # A parameterised rank count: each variant is checked with its own (variant_checks).
        launch = launch.model_copy(update={"nproc": max(rank_counts)})
    outcomes = [
        ((*location, field), getattr(model, field, None)) for field in ("outcome", "failure")
    ]
    outcomes += [
        ((*location, "options", index, "outcome"), option.outcome)
        for index, option in enumerate(getattr(model, "options", None) or [])
    ]
    if not params:  # an item with params has its variant rank keys checked per variant
        for where, outcome in outcomes:
            yield from _variant_keys_refused(outcome, where)
    if isinstance(launch, Launch):
        for where, outcome in [*outcomes, ((*location, "expect"), getattr(model, "expect", None))]:
            yield from _outcome_ranks(outcome, launch, where)
        offered = getattr(model, "rank_choices", None) or []  # a lab step's picker
        for index, check in enumerate(getattr(model, "checks", None) or []):
            where = (*location, "checks", index, "expect")
            yield from _variant_keys_refused(check.expect, where)
            yield from _check_ranks(check.expect, check.nproc or offered, where)
    proof = getattr(model, "proof", None)
    if isinstance(proof, InlineProof):
        yield from _ranks_in(proof, (*location, "proof"))
    for name in ("items", "cards", "proofs", "steps", "questions"):
        for index, entry in enumerate(getattr(model, name, None) or []):
            yield from _ranks_in(entry, (*location, name, index))


def _outcome_ranks(
    outcome: Outcome | None, launch: Launch, location: Location
) -> Iterator[tuple[Location, str]]:
    if not isinstance(outcome, Outcome):
        return
    choices = getattr(launch, "choices", None) or [launch.nproc]
    nproc = max(choices)
    for key in outcome.ranks:
        if key == "all" or is_variant_rank_key(key):
            continue
        where = (*location, "ranks", key)
        if launch.launcher is Launcher.PYTHON and int(key) != 0:
            yield (
                where,
                f'rank {key}: with `launcher: python` the output is rank 0\'s: claim "0" or all',
            )
        elif int(key) >= nproc:
            yield (
                where,
                f"rank {key} does not exist: this snippet starts {nproc} "
                f"rank{'s' if nproc > 1 else ''} ({_numbered(nproc)}, launch.nproc): "
                "name a lower rank or raise nproc",
            )


def _check_ranks(
    outcome: Outcome, counts: list[int], location: Location
) -> Iterator[tuple[Location, str]]:
    """A lab check must hold at every count it is judged at: each rank it names must exist on
    the fewest ranks among them."""
    fewest = min(counts, default=1)
    for key in outcome.ranks:
        if key.isdigit() and int(key) >= fewest:
            yield (
                (*location, "ranks", key),
                f"rank {key} does not exist on {fewest} rank{'s' if fewest > 1 else ''} "
                f"({_numbered(fewest)}), which this check is judged at: name a lower rank, or "
                "give the check `nproc:` the rank counts it is for",
            )


def _variant_keys_refused(outcome: Any, location: Location) -> Iterator[tuple[Location, str]]:
    """A rank key known only per variant ("others", "{SRC}") where there are no variants."""
    if not isinstance(outcome, Outcome):
        return
    for key in outcome.ranks:
        if is_variant_rank_key(key):
            yield (
                (*location, "ranks", key),
                f"rank key {key!r} is rendered per variant: it needs the item's `params:`; "
                'here name the rank ("0", "1") or all',
            )


def _numbered(nproc: int) -> str:
    return "rank 0 only" if nproc == 1 else f"numbered 0 to {nproc - 1}"


# --- snippets --------------------------------------------------------------------------------


def syntax_error(source: str, name: str) -> tuple[int, int, str] | None:
    """(line, column, message) where Python cannot compile the snippet; None if it compiles.
    Only compiled, never run."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape's warning is not an error
            compile(source, name, "exec", dont_inherit=True)
    except SyntaxError as error:
        line = error.lineno or 1
        column = error.offset or 1
        return line, column, f"Python cannot compile this snippet: {error.msg}"
    except ValueError as error:  # a NUL byte in the source
        return 1, 1, f"Python cannot compile this snippet: {error}"
    return None


SNIPPET_FIELDS = ("code", "fixed_code", "starter", "solution")


def snippets(model: Any, location: Location = ()) -> Iterator[tuple[Location, str, bool]]:
    """Each snippet that runs (of a model with a `launch`): (where, inline code or file name,
    whether it names a file), in its proofs, items, cards, steps and questions too."""
    if isinstance(getattr(model, "launch", None), Launch):
        for field in SNIPPET_FIELDS:
            inline, named = getattr(model, field, None), getattr(model, f"{field}_file", None)
            if isinstance(named, str):
                yield (*location, f"{field}_file"), named, True
            elif isinstance(inline, str):
                yield (*location, field), inline, False
    proof = getattr(model, "proof", None)
    if isinstance(proof, InlineProof):
        yield from snippets(proof, (*location, "proof"))
    for name in ("items", "cards", "proofs", "steps", "questions"):
        for index, entry in enumerate(getattr(model, name, None) or []):
            yield from snippets(entry, (*location, name, index))
