"""Parse parameter values such as ``pi/4``, ``3*pi/8`` or ``1e-3``, and conditions over
parameters such as ``sigma > 0 and gamma < 1``, without ``eval``.

A small recursive-descent parser turns the text into an *exact* sympy number:
decimal literals become rationals (``0.2`` is 1/5, not the nearest double) and
``pi`` stays symbolic, so the high-precision evaluator sees ``pi/4`` at any
number of digits.  Only the grammar below is accepted; anything else raises
:class:`ExpressionError` with a message that names the offending text.

    expr   := term (('+' | '-') term)*
    term   := unary (('*' | '/') unary)*
    unary  := ('+' | '-') unary | power
    power  := atom (('**' | '^') unary)?
    atom   := NUMBER | 'pi' | 'e' | FUNCTION '(' expr ')' | '(' expr ')'
              | VARIABLE                      (conditions only: a declared parameter)

    condition  := conjunction ('or' conjunction)*
    conjunction := negation ('and' negation)*
    negation   := 'not' negation | '(' condition ')' | expr COMPARE expr
    COMPARE    := '<' | '<=' | '>' | '>=' | '==' | '!='

A condition is decided exactly at a point (sympy's relational on exact numbers), so
``sigma > 0`` is false at ``sigma = 0`` and true at ``sigma = 1e-300``.
"""

from __future__ import annotations

import re

import sympy

__all__ = ["Condition", "ExpressionError", "parse_condition", "parse_number"]


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
    r"|(?P<name>[A-Za-z_]\w*)|(?P<op>\*\*|<=|>=|==|!=|[-+*/^()<>]))"
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
    def __init__(self, text: str, variables: dict[str, sympy.Symbol] | None = None):
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0
        self.variables = variables or {}

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
            if value in self.variables:
                return self.variables[value]
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


    # --- conditions -----------------------------------------------------------------------------

    def condition(self):
        value = self.conjunction()
        while self.peek() and self.peek()[1] == "or":
            self.take()
            value = sympy.Or(value, self.conjunction())
        return value

    def conjunction(self):
        value = self.negation()
        while self.peek() and self.peek()[1] == "and":
            self.take()
            value = sympy.And(value, self.negation())
        return value

    def negation(self):
        if self.peek() and self.peek()[1] == "not":
            self.take()
            return sympy.Not(self.negation())
        if self.peek() and self.peek()[1] == "(":   # a parenthesised condition, or an expression that starts with '('
            start = self.pos
            self.take()
            try:
                inner = self.condition()
                self.take(")")
                if self.peek() is None or self.peek()[1] in (")", "and", "or"):
                    return inner
            except ExpressionError:
                pass
            self.pos = start
        left = self.expr()
        token = self.peek()
        if token is None or token[1] not in _COMPARE:
            raise ExpressionError(f"expected a comparison (<, <=, >, >=, ==, !=) in {self.text!r}")
        self.take()
        return _COMPARE[token[1]](left, self.expr())


_COMPARE = {"<": sympy.Lt, "<=": sympy.Le, ">": sympy.Gt, ">=": sympy.Ge, "==": sympy.Eq, "!=": sympy.Ne}


class Condition:
    """A condition over named parameters (``parse_condition``), decided exactly at a point."""

    def __init__(self, text: str, expression, names: tuple[str, ...]):
        self.text, self.expression, self.names = text, expression, names

    def __repr__(self) -> str:
        return f"Condition({self.text!r})"

    def holds(self, point) -> bool:
        """Whether the condition holds at ``point`` (name -> exact sympy number, or a Python number);
        a comparison sympy cannot decide exactly is decided at 50 digits."""
        # a float is taken at its exact binary value: nsimplify would guess pi/4 for 0.7853981633974483
        values = {sympy.Symbol(name, real=True): sympy.Rational(point[name]) if isinstance(point[name], float)
                  else sympy.sympify(point[name]) for name in self.names}
        decided = self.expression.subs(values)
        if decided in (sympy.true, sympy.false):
            return bool(decided)
        return bool(decided.replace(lambda e: e.is_Relational,
                                    lambda e: sympy.sympify(bool(e.func(sympy.N(e.lhs - e.rhs, 50), 0)))))


def parse_condition(text: str, names) -> Condition:
    """The condition ``text`` over the parameters ``names`` (grammar in the module docstring), or an
    ExpressionError naming the offending text: an unknown name, a missing comparison, a stray token."""
    if not isinstance(text, str):
        raise ExpressionError(f"expected text, got {type(text).__name__}")
    if len(text) > 4 * _MAX_LENGTH:
        raise ExpressionError(f"condition longer than {4 * _MAX_LENGTH} characters")
    names = tuple(names)
    clash = set(names) & (set(_CONSTANTS) | set(_FUNCTIONS) | {"and", "or", "not"})
    if clash:
        raise ExpressionError(f"a parameter may not be named {sorted(clash)[0]!r} in a condition")
    parser = _Parser(text, {name: sympy.Symbol(name, real=True) for name in names})
    if not parser.tokens:
        raise ExpressionError("empty condition")
    expression = parser.condition()
    if parser.peek() is not None:
        raise ExpressionError(f"unexpected {parser.peek()[1]!r} in {text!r}")
    used = tuple(sorted(str(s) for s in expression.free_symbols))
    return Condition(text, expression, used)


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
