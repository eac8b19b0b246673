"""Check a parameterised item before anything runs: each parameter assigned once in its snippet,
every placeholder and expression naming a known value, and every variant rendering to a valid
item whose distractors differ from its key (else refused at the variant, its parameters named).

Pure: the standard library, pydantic and the schema modules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from app.challenges import checks, expressions, outcome_transforms, variants
from app.challenges.base import RANK_TEMPLATE, ChoiceBase, ItemBase, Outcome, Parameterised

Location = tuple[Any, ...]


def item_errors(
    item: ItemBase, source: str | None, fixed_source: str | None, snippet_name: str
) -> list[tuple[Location, str]]:
    """Every problem of one parameterised item, with where in the item it is written; [] for
    a plain item. `snippet_name` names the snippet in messages (its file, or "the code")."""
    if not isinstance(item, Parameterised) or not item.params:
        return list(_transforms_without_params(item))
    errors = list(_assignment_errors(item, source, snippet_name, "code"))
    errors += _transform_errors(item)
    if fixed_source is not None:
        errors += _assignment_errors(item, fixed_source, "the fixed code", "fixed_code")
    known = set(item.params)
    for name, source_text in (item.derive or {}).items():
        errors += [(("derive", name), m) for m in _expression_errors(source_text, known)]
        known.add(name)
    for where, text in variants.template_strings(item):
        try:
            unknown = sorted(set(variants.placeholders(text)) - known)
        except ValueError as error:
            errors.append((where, str(error)))
            continue
        if unknown:
            errors.append((where, f"unknown name(s) {unknown} in {{…}}; known: {sorted(known)}"))
    for index, option in enumerate(getattr(item, "options", None) or []):
        for name, source_text in (option.as_if or {}).items():
            where = ("options", index, "as_if", name)
            if name not in known:
                errors.append((where, f"as_if names {name!r}, not a parameter or derived name"))
            errors += [(where, message) for message in _expression_errors(source_text, known)]
    for where, key in _variant_rank_keys(item):
        match = RANK_TEMPLATE.match(key)
        if match is not None:
            errors += [
                (where, f"rank key {key!r}: {m}") for m in _expression_errors(match.group(1), known)
            ]
    answer_from = getattr(item, "answer_from", None)
    if answer_from is not None:
        errors += [(("answer_from",), m) for m in _expression_errors(answer_from, known)]
    if errors:
        return errors  # rendering would only repeat them, once per variant
    return list(_variant_errors(item))


def _assignment_errors(
    item: Parameterised, source: str | None, snippet_name: str, field: str
) -> Iterator[tuple[Location, str]]:
    if source is None:
        return
    try:
        found = variants.assignments(source)
    except SyntaxError:
        return  # reported at the snippet's own line
    for name in item.params or {}:
        if name == variants.RESERVED:
            continue
        statements = found.get(name, [])
        if not statements:
            example = variants.literal((item.params or {})[name][0])
            yield (
                ("params", name),
                f"parameter {name} is not assigned in {snippet_name}: declare it once at the "
                f"top level as a plain assignment, e.g. `{name} = {example}`",
            )
        elif len(statements) > 1:
            lines = ", ".join(str(statement.lineno) for statement in statements)
            yield (
                ("params", name),
                f"parameter {name} is assigned {len(statements)} times at the top level of "
                f"{snippet_name} (lines {lines}): assign it once, so each variant changes one line",
            )


def _transforms_without_params(item: ItemBase) -> Iterator[tuple[Location, str]]:
    for index, option in enumerate(getattr(item, "options", None) or []):
        if option.as_if_outcome is not None:
            yield (
                ("options", index, "as_if_outcome"),
                "as_if_outcome derives a distractor in each variant: it needs the item's "
                "`params:`; here write the distractor's outcome",
            )


def _transform_errors(item: ItemBase) -> Iterator[tuple[Location, str]]:
    """A transform name that names none (its placeholders read as rank 0), on a key, or on an
    item with several keys."""
    keys: frozenset[str] = getattr(item, "answer_ids", frozenset())
    for index, option in enumerate(getattr(item, "options", None) or []):
        if option.as_if_outcome is None:
            continue
        where = ("options", index, "as_if_outcome")
        if option.id in keys:
            yield where, "as_if_outcome is for a distractor: a key's outcome is what verify proves"
        elif len(keys) != 1:
            yield where, "as_if_outcome derives from the one key: this item has several"
        try:
            name = option.as_if_outcome
            outcome_transforms.parse(re.sub(r"\{[^{}]*\}", "0", name), shown=name)
        except outcome_transforms.TransformError as error:
            yield where, str(error)


def _variant_rank_keys(item: ItemBase) -> Iterator[tuple[Location, str]]:
    """Every rank key of the item's outcomes, with where it is written."""
    places: list[tuple[Location, object]] = [(("failure",), getattr(item, "failure", None))]
    options = getattr(item, "options", None) or []
    keyed = [option.outcome for option in options if option.id in getattr(item, "answer_ids", ())]
    places += [
        (("options", index, "outcome"), option.outcome)
        for index, option in enumerate(options)
        if not (option.as_if and option.outcome in keyed)  # the key's, copied: said there
    ]
    for where, outcome in places:
        if isinstance(outcome, Outcome):
            for key in outcome.ranks:
                yield (*where, "ranks", key), key


def _expression_errors(source: str, known: set[str]) -> Iterator[str]:
    try:
        unknown = sorted(expressions.names(source) - known)
    except expressions.ExpressionError as error:
        yield str(error)
        return
    if unknown:
        yield f"{source!r} reads unknown name(s) {unknown}; known: {sorted(known)}"


def _variant_errors(item: ItemBase) -> Iterator[tuple[Location, str]]:
    for variant in variants.variants_of(item):
        try:
            rendered = variants.render_params(item, variant.params)
        except variants.RenderError as error:
            yield error.where, f"variant {variant.label}: {error}"
            continue
        except (ValidationError, ValueError, KeyError, TypeError) as error:
            yield ("params",), f"variant {variant.label}: {_brief(error)}"
            continue
        for where, message in checks.rank_errors(rendered):
            yield where, f"variant {variant.label}: {message}"
        if isinstance(rendered, ChoiceBase):
            yield from _coinciding(rendered, variant.label)


def _coinciding(item: ChoiceBase, label: str) -> Iterator[tuple[Location, str]]:
    """A distractor that reads as, or claims the same outcome as, a key in this variant."""
    keys = [option for option in item.options if option.id in item.answer_ids]
    for index, option in enumerate(item.options):
        if option.id in item.answer_ids:
            continue
        for key in keys:
            same_text = _plain(option.text) == _plain(key.text)
            same_outcome = option.outcome is not None and option.outcome == key.outcome
            if same_text or same_outcome:
                what = "reads the same as" if same_text else "claims the same outcome as"
                yield (
                    ("options", index),
                    f"variant {label}: distractor {option.id} {what} key {key.id} "
                    f"({option.text!r}): refused; change the values or the misconception",
                )
                break


def _plain(text: str) -> str:
    return " ".join(text.split())


def _brief(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
            for problem in error.errors()
        )
    if isinstance(error, KeyError):
        return f"{error.args[0]} is not assigned once in the snippet"
    return str(error)
