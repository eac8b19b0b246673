"""Evaluate the small expressions of `derive:` and `as_if:` by walking their ast (never eval).

Arithmetic, comparisons, `and`/`or`/`not`, `a if c else b`, lists, indexing, comprehensions and a
few functions (sum, range, min, max, len, abs, round, sorted, int, float, str, join); sizes are
bounded so that no expression can exhaust memory or time. Pure: the standard library only.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

MAX_SIZE = 10_000  # elements of a range or list, characters of a string
MAX_EXPONENT = 64
MAX_LENGTH = 400  # characters of an expression
MAX_INTEGER = 2**256


def _join(items: Any, separator: str = " ") -> str:
    return separator.join(str(item) for item in items)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sum": sum,
    "range": range,
    "min": min,
    "max": max,
    "len": len,
    "abs": abs,
    "round": round,
    "sorted": sorted,
    "int": int,
    "float": float,
    "str": str,
    "list": list,
    "join": _join,
}
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class ExpressionError(ValueError):
    """An expression that is not allowed or cannot be evaluated."""


# What an expression may be made of; checked before it ever runs, so a bad one is refused
# where it is written, not when some variant first evaluates it.
_ALLOWED = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Store, ast.BinOp, ast.UnaryOp,
    ast.BoolOp, ast.Compare, ast.IfExp, ast.List, ast.Tuple, ast.Subscript, ast.Slice,
    ast.Call, ast.ListComp, ast.GeneratorExp, ast.comprehension, ast.operator, ast.unaryop,
    ast.boolop, ast.cmpop,
)  # fmt: skip


def names(source: str) -> set[str]:
    """The free names an expression reads; ExpressionError if it does not parse or uses
    anything not allowed (an attribute, a lambda, a call of another function)."""
    tree = _parse(source)
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ExpressionError(f"{type(node).__name__} is not allowed in {source!r}")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
        ):
            raise ExpressionError(
                f"only these functions may be called: {', '.join(sorted(FUNCTIONS))}"
            )
    bound = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.comprehension)
        for target in ast.walk(node.target)
        if isinstance(target, ast.Name)
    }
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return used - bound - set(FUNCTIONS)


def evaluate(source: str, env: Mapping[str, object]) -> object:
    """The value of an expression with these names; ExpressionError for anything else."""
    try:
        return _Evaluator(env).visit(_parse(source).body)
    except ExpressionError:
        raise
    except (ArithmeticError, TypeError, ValueError, IndexError, KeyError) as error:
        raise ExpressionError(f"{source!r}: {type(error).__name__}: {error}") from None


def _parse(source: str) -> ast.Expression:
    if len(source) > MAX_LENGTH:
        raise ExpressionError(f"an expression is at most {MAX_LENGTH} characters")
    try:
        return ast.parse(source.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionError(f"{source!r} is not an expression: {error.msg}") from None


def _bounded(value: Any) -> Any:
    if isinstance(value, int) and abs(value) > MAX_INTEGER:
        raise ExpressionError("a number beyond 2**256")
    if isinstance(value, str | list | tuple | range) and len(value) > MAX_SIZE:
        raise ExpressionError(f"a value of more than {MAX_SIZE} elements")
    return value


class _Evaluator(ast.NodeVisitor):
    def __init__(self, env: Mapping[str, object]) -> None:
        self.env = dict(env)

    def generic_visit(self, node: ast.AST) -> Any:
        raise ExpressionError(f"{type(node).__name__} is not allowed in an expression")

    def visit_Constant(self, node: ast.Constant) -> Any:
        if not isinstance(node.value, bool | int | float | str) and node.value is not None:
            raise ExpressionError(f"constant {node.value!r} is not allowed")
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id in self.env:
            return self.env[node.id]
        raise ExpressionError(f"unknown name {node.id!r}")

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.visit(node.left), self.visit(node.right)
        function = _BINARY.get(type(node.op))
        if function is None:
            raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
        if isinstance(node.op, ast.Pow) and isinstance(right, int | float) and right > MAX_EXPONENT:
            raise ExpressionError(f"an exponent above {MAX_EXPONENT}")
        if isinstance(node.op, ast.Mult) and any(isinstance(v, str | list) for v in (left, right)):
            size = [len(v) if isinstance(v, str | list) else v for v in (left, right)]
            if (
                isinstance(size[0], int)
                and isinstance(size[1], int)
                and size[0] * size[1] > MAX_SIZE
            ):
                raise ExpressionError(f"a value of more than {MAX_SIZE} elements")
        return _bounded(function(left, right))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        if isinstance(node.op, ast.Not):
            return not value
        raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        value: Any = None
        for operand in node.values:
            value = self.visit(operand)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.visit(comparator)
            function = _COMPARE.get(type(op))
            if function is None:
                raise ExpressionError(f"comparison {type(op).__name__} is not allowed")
            if not function(left, right):
                return False
            left = right
        return True

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)

    def visit_List(self, node: ast.List) -> Any:
        return _bounded([self.visit(element) for element in node.elts])

    def visit_Tuple(self, node: ast.Tuple) -> Any:
        return _bounded([self.visit(element) for element in node.elts])

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        value = self.visit(node.value)
        if isinstance(node.slice, ast.Slice):
            parts = [node.slice.lower, node.slice.upper, node.slice.step]
            return value[slice(*(None if p is None else self.visit(p) for p in parts))]
        return value[self.visit(node.slice)]

    def visit_Call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ExpressionError(
                f"only these functions may be called: {', '.join(sorted(FUNCTIONS))}"
            )
        if node.keywords:
            raise ExpressionError("functions take positional arguments only")
        arguments = [self.visit(argument) for argument in node.args]
        return _bounded(FUNCTIONS[node.func.id](*arguments))

    def visit_ListComp(self, node: ast.ListComp) -> Any:
        return _bounded(list(self._comprehend(node.elt, node.generators)))

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> Any:
        return _bounded(list(self._comprehend(node.elt, node.generators)))

    def _comprehend(self, element: ast.expr, generators: list[ast.comprehension]) -> Any:
        if len(generators) != 1 or generators[0].is_async:
            raise ExpressionError("a comprehension takes one `for`")
        loop = generators[0]
        if not isinstance(loop.target, ast.Name):
            raise ExpressionError("a comprehension's `for` names one variable")
        values = list(_bounded(self.visit(loop.iter)))
        saved = self.env.get(loop.target.id, _MISSING)
        try:
            for value in values:
                self.env[loop.target.id] = value
                if all(self.visit(condition) for condition in loop.ifs):
                    yield self.visit(element)
        finally:
            if saved is _MISSING:
                self.env.pop(loop.target.id, None)
            else:
                self.env[loop.target.id] = saved


_MISSING = object()
