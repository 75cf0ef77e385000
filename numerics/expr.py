"""Parse parameter values such as ``pi/4``, ``3*pi/8`` or ``1e-3`` without ``eval``.

A small recursive-descent parser turns the text into an *exact* sympy number:
decimal literals become rationals (``0.2`` is 1/5, not the nearest double) and
``pi`` stays symbolic, so the high-precision evaluator sees ``pi/4`` at any
number of digits.  Only the grammar below is accepted; anything else raises
:class:`ExpressionError` with a message that names the offending text.

    expr   := term (('+' | '-') term)*
    term   := unary (('*' | '/') unary)*
    unary  := ('+' | '-') unary | power
    power  := atom (('**' | '^') unary)?
    atom   := NUMBER | 'pi' | 'e' | NAME '(' expr ')' | '(' expr ')'
"""

from __future__ import annotations

import re

import sympy

__all__ = ["ExpressionError", "parse_number"]


class ExpressionError(ValueError):
    """The text is not a number or a simple arithmetic expression."""


_CONSTANTS = {"pi": sympy.pi, "e": sympy.E}
_FUNCTIONS = {
    "sqrt": sympy.sqrt,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "acos": sympy.acos,
    "arccos": sympy.acos,
    "asin": sympy.asin,
    "arcsin": sympy.asin,
    "atan": sympy.atan,
    "arctan": sympy.atan,
    "exp": sympy.exp,
    "log": sympy.log,
}
_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_]\w*)|(?P<op>\*\*|[-+*/^()]))"
)
_MAX_LENGTH = 200


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ExpressionError(f"unexpected character {text[pos:].strip()[0]!r} in {text!r}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            wanted = repr(value) if value else "a value"
            raise ExpressionError(f"expected {wanted} in {self.text!r}")
        self.pos += 1
        return token

    def parse(self) -> sympy.Expr:
        if not self.tokens:
            raise ExpressionError("empty value")
        value = self.expr()
        if self.peek() is not None:
            raise ExpressionError(f"unexpected {self.peek()[1]!r} in {self.text!r}")
        return value

    def expr(self) -> sympy.Expr:
        value = self.term()
        while self.peek() and self.peek()[1] in "+-":
            op = self.take()[1]
            rhs = self.term()
            value = value + rhs if op == "+" else value - rhs
        return value

    def term(self) -> sympy.Expr:
        value = self.unary()
        while self.peek() and self.peek()[1] in ("*", "/"):
            op = self.take()[1]
            rhs = self.unary()
            if op == "/" and rhs == 0:
                raise ExpressionError(f"division by zero in {self.text!r}")
            value = value * rhs if op == "*" else value / rhs
        return value

    def unary(self) -> sympy.Expr:
        if self.peek() and self.peek()[1] in "+-":
            sign = self.take()[1]
            value = self.unary()
            return -value if sign == "-" else value
        return self.power()

    def power(self) -> sympy.Expr:
        base = self.atom()
        if self.peek() and self.peek()[1] in ("**", "^"):
            self.take()
            exponent = self.unary()
            if abs(exponent) > 1000:
                raise ExpressionError(f"exponent too large in {self.text!r}")
            return base**exponent
        return base

    def atom(self) -> sympy.Expr:
        kind, value = self.take()
        if kind == "number":
            return sympy.Rational(value)
        if kind == "name":
            if value in _CONSTANTS:
                return _CONSTANTS[value]
            if value in _FUNCTIONS:
                self.take("(")
                argument = self.expr()
                self.take(")")
                return _FUNCTIONS[value](argument)
            raise ExpressionError(f"unknown name {value!r} in {self.text!r}")
        if value == "(":
            inner = self.expr()
            self.take(")")
            return inner
        raise ExpressionError(f"unexpected {value!r} in {self.text!r}")


def parse_number(text: str) -> sympy.Expr:
    """Return the exact real number that ``text`` denotes.

    >>> parse_number("3*pi/8")
    3*pi/8
    >>> parse_number("1e-3")
    1/1000
    """
    if not isinstance(text, str):
        raise ExpressionError(f"expected text, got {type(text).__name__}")
    if len(text) > _MAX_LENGTH:
        raise ExpressionError(f"value longer than {_MAX_LENGTH} characters")
    value = _Parser(text).parse()
    if not value.is_real or not value.is_finite:
        raise ExpressionError(f"{text!r} is not a finite real number")
    return value
