"""One implementation per formula and per procedure.

A formula written twice lets an error in the copy a check runs pass the tests that exercise the other copy,
so no function body may be defined twice: across the project's packages, or in a test that re-implements a
project function instead of calling it.  Bodies are compared as syntax trees with their own argument and
local names renamed in order of appearance (what they call and every constant stay as written), so a copy
with other variable names is caught and two functions that call different things are not.  Bodies smaller
than ``MIN_NODES`` syntax nodes (a batched product, a conversion) are too generic to be a formula.
Test helpers that repeat each other (the same assertion pattern in two test files) are not formulas either.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("numerics", "simulate", "theorems", "engine", "scripts", "benchmarks")
MIN_NODES = 25


_BINDING = re.compile(r"\b(id|arg)='(\w+)'")


def _shape(node: ast.FunctionDef | ast.Lambda) -> tuple[str, int]:
    """A function's or lambda's arguments and body as a dump in which the names it binds (arguments, locals)
    read v0, v1, ... in order of appearance, and its size in syntax nodes."""
    body = [ast.Return(node.body)] if isinstance(node, ast.Lambda) else list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]                                         # the docstring
    function = ast.Module(body=[node.args, *body], type_ignores=[])
    bound = {a.arg for a in ast.walk(function) if isinstance(a, ast.arg)}
    bound |= {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    names = {}
    rename = lambda match: f"{match[1]}='{names.setdefault(match[2], f'v{len(names)}') if match[2] in bound else match[2]}'"
    return _BINDING.sub(rename, ast.dump(function)), sum(1 for _ in ast.walk(function))


def _definitions():
    """(where, shape) of every function and lambda large enough to be a formula, in the packages and tests."""
    for folder in (*PACKAGES, "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.Lambda)):
                    shape, size = _shape(node)
                    if size >= MIN_NODES:
                        yield f"{path.relative_to(ROOT)}:{node.lineno}", shape


def test_no_function_body_is_defined_twice():
    places = defaultdict(list)
    for where, shape in _definitions():
        places[shape].append(where)
    twice = [group for group in places.values()
             if len(group) > 1 and not all(where.startswith("tests/") for where in group)]
    assert not twice, "defined more than once (call one implementation): " + "; ".join(" = ".join(g) for g in twice)


def test_the_comparison_sees_through_names_but_not_through_calls():
    copy = ast.parse("def f(a, b):\n    '''doc'''\n    x = a * b + 2 * a\n    return helper(x) / (1 - b)").body[0]
    renamed = ast.parse("def g(p, q):\n    y = p * q + 2 * p\n    return helper(y) / (1 - q)").body[0]
    other_call = ast.parse("def g(p, q):\n    y = p * q + 2 * p\n    return other(y) / (1 - q)").body[0]
    other_constant = ast.parse("def g(p, q):\n    y = p * q + 3 * p\n    return helper(y) / (1 - q)").body[0]
    assert _shape(copy) == _shape(renamed)
    assert _shape(copy) != _shape(other_call) and _shape(copy) != _shape(other_constant)
    assert _shape(ast.parse("lambda a, b: helper(a * b + 2 * a) / (1 - b)").body[0].value)[0] != _shape(copy)[0]
