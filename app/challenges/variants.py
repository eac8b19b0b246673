"""Enumerate and render the variants of a parameterised item.

An item's `params:` give each parameter a finite domain; every combination is a variant with
its own stable key. `render` makes one variant's concrete item: the snippet's top-level
assignments of the parameters rewritten (located by the ast, never by text search), launch.nproc
set, `{name}` placeholders of the texts and outcomes filled in, and `as_if:` distractors
re-rendered under the values their misconception gives. Pure: the standard library, pydantic and
the schema modules.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import random
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.challenges import expressions, outcome_transforms
from app.challenges.base import OTHERS, RANK_TEMPLATE, ItemBase, Parameterised

# More combinations than this and a deterministic sample of this many is taken (seeded by the
# item id), so verify time stays bounded: variants differ only in constants.
CAP = 12
RESERVED = "nproc"  # sets launch.nproc; the snippet reads its rank count from torchrun
# The texts and claims a variant fills in; everything else (ids, launch, limits) is as written.
TEXT_FIELDS = ("title", "prompt", "hint", "explanation", "options", "failure", "unit")


@dataclass(frozen=True)
class Variant:
    """One combination of an item's parameters."""

    key: str  # "" for an item without parameters; else a stable 12-hex hash, never reused
    params: Mapping[str, object] = field(default_factory=dict)  # {} for key ""
    label: str = ""  # for instructors, e.g. "nproc=3, OP=MAX"


PLAIN = Variant("", {}, "")


def params_of(item: ItemBase) -> dict[str, list[Any]]:
    """The item's declared parameters ({} for a plain item)."""
    return dict(getattr(item, "params", None) or {})


def variant_key(item_id: str, params: Mapping[str, object]) -> str:
    """sha256 of the item id and the canonical JSON of its parameters, 12 hex digits."""
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{item_id}\0{canonical}".encode()).hexdigest()[:12]


def label_of(params: Mapping[str, object]) -> str:
    """Human words for a combination: "nproc=3, OP=MAX"."""
    return ", ".join(f"{name}={_shown(value)}" for name, value in params.items())


def count(item: ItemBase) -> int:
    """How many combinations the domains make (before the cap)."""
    total = 1
    for values in params_of(item).values():
        total *= len(values)
    return total


def variants_of(item: ItemBase) -> tuple[Variant, ...]:
    """Every variant of an item, in a deterministic order (the domains' product, the first
    parameter slowest); more than CAP combinations: a sample of CAP seeded by the item id, in
    product order. (PLAIN,) for a plain item."""
    domains = params_of(item)
    if not domains:
        return (PLAIN,)
    names = list(domains)
    total = count(item)
    if total <= CAP:
        indexes: list[int] = list(range(total))
    else:
        seed = int(hashlib.sha256(item.id.encode()).hexdigest()[:16], 16)
        indexes = sorted(random.Random(seed).sample(range(total), CAP))
    chosen: list[Variant] = []
    for index in indexes:
        params = dict(zip(names, _combination(index, [domains[n] for n in names]), strict=True))
        chosen.append(Variant(variant_key(item.id, params), params, label_of(params)))
    return tuple(chosen)


def _combination(index: int, domains: list[list[Any]]) -> list[Any]:
    """The index-th element of the domains' product (the last domain fastest)."""
    picked: list[Any] = []
    for values in reversed(domains):
        index, position = divmod(index, len(values))
        picked.append(values[position])
    return list(reversed(picked))


def environment(item: ItemBase, params: Mapping[str, object]) -> dict[str, object]:
    """The names texts may use in one variant: its parameters, then the derived values."""
    return _derived(item, dict(params))


def _derived(item: ItemBase, values: dict[str, object]) -> dict[str, object]:
    env = dict(values)
    for name, source in (getattr(item, "derive", None) or {}).items():
        env[name] = expressions.evaluate(source, env)
    return env


class RenderError(ValueError):
    """Part of an item that does not render in one variant, with where it is written."""

    def __init__(self, where: tuple[Any, ...], message: str) -> None:
        super().__init__(message)
        self.where = where  # its place within the item, e.g. ("failure", "ranks", "{SRC}")


class RankKeyError(RenderError):
    """A rank key that renders to no rank of its variant, or to a rank named twice."""


def render(item: ItemBase, key: str) -> ItemBase:
    """The concrete item of one variant: code with the parameters' assignments rewritten,
    launch.nproc, texts, options and outcomes filled in. render(item, "") is item; KeyError
    for a key that is not one of the item's variants."""
    if key == "":
        return item
    variant = next((v for v in variants_of(item) if v.key == key), None)
    if variant is None:
        raise KeyError(key)
    return render_params(item, variant.params)


def render_params(item: ItemBase, params: Mapping[str, object]) -> ItemBase:
    """The concrete item for these parameter values (see render)."""
    env = environment(item, params)
    data = item.model_dump(mode="python", exclude={"params", "derive", "answer_from"})
    for name in TEXT_FIELDS:
        if data.get(name) is not None and name != "options":
            data[name] = fill(data[name], env)
    nproc = _rank_count(item, params)
    if isinstance(data.get("failure"), dict):
        data["failure"] = render_outcome_ranks(data["failure"], env, nproc, ("failure",))
    if "options" in data:
        data["options"] = _transformed(
            item,
            [
                _render_option(item, option, written, params, env, nproc, index)
                for index, (option, written) in enumerate(
                    zip(data["options"], getattr(item, "options"), strict=True)  # noqa: B009
                )
            ],
            nproc,
        )
    if RESERVED in params and isinstance(data.get("launch"), dict):
        data["launch"] = {**data["launch"], "nproc": params[RESERVED]}
    rewritten = {k: v for k, v in params.items() if k != RESERVED}
    if isinstance(data.get("fixed_code"), str):  # a debug item's fix has the same constants
        data["fixed_code"] = rewrite(data["fixed_code"], rewritten)
    source = source_of(item)
    if source is not None:
        data["code"] = rewrite(source, rewritten)
        data["code_file"] = None
    answer_from = getattr(item, "answer_from", None)
    if answer_from is not None:
        data["answer"] = float(expressions.evaluate(answer_from, env))  # type: ignore[arg-type]
    return type(item).model_validate(data)


def _render_option(
    item: ItemBase,
    option: dict[str, Any],
    written: Any,
    params: Mapping[str, object],
    env: Mapping[str, object],
    nproc: int,
    index: int,
) -> dict[str, Any]:
    transform = option.pop("as_if_outcome", None)
    option = _fill_option(item, option, written, params, env)
    believed = option.pop("_believed", env)
    if transform is not None:  # named as the misconception's values name it ("only-rank-{SRC}")
        option["_transform"] = fill(transform, believed)
    if isinstance(option.get("outcome"), dict):
        where = ("options", index, "outcome")
        option["outcome"] = render_outcome_ranks(option["outcome"], believed, nproc, where)
    return option


def _fill_option(
    item: ItemBase,
    option: dict[str, Any],
    written: Any,
    params: Mapping[str, object],
    env: Mapping[str, object],
) -> dict[str, Any]:
    option = dict(option)
    option["pin"] = written.pin  # excluded from dumps; keep it
    as_if = option.pop("as_if", None)
    if as_if:
        # The misconception's values: its expressions read the true ones, then what derives
        # from a changed parameter is derived again from the changed value.
        changed = {name: expressions.evaluate(source, env) for name, source in as_if.items()}
        believed = _derived(item, {**params, **{k: v for k, v in changed.items() if k in params}})
        believed.update(changed)
        for name in ("text", "outcome"):
            if option.get(name) is not None:
                option[name] = fill(option[name], believed)
        if option.get("feedback") is not None:
            option["feedback"] = fill(option["feedback"], env)
        option["_believed"] = believed  # its rank keys name ranks as the misconception does
        return option
    return {name: fill(value, env) if name != "pin" else value for name, value in option.items()}


def _transformed(item: ItemBase, options: list[dict[str, Any]], nproc: int) -> list[dict[str, Any]]:
    """Each `as_if_outcome:` distractor given the outcome its misconception makes of the
    key's (or, with `as_if:`, of the key's under the misconception's values)."""
    key = next((o for o in options if o["id"] == getattr(item, "answer", None)), None)
    for index, option in enumerate(options):
        name = option.pop("_transform", None)
        if name is None:
            continue
        where = ("options", index, "as_if_outcome")
        base = option.get("outcome") or (key or {}).get("outcome")
        if not isinstance(base, dict):
            raise RenderError(where, "as_if_outcome needs one key with an outcome to derive from")
        try:
            option["outcome"] = outcome_transforms.apply(name, base, nproc)
        except outcome_transforms.TransformError as error:
            raise RenderError(where, str(error)) from None
    return options


def _rank_count(item: ItemBase, params: Mapping[str, object]) -> int:
    launch = getattr(item, "launch", None)
    return int(params.get(RESERVED, getattr(launch, "nproc", 1)))  # type: ignore[call-overload]


def render_outcome_ranks(
    outcome: dict[str, Any], env: Mapping[str, object], nproc: int, where: tuple[Any, ...]
) -> dict[str, Any]:
    """An outcome (as a dict) with its rank keys rendered for one variant: each `{expression}`
    evaluated to a rank number below nproc, and `others` given to every rank not named (so
    `others` with "{SRC}" on 3 ranks and SRC=1 claims ranks 0 and 2). RankKeyError for a key
    rendering outside 0..nproc-1, onto a rank named already, or `others` naming no rank."""
    ranks = outcome.get("ranks")
    if not isinstance(ranks, dict) or not any(
        key == OTHERS or RANK_TEMPLATE.match(key) for key in ranks
    ):
        return outcome
    rendered: dict[str, Any] = {}
    named_by: dict[str, str] = {}
    for key, claim in ranks.items():
        if key == OTHERS:
            continue
        number = rank_number(key, env, nproc, (*where, "ranks", key))
        if number in rendered:
            raise RankKeyError(
                (*where, "ranks", key),
                f"rank key {key!r} names rank {number}, as {named_by[number]!r} does in this "
                "variant: claim each rank once",
            )
        rendered[number], named_by[number] = claim, key
    if OTHERS in ranks:
        rest = [str(rank) for rank in range(nproc) if str(rank) not in rendered]
        if "all" in rendered or not rest:
            raise RankKeyError(
                (*where, "ranks", OTHERS),
                f"`others` names no rank: the outcome names every one of the {nproc} ranks"
                + (" (all)" if "all" in rendered else ""),
            )
        rendered.update({rank: ranks[OTHERS] for rank in rest})
    return {**outcome, "ranks": dict(sorted(rendered.items(), key=_rank_sort))}


def rank_number(key: str, env: Mapping[str, object], nproc: int, where: tuple[Any, ...]) -> str:
    """A rank key as one variant reads it: "all" and numbers as written, `{expression}` the
    rank it evaluates to (RankKeyError unless an integer in 0..nproc-1)."""
    match = RANK_TEMPLATE.match(key)
    if match is None:
        return key
    value = expressions.evaluate(match.group(1), env)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RankKeyError(where, f"rank key {key!r} renders to {value!r}, not a rank number")
    if not 0 <= value < nproc:
        raise RankKeyError(
            where,
            f"rank key {key!r} renders to rank {value}, which does not exist: this variant starts "
            f"{nproc} rank{'s' if nproc > 1 else ''} (0 to {nproc - 1})",
        )
    return str(value)


def _rank_sort(entry: tuple[str, Any]) -> tuple[int, int]:
    return (0, -1) if entry[0] == "all" else (1, int(entry[0]))


def fill(value: Any, env: Mapping[str, object]) -> Any:
    """Fill `{name}` placeholders in every string of a text, list or mapping (`{{` is a brace)."""
    if isinstance(value, str):
        return _format(value, env)
    if isinstance(value, list):
        return [fill(inner, env) for inner in value]
    if isinstance(value, dict):
        return {name: fill(inner, env) for name, inner in value.items()}
    return value


def _format(text: str, env: Mapping[str, object]) -> str:
    shown = {name: _Shown(value) for name, value in env.items()}
    return string.Formatter().vformat(text, (), shown)


class _Shown:
    """A value as texts show it: strings bare, numbers as Python prints them."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        if spec:
            return format(self.value, spec)
        return _shown(self.value)


def _shown(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_shown(inner) for inner in value) + "]"
    return str(value)


def placeholders(text: str) -> Iterator[str]:
    """The names a text's placeholders use; ValueError for a malformed one."""
    for _literal, name, _spec, _conversion in string.Formatter().parse(text):
        if name is None:
            continue
        if not name.isidentifier():
            raise ValueError(f"placeholder {{{name}}} is not a name (write {{{{ for a brace)")
        yield name


def template_strings(item: ItemBase) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Every text of the item that is filled in per variant, with where it is written."""
    data = item.model_dump(mode="python", exclude={"params", "derive", "answer_from"})
    for name in TEXT_FIELDS:
        if data.get(name) is not None:
            yield from _strings(data[name], (name,))


def _strings(value: Any, where: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _strings(inner, (*where, index))
    elif isinstance(value, dict):
        for name, inner in value.items():
            yield from _strings(inner, (*where, name))


def attach_source(item: ItemBase, source: str) -> None:
    """Keep the snippet of a parameterised item whose code is in a file (the loader reads it),
    so that render can rewrite it."""
    if isinstance(item, Parameterised):
        item._source = source


def source_of(item: ItemBase) -> str | None:
    """The item's snippet: inline, or as the loader attached it."""
    code = getattr(item, "code", None)
    if isinstance(code, str):
        return code
    return item._source if isinstance(item, Parameterised) else None


def assignments(source: str) -> dict[str, list[ast.stmt]]:
    """The module-level plain assignments of each name (`NAME = value`, `NAME: T = value`)."""
    found: dict[str, list[ast.stmt]] = {}
    for statement in ast.parse(source).body:
        target: ast.expr | None = None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target = statement.target
        if isinstance(target, ast.Name):
            found.setdefault(target.id, []).append(statement)
    return found


def rewrite(source: str, params: Mapping[str, object]) -> str:
    """The snippet with each parameter's one top-level assignment given the variant's value;
    KeyError for a parameter the snippet does not assign once."""
    found = assignments(source)
    edits: list[tuple[int, int, str]] = []
    lines = source.splitlines(keepends=True)
    starts = [0, *itertools.accumulate(len(line.encode()) for line in lines)]
    for name, value in params.items():
        statements = found.get(name, [])
        if len(statements) != 1:
            raise KeyError(name)
        node = getattr(statements[0], "value")  # noqa: B009
        begin = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        edits.append((begin, end, literal(value)))
    data = source.encode()
    for begin, end, text in sorted(edits, reverse=True):
        data = data[:begin] + text.encode() + data[end:]
    return data.decode()


def literal(value: object) -> str:
    """A parameter value as a Python literal a learner reads (strings in double quotes)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(literal(inner) for inner in value) + "]"
    return repr(value)
