"""The "small" mutants of scripts/mutation.py: every numeric literal moved by one unit of its last written digit.

A wrong constant or an off-by-one (1/(n - 1) for the paper's 1/(n - 2), 0.3 for 0.2) is the error a
transcription most often makes and the one a loose check most easily lets through.  cosmic-ray's core
operators swap operators and statements; its number replacer moves a literal by 1 whatever its scale
(1e-5 -> 1.00001), so it has no mutant of the size of a misread digit.  This class has:

- an integer literal k -> k + 1 and k - 1, written in the literal's own base (0 -> 1 and -1, 0x1f -> 0x20);
- a float (or imaginary) literal moved by one unit of its last written digit, in the same notation:
  0.2 -> 0.3 and 0.1, 1.0 -> 1.1 and 0.9, 2e-5 -> 3e-5 and 1e-5, 0.0 -> 0.1 and -0.1.  Where the step down
  would take a nonzero literal to zero -- its only nonzero digit is a 1 in the last written place, as in
  0.1, 1e-5 or 1e-12 -- it is one unit of the next digit instead (0.09, 0.9e-5): zero is not a nearby value
  but the deletion of the term, or a tolerance, step or floor that no longer exists (a division by zero, a
  bisection that never ends), a large error that any test notices and that would flatter the class's kill
  share.  The step up stays one unit of the written digit (1e-5 -> 2e-5).  An integer 1 -> 0 stays: for a
  count or an offset that is the off-by-one.

Each literal gives two mutants, ``_up`` and ``_down``.  The integer right operand of a ``+`` or ``-``
(``n - 2``, ``i += 1``) is the operator ``small/Offset``, every other literal ``small/Number``, so that the
off-by-ones in a size are reported as a family of their own; together they hold each literal once.  The
``occurrence`` counts per operator in source order, as cosmic-ray's does, and a mutant is applied by
finding it again in the module's source and replacing the literal's text between its ``ast`` positions
(a negative value in parentheses, so that ``0 ** 2`` becomes ``(-1) ** 2``).

Left out (:func:`left_out` says which and why, ``scripts/mutation.py --count`` counts them):

- literals inside annotations: the packages use ``from __future__ import annotations``, so an annotation
  is never evaluated;
- docstrings and string constants, booleans: ``ast`` sees text (a parameter default "1/5", a format
  ".3g") and ``True``/``False``, not numeric literals;
- working precision (``precision``), recognised by syntax: any literal in the arguments of mpmath's
  ``workdps``/``workprec``/``extradps``/``extraprec``, in a keyword argument ``dps``, ``extradps``,
  ``extraprec`` or ``maxprec``, in sympy's digits argument (``N(x, 30)``, ``x.evalf(30)``), and in the
  value bound to a name or attribute one of whose ``_``-separated words is ``dps``, ``prec`` or ``guard``
  (``mp.mp.dps = 50``, ``WITNESS_DPS = 20``, ``GUARD_BITS = 30``, ``def f(x, dps=25)``) or to an
  upper-case module constant ending in ``_DIGITS`` (``REFERENCE_EXTRA_DIGITS = 30``).  A digit more or
  less of working precision moves a result in digits no test compares, so these mutants are equivalent
  by construction.  Keyword ``prec`` is not on the list: python-flint's ``arb_series(..., prec=2)`` is a
  series length, and a lower-case ``digits`` or ``rel_digits`` is a count or a tolerance;
- display widths (``display``): the digits argument of ``mp.nstr(x, 6)`` and of python-flint's
  ``x.str(12)``, the width of ``ljust``/``rjust``/``center``/``zfill``, and anything inside an f-string's
  format spec: they change how a number is printed, not what is computed.
"""

from __future__ import annotations

import ast
import re
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

NUMBER, OFFSET = "small/Number", "small/Offset"
DIRECTIONS = {"up": +1, "down": -1}
OPERATORS = tuple(f"{family}_{direction}" for family in (NUMBER, OFFSET) for direction in DIRECTIONS)

PRECISION_CALLS = {"workdps", "workprec", "extradps", "extraprec"}       # every argument
PRECISION_KEYWORDS = {"dps", "extradps", "extraprec", "maxprec"}
PRECISION_WORDS = {"dps", "prec", "guard"}
DIGITS_ARGUMENT = {"N": 1, "evalf": 0}                 # sympy's working digits: the argument's position
# the digits or width argument of a call that only prints (str: python-flint's x.str(n), not the builtin)
DISPLAY_ARGUMENT = {"nstr": 1, "str": 0, "ljust": 0, "rjust": 0, "center": 0, "zfill": 0}


@dataclass(frozen=True)
class SmallMutation:
    """One literal moved one unit: ``text`` at (line, column)-(line, end_column) becomes ``replacement``.

    Lines count from 1, columns in characters from 0 (as parso's, so as cosmic-ray's positions).
    """

    operator: str
    occurrence: int
    line: int
    column: int
    end_column: int
    text: str
    replacement: str


def stepped(text: str, direction: int) -> str:
    """The literal ``text`` moved one unit of its last written digit up (+1) or down (-1), as source text."""
    plain = text.replace("_", "")
    imaginary = plain[-1] in "jJ"
    plain = plain.rstrip("jJ")
    if not imaginary and re.fullmatch(r"0[xXoObB][0-9a-fA-F]+|[0-9]+", plain):
        value = int(plain, 0) + direction
        base = {"x": "x", "o": "o", "b": "b"}.get(plain[1:2].lower(), "d")
        digits = format(abs(value), ("_" if "_" in text else "") + base)
        written = ("-" if value < 0 else "") + (plain[:2] if base != "d" else "") + digits
    else:
        mantissa, _, exponent = plain.replace("E", "e").partition("e")
        decimals = len(mantissa.partition(".")[2])
        old = Decimal(mantissa)
        new = old + direction * Decimal(1).scaleb(-decimals)
        if new == 0 and old != 0:                   # not to zero: one unit of the next digit (module docstring)
            new = old + direction * Decimal(1).scaleb(-decimals - 1)
        written = format(new, "f")
        if "." in mantissa and "." not in written:
            written += "."                          # 1. -> 2., still a float
        written += ("e" + exponent if exponent else "") + ("j" if imaginary else "")
    return f"({written})" if written.startswith("-") else written


def _words(name: str) -> set[str]:
    return set(name.lower().split("_"))


def _callee(call: ast.Call) -> str:
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def _bound_name(target: ast.AST) -> str:
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")


def _is_precision_name(name: str, module_level: bool) -> bool:
    return bool(_words(name) & PRECISION_WORDS) or module_level and name.isupper() and name.endswith("_DIGITS")


def _argument(call: ast.Call, position: int, keyword: str):
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def left_out(tree: ast.Module) -> dict[ast.AST, str]:
    """The subtrees whose literals are not mutated, each with its reason: annotation, precision or display."""
    marked = {}
    module_level = {id(statement) for statement in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            marked[node.returns] = "annotation"
        elif isinstance(node, ast.arg) and node.annotation is not None:
            marked[node.annotation] = "annotation"
        elif isinstance(node, ast.AnnAssign):
            marked[node.annotation] = "annotation"
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_is_precision_name(_bound_name(t), id(node) in module_level) for t in targets):
                marked[node.value] = "precision"
        elif isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            pairs = [*zip(positional[len(positional) - len(node.defaults):], node.defaults),
                     *zip(node.kwonlyargs, node.kw_defaults)]
            marked.update({default: "precision" for parameter, default in pairs
                           if default is not None and _is_precision_name(parameter.arg, False)})
        elif isinstance(node, ast.Call):
            name = _callee(node)
            if name in PRECISION_CALLS:
                marked.update({argument: "precision" for argument in [*node.args, *(k.value for k in node.keywords)]})
            marked.update({k.value: "precision" for k in node.keywords if k.arg in PRECISION_KEYWORDS})
            if name == "str" and not isinstance(node.func, ast.Attribute):
                continue                                # the builtin str(x): x is what is printed
            for table, reason in ((DIGITS_ARGUMENT, "precision"), (DISPLAY_ARGUMENT, "display")):
                if name in table and (argument := _argument(node, table[name], "n")) is not None:
                    marked[argument] = reason
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            marked[node.format_spec] = "display"
    reasons = {}
    for subtree, reason in marked.items():
        for inner in ast.walk(subtree):
            reasons.setdefault(inner, reason)
    return reasons


def _is_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, complex)


def _offsets(tree: ast.Module) -> set[ast.AST]:
    """The integer literals that are the right operand of a + or - (``n - 2``, ``i += 1``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, (ast.Add, ast.Sub)):
            right = node.right if isinstance(node, ast.BinOp) else node.value
            if _is_number(right) and type(right.value) is int:
                found.add(right)
    return found


def character_column(line: str, byte_offset: int) -> int:
    """ast counts columns in UTF-8 bytes, parso (cosmic-ray) and Python strings in characters."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


def literals(source: str) -> tuple[list[tuple[str, int, int, int, str]], dict[str, int]]:
    """The module's mutable literals in source order as (family, line, column, end_column, text), and how
    many literals were left out per reason (``position``: a literal whose ast span does not hold its text)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    reasons, offsets = left_out(tree), _offsets(tree)
    kept, skipped = [], {}
    numbers = sorted((node for node in ast.walk(tree) if _is_number(node)), key=lambda n: (n.lineno, n.col_offset))
    for node in numbers:
        reason = reasons.get(node)
        if reason is None:
            line = lines[node.lineno - 1]
            column = character_column(line, node.col_offset)
            end = character_column(line, node.end_col_offset) if node.end_lineno == node.lineno else -1
            text = line[column:end] if end >= 0 else ""
            if not _writes(text, node.value):
                reason = "position"
            else:
                kept.append((OFFSET if node in offsets else NUMBER, node.lineno, column, end, text))
        if reason is not None:
            skipped[reason] = skipped.get(reason, 0) + 1
    return kept, skipped


def _writes(text: str, value) -> bool:
    try:
        return ast.literal_eval(text) == value and _is_number(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError):
        return False


def small_mutations(source: str) -> list[SmallMutation]:
    """Every small mutation of ``source``: per literal an up and a down step, numbered per operator."""
    mutations, counts = [], {}
    for family, line, column, end, text in literals(source)[0]:
        for direction, sign in DIRECTIONS.items():
            operator = f"{family}_{direction}"
            occurrence = counts[operator] = counts.get(operator, -1) + 1
            mutations.append(SmallMutation(operator, occurrence, line, column, end, text, stepped(text, sign)))
    return mutations


def find(source: str, operator: str, occurrence: int) -> SmallMutation | None:
    return next((m for m in small_mutations(source) if (m.operator, m.occurrence) == (operator, occurrence)), None)


def apply(source: str, mutation: SmallMutation) -> str:
    """``source`` with the mutation's literal replaced (line endings and everything else kept)."""
    lines = source.splitlines(keepends=True)
    line = lines[mutation.line - 1]
    if line[mutation.column:mutation.end_column] != mutation.text:
        raise ValueError(f"line {mutation.line} does not hold {mutation.text!r} at column {mutation.column}")
    lines[mutation.line - 1] = line[:mutation.column] + mutation.replacement + line[mutation.end_column:]
    return "".join(lines)


@contextmanager
def use_mutation(path: Path, operator: str, occurrence: int):
    """Apply the mutation to the file for the duration of a with-block, then put the file back byte for byte.

    Yields ``(original, mutated, mutation)`` texts; ``mutated`` and ``mutation`` are None when the module has
    no such mutation (as cosmic-ray's ``use_mutation`` does).
    """
    original_bytes = path.read_bytes()
    original = original_bytes.decode("utf-8")
    mutation = find(original, operator, occurrence)
    mutated = apply(original, mutation) if mutation else None
    try:
        if mutated is not None:
            path.write_bytes(mutated.encode("utf-8"))
        yield original, mutated, mutation
    finally:
        path.write_bytes(original_bytes)
