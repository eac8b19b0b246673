"""Pydantic's and the YAML parser's errors, said in plain words for authors.

A library's text ("Input should be less than or equal to 8", "expected <block end>, but found
'<scalar>'") names neither the field an author wrote nor the fix. Each error here is turned into
one short sentence that names the field, what is allowed and what to do, with "did you mean"
where a close name exists. Where it points (the value, not its item) is the loader's job: this
module says where the value is (`at_value`) and what to say.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from app.challenges.base import SLUG

# What a pattern of the schema means, in words.
PATTERN_WORDS = {
    SLUG: "lowercase letters, digits and dashes, starting with a letter or digit (e.g. "
    "all-reduce-sum)",
    r"^[A-Z]$": "one capital letter, A to Z",
    r"^[\w./-]+\.py$": "the name of a .py file beside the YAML file (e.g. all_reduce.py)",
    r"^[\w./-]+\.md$": "the name of a .md file beside the YAML file (e.g. cheat-sheet.md)",
    r"^https?://\S+$": "a web address starting with https://",
    r"^\d+\.\d+(\.\d+)?\S*$": 'a torch version in quotes, e.g. "2.13.0"',
}

TYPE_WORDS = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "string": "text",
    "list": "a list (lines starting with `- `)",
    "dict": "a mapping (`key: value` lines)",
    "model": "a mapping (`key: value` lines)",
}


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to name (the same letters in another case first), if any."""
    names = [str(known_name) for known_name in known]
    same_case = [known_name for known_name in names if known_name.casefold() == name.casefold()]
    close = same_case or difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """ "; did you mean 'x'?" for the closest known name, or nothing."""
    close = closest(name, known)
    return f"; did you mean {close!r}?" if close is not None else ""


def one_of(values: Sequence[str]) -> str:
    """ "a, b or c"."""
    shown = [str(value) for value in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


@dataclass(frozen=True)
class Plain:
    """An error in plain words and whether it is about the value (else the key or the item)."""

    message: str
    at_value: bool


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _bounds(model: type[BaseModel] | None, name: str) -> tuple[Any, Any]:
    """The lower and upper bound of a numeric field, as (ge or gt, le or lt)."""
    low = high = None
    field = model.model_fields.get(name) if model is not None else None
    for constraint in field.metadata if field is not None else []:
        low = getattr(constraint, "ge", None) or getattr(constraint, "gt", None) or low
        high = getattr(constraint, "le", None) or getattr(constraint, "lt", None) or high
        if getattr(constraint, "ge", None) == 0:
            low = 0
    return low, high


def _range_words(low: Any, high: Any) -> str:
    if low is not None and high is not None:
        return f"from {low} to {high}"
    return f"at least {low}" if low is not None else f"at most {high}"


def plain(error: Any, name: str, model: type[BaseModel] | None) -> Plain:
    """One pydantic error about field `name` (of `model`, if known) in plain words."""
    kind = error["type"]
    ctx = error.get("ctx", {})
    value = error.get("input")
    if kind == "extra_forbidden":
        fields = list(model.model_fields) if model is not None else []
        close = closest(name, fields)
        fix = f"did you mean {close!r}?" if close else "remove it or check its spelling"
        return Plain(f"unknown field {name!r}: {fix}", at_value=False)
    if kind == "missing":
        return Plain(f"missing required field {name!r}: add `{name}:` here", at_value=False)
    if kind == "union_tag_invalid":
        tags = re.findall(r"'([^']*)'", ctx.get("expected_tags", ""))
        tag = str(ctx.get("tag"))
        return Plain(
            f"unknown kind {tag!r}{did_you_mean(tag, tags)} (kinds here: {one_of(tags)})",
            at_value=True,
        )
    if kind == "union_tag_not_found":
        return Plain("missing `kind:`: say which kind this item is (e.g. kind: choice)", False)
    if kind in ("enum", "literal_error"):
        allowed = re.findall(r"'([^']*)'|(\d+)", ctx.get("expected", ""))
        values = [quoted or number for quoted, number in allowed]
        hint = did_you_mean(str(value), values)
        return Plain(f"{name} {_shown(value)} is not allowed: use {one_of(values)}{hint}", True)
    if kind in ("less_than_equal", "greater_than_equal", "less_than", "greater_than"):
        low, high = _bounds(model, name)
        if low is None and high is None:
            low, high = ctx.get("ge", ctx.get("gt")), ctx.get("le", ctx.get("lt"))
        return Plain(f"{name} is {_shown(value)}: use a value {_range_words(low, high)}", True)
    if kind == "string_pattern_mismatch":
        pattern = ctx.get("pattern", "")
        words = PATTERN_WORDS.get(pattern, f"text matching {pattern}")
        return Plain(f"{name} {_shown(value)} is not allowed: write {words}", True)
    if kind == "string_too_short":
        return Plain(f"{name} is empty: write something", True)
    if kind in ("string_too_long", "too_long", "too_short"):
        unit = "characters" if kind == "string_too_long" else "entries"
        limit = ctx.get("max_length", ctx.get("min_length"))
        most = "at most" if kind != "too_short" else "at least"
        return Plain(f"{name} needs {most} {limit} {unit}", True)
    for word, words in TYPE_WORDS.items():
        if (kind.startswith(word) and kind.endswith(("_type", "_parsing"))) or kind == word + "s":
            low, high = _bounds(model, name)
            span = f" ({_range_words(low, high)})" if low is not None or high is not None else ""
            return Plain(f"{name} must be {words}{span}, not {_shown(value)}", True)
    if kind == "model_attributes_type":
        return Plain(f"{name} must be {TYPE_WORDS['dict']}, not {_shown(value)}", True)
    message = str(error["msg"]).removeprefix("Value error, ")
    named = name and name not in message
    return Plain(f"{name}: {message}" if named else message, kind != "value_error")


def model_at(
    root: type[BaseModel], document: Any, location: Sequence[Any]
) -> type[BaseModel] | None:
    """The model that holds the last part of location (None where it cannot be told), walking
    the schema beside the document so that an item's `kind:` picks its model."""
    model: Any = root
    node = document
    for part in location[:-1]:
        model = _choose(model, node)
        if isinstance(model, type) and issubclass(model, BaseModel):
            field = model.model_fields.get(str(part))
            if field is None:
                return None
            model = field.annotation
        elif typing.get_origin(model) in (list, dict):
            model = typing.get_args(model)[-1]
        else:
            return None
        node = _child(node, part)
    model = _choose(model, node)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _child(node: Any, part: Any) -> Any:
    try:
        return node[part]
    except (KeyError, IndexError, TypeError):
        return None


def _choose(annotation: Any, node: Any) -> Any:
    """Strip Annotated and None from a type; of a union, pick the member the node is (by its
    `kind:`, else the only mapping or only other member)."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return annotation
    members = [_choose(m, node) for m in typing.get_args(annotation) if m is not type(None)]
    if len(members) == 1:
        return members[0]
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    kind = node.get("kind") if isinstance(node, dict) else None
    for member in models:
        field = member.model_fields.get("kind")
        if field is not None and kind in typing.get_args(field.annotation):
            return member
    return models[0] if len(models) == 1 and isinstance(node, dict) else None


# --- YAML syntax ---------------------------------------------------------------------------

_YAML_WORDS = [
    ("found character '\\t' that cannot start any token", "a tab: indent YAML with spaces only"),
    (
        "mapping values are not allowed here",
        "a ': ' inside a plain value: put the whole value in quotes",
    ),
    (
        "expected <block end>, but found",
        "this line does not line up with the lines above it: check its indentation",
    ),
    (
        "could not find expected ':'",
        "a line with no `key: value` where one was expected: check the line above",
    ),
    ("expected ',' or ']'", "a list in [brackets] is not closed: add the missing ]"),
    ("expected ',' or '}'", "a mapping in {braces} is not closed: add the missing }"),
]


@dataclass(frozen=True)
class YamlProblem:
    """A YAML error's 1-based position and plain message."""

    line: int
    column: int
    message: str


def yaml_problem(text: str, error: YAMLError) -> YamlProblem | None:
    """Say a YAML syntax error in plain words at its cause (None: not a marked error)."""
    if not isinstance(error, MarkedYAMLError):
        return None
    mark = error.problem_mark or error.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    problem = " ".join(str(part) for part in (error.context, error.problem) if part)
    duplicate = re.search(r'found duplicate key "(.*?)"', problem)
    if duplicate is not None:
        key = duplicate.group(1)
        first = _first_key_line(text, key, line, column)
        where = f" at line {first}" if first else ""
        return YamlProblem(
            line, column, f"duplicate key {key!r}: it is already given{where}; keep one of them"
        )
    if error.context and "while scanning a quoted scalar" in error.context and error.context_mark:
        start = error.context_mark
        return YamlProblem(
            start.line + 1,
            start.column + 1,
            f"a quoted string opened at {start.line + 1}:{start.column + 1} is never closed: "
            "add its closing quote",
        )
    opened = _runaway_quote(text, line)
    if opened is not None:
        (start_line, start_column), end_line = opened
        return YamlProblem(
            start_line,
            start_column,
            f"a quoted string opened at {start_line}:{start_column} is never closed on its "
            f"line (it runs on to line {end_line}): add its closing quote",
        )
    for library, words in _YAML_WORDS:
        if library in problem:
            return YamlProblem(line, column, words)
    return YamlProblem(line, column, problem or str(error))


def _first_key_line(text: str, key: str, line: int, column: int) -> int | None:
    """The line of the first `key:` of the mapping whose duplicate is at line and column."""
    lines = text.splitlines()
    for number in range(line - 1, 0, -1):
        before = lines[number - 1]
        body = before.lstrip(" -")
        if not body or body.startswith("#"):
            continue
        indent = len(before) - len(body)
        if indent == column - 1 and body.startswith(f"{key}:"):
            return number
        if indent < column - 1:
            return None  # above the mapping that holds the duplicate
    return None


def _runaway_quote(text: str, error_line: int) -> tuple[tuple[int, int], int] | None:
    """A quoted scalar that spans lines and ends on the error's line: the usual cause of a
    confusing error far below a quote that was never closed (YAML lets a quoted string run on
    over lines, so the parser only stumbles where the next quote closes it)."""
    last: Any = None
    try:
        for token in YAML().scan(text):
            if token.start_mark.line + 1 > error_line:
                break
            if getattr(token, "style", None) in ('"', "'"):
                last = token
    except YAMLError:
        pass
    if last is None or last.start_mark.line == last.end_mark.line:
        return None
    if last.end_mark.line + 1 != error_line:
        return None
    start = (last.start_mark.line + 1, last.start_mark.column + 1)
    return start, last.end_mark.line + 1
