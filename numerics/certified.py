"""Rigorous arithmetic for certified verdicts (``verify.py --certify``): balls and exact numbers.

Two number spaces stand in for mpmath when a claim's formula is to be *proved* rather than evaluated:

- ``BALLS``: python-flint's arb ball arithmetic.  Every operation returns a ball (midpoint, radius)
  guaranteed to contain the exact result, so a value computed from exact inputs is enclosed with a
  rigorous error bound;
- ``EXACT``: sympy's exact numbers (rationals, and exact algebraic or transcendental expressions).

``in_space(fn, space)`` evaluates a formula *written once for mpmath* in either space: the function is
rebuilt with its module's name for mpmath (``mp``) bound to the space, and so is every function of the
project it calls (a negative control's ``lambda u: 2 * _k1(u)`` calls the claim's ``_k1``, rebuilt too).
Operators (``+``, ``*``, ``**``) need nothing: arb and sympy numbers have them.  A formula that calls
what a space has no rigorous version of (``mp.quad``, ``mp.findroot``, ``mp.workprec``) raises
:class:`NotInSpace`; its caller falls back to the formula's computed value (see ``engine.certify``).

The rest is machinery over balls: converting exact inputs (``ball``), integrals of analytic functions
(``real_integral``, arb's rigorous Gauss-Legendre integration with error bounds), the isolated positive
roots of a real polynomial (``positive_real_roots``), the root of an increasing function by bisection
(``increasing_root``) and ball-aware minima and maxima.  Undecidable questions (a ball that straddles
the point where the answer changes) raise :class:`Undecided` with the reason.

python-flint is imported on first use only (``pip install -e '.[certify]'``); without it
:class:`CertificationUnavailable` says so.  Precision is set per call with ``precision(dps)``; the
global precision of flint is restored on exit, and mpmath's is never touched.
"""

from __future__ import annotations

import contextlib
import functools
import math
import types
from fractions import Fraction

import mpmath
import sympy as sp

__all__ = ["CertificationUnavailable", "NotInSpace", "Undecided", "flint", "available", "bits_for", "precision",
           "ball", "is_ball", "radius", "BALLS", "EXACT", "in_space", "real_integral", "gaussian_tail",
           "chi_square_tail", "positive_real_roots", "increasing_root", "lowest", "highest", "ball_text"]

GUARD_BITS = 64          # working bits beyond the requested digits: radii stay far below 10^-dps
INSTALL = "pip install -e '.[certify]' (python-flint)"


class CertificationUnavailable(ImportError):
    """python-flint (arb ball arithmetic) is not installed."""


class NotInSpace(AttributeError):
    """A formula calls a routine that the number space has no rigorous version of (quadrature, a root finder)."""


class Undecided(ValueError):
    """Balls too wide to decide (e.g. a root's real part straddles 0); the message says what."""


def flint():
    """The python-flint module, imported on first use."""
    try:
        import flint as module
    except ImportError:
        raise CertificationUnavailable(f"--certify needs python-flint: {INSTALL}") from None
    return module


def available() -> bool:
    try:
        flint()
    except CertificationUnavailable:
        return False
    return True


def bits_for(dps: int) -> int:
    return int(math.ceil(dps * math.log2(10))) + GUARD_BITS


@contextlib.contextmanager
def precision(dps: int):
    """flint's working precision for ``dps`` digits plus guard bits, restored on exit."""
    with flint().ctx.workprec(bits_for(dps)):
        yield


# --- balls --------------------------------------------------------------------------------------------

_BALL = None


def _ball_type():
    """arb with integer powers taken as powers (python-flint's arb ** 2 is nan for a ball that holds 0, e.g.
    cos(pi/2) ** 2), every arithmetic result a Ball again.  Defined on first use: flint is imported lazily."""
    global _BALL
    if _BALL is None:
        module = flint()
        arb, acb = module.arb, module.acb

        def wrap(result):
            return Ball(result) if type(result) is arb else result

        def binary(name):
            method = getattr(arb, name)
            return lambda self, other: wrap(method(self, other))

        def power(self, exponent):
            if isinstance(exponent, float) and exponent.is_integer():
                exponent = int(exponent)
            if isinstance(exponent, arb) and exponent.is_exact() and exponent.is_integer():
                exponent = int(exponent.unique_fmpz())
            if isinstance(exponent, int):
                return Ball((acb(self) ** exponent).real)
            return wrap(arb.__pow__(self, exponent))

        namespace = {name: binary(name) for name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
                                                     "__truediv__", "__rtruediv__", "__rpow__")}
        namespace.update(__pow__=power, __neg__=lambda self: Ball(arb.__neg__(self)),
                         __pos__=lambda self: self, __abs__=lambda self: Ball(arb.__abs__(self)))
        Ball = type("Ball", (arb,), namespace)
        _BALL = Ball
    return _BALL


# --- converting exact inputs ----------------------------------------------------------------------

def is_ball(x) -> bool:
    module = flint()
    return isinstance(x, (module.arb, module.arb_series))


def ball(value):
    """``value`` as an arb ball: exact where the value is a dyadic rational (ints, floats, mpmath numbers),
    a correctly rounded ball for other rationals, and a rigorous enclosure of an exact sympy expression
    (pi/3, sqrt(2)/2, cos(pi/5)) evaluated operation by operation."""
    module = flint()
    Ball = _ball_type()
    if isinstance(value, Ball) or isinstance(value, module.arb_series):
        return value
    if isinstance(value, module.arb):
        return Ball(value)
    return Ball(_exact_ball(value))


def _exact_ball(value):
    module = flint()
    arb = module.arb
    if isinstance(value, bool):
        return arb(int(value))
    if isinstance(value, int):
        return arb(value)
    if isinstance(value, Fraction):
        return arb(module.fmpq(value.numerator, value.denominator))
    if isinstance(value, float):
        return arb(value)
    if isinstance(value, mpmath.mpf):
        sign, man, exp, _ = value._mpf_
        if not man and exp:            # inf or nan
            raise Undecided(f"{value} is not a finite number")
        return arb((module.fmpz(-man if sign else man), exp))
    if isinstance(value, sp.Basic):
        return _sympy_ball(value)
    raise TypeError(f"cannot enclose {value!r} ({type(value).__name__}) in a ball")


_FUNCTIONS = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
              "exp": "exp", "log": "log", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "erf": "erf",
              "erfc": "erfc", "gamma": "gamma", "loggamma": "lgamma"}


def _sympy_ball(expr):
    module = flint()
    arb = module.arb
    expr = sp.sympify(expr)
    if expr.is_Integer:
        return ball(int(expr))
    if expr.is_Rational:
        return ball(arb(module.fmpq(int(expr.p), int(expr.q))))
    if expr.is_Float:
        # a sympy Float is the rounding of an exact value at its precision: widen by one unit in its last place
        mid = ball(mpmath.mp.make_mpf(expr._mpf_))   # its bits as they are (mpf() would round them to mp.prec)
        return mid + arb(0, abs(mid.mid()) * arb(2) ** (1 - expr._prec)) if mid != 0 else mid
    if expr is sp.pi:
        return ball(arb.pi())
    if expr is sp.E:
        return ball(arb(1).exp())
    if expr.is_Add:
        return sum((_sympy_ball(term) for term in expr.args), ball(0))
    if expr.is_Mul:
        product = ball(1)
        for factor in expr.args:
            product *= _sympy_ball(factor)
        return product
    if expr.is_Pow:
        base, exponent = expr.args
        if exponent.is_Integer:
            return _sympy_ball(base) ** int(exponent)
        if exponent == sp.Rational(1, 2):
            return ball(_sympy_ball(base).sqrt())
        return _sympy_ball(base) ** _sympy_ball(exponent)
    if isinstance(expr, sp.Abs):
        return abs(_sympy_ball(expr.args[0]))
    name = _FUNCTIONS.get(type(expr).__name__)
    if name is not None and len(expr.args) == 1:
        return ball(getattr(_sympy_ball(expr.args[0]), name)())
    raise TypeError(f"cannot enclose the sympy expression {expr} in a ball")


def radius(x) -> float:
    """A ball's radius as a float rounded up (0 for exact numbers)."""
    if is_ball(x):
        return float(x.rad()) * (1 + 2**-40)
    return 0.0


def ball_text(x, digits: int = 20) -> str:
    """'[midpoint +/- radius]' (arb's decimal form, which rounds outwards), or the exact number as sympy prints it."""
    return x.str(digits, radius=True) if is_ball(x) else str(x)


# --- number spaces that stand in for mpmath --------------------------------------------------------

class _Space:
    """A namespace with mpmath's names for a number type; a name it lacks raises NotInSpace."""

    name = ""

    def __getattr__(self, attribute):
        raise NotInSpace(f"mp.{attribute} has no {self.name} version")


class _Balls(_Space):
    name = "ball-arithmetic"

    @staticmethod
    def mpf(x):
        return ball(x)

    mpmathify = mpf

    @property
    def pi(self):
        return ball(flint().arb.pi())

    @property
    def e(self):
        return ball(flint().arb(1).exp())

    @property
    def inf(self):
        return ball(flint().arb.pos_inf())

    @staticmethod
    def fsum(terms):
        return sum((ball(t) for t in terms), ball(0))

    @staticmethod
    def fabs(x):
        return abs(ball(x))

    @staticmethod
    def hypot(x, y):
        return ball((ball(x) * ball(x) + ball(y) * ball(y)).sqrt())

    @staticmethod
    def cbrt(x):
        return ball(ball(x).root(3))

    @staticmethod
    def atan2(y, x):
        return ball(flint().arb.atan2(ball(y), ball(x)))

    @staticmethod
    def npdf(x, mu=0, sigma=1):
        z = (ball(x) - ball(mu)) / ball(sigma)
        return ball((-z * z / 2).exp() / (2 * flint().arb.pi()).sqrt() / ball(sigma))

    @staticmethod
    def ncdf(x, mu=0, sigma=1):
        return ball((-(ball(x) - ball(mu)) / (ball(sigma) * flint().arb(2).sqrt())).erfc() / 2)


for _name, _method in {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "tan": "tan",
                       "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
                       "erf": "erf", "erfc": "erfc", "gamma": "gamma", "loggamma": "lgamma", "expm1": "expm1",
                       "log1p": "log1p"}.items():
    setattr(_Balls, _name, staticmethod(lambda x, _m=_method: ball(getattr(ball(x), _m)())))


def _exact(x):
    if isinstance(x, sp.Basic):
        return x
    if isinstance(x, float):
        return sp.Rational(x)                    # the float's exact binary value
    if isinstance(x, mpmath.mpf):
        man, exp = x.man_exp                   # the mpf's exact binary value
        return sp.Integer(man) * sp.Integer(2) ** exp
    return sp.sympify(x, rational=True)


class _Exact(_Space):
    name = "exact"
    pi, e, inf = sp.pi, sp.E, sp.oo
    mpf = mpmathify = staticmethod(_exact)

    @staticmethod
    def fsum(terms):
        return sp.Add(*(_exact(t) for t in terms))

    @staticmethod
    def fabs(x):
        return sp.Abs(_exact(x))

    @staticmethod
    def hypot(x, y):
        return sp.sqrt(_exact(x) ** 2 + _exact(y) ** 2)

    @staticmethod
    def cbrt(x):
        return sp.cbrt(_exact(x))


for _name, _function in {"sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan,
                         "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "sinh": sp.sinh, "cosh": sp.cosh,
                         "tanh": sp.tanh, "erf": sp.erf, "erfc": sp.erfc, "gamma": sp.gamma}.items():
    setattr(_Exact, _name, staticmethod(lambda x, _f=_function: _f(_exact(x))))

BALLS, EXACT = _Balls(), _Exact()

_FOREIGN = ("mpmath", "sympy", "torch", "numpy", "flint", "builtins")


def _is_mpmath(value) -> bool:
    return value is mpmath or value is mpmath.mp


def _global_names(code) -> set:
    """Every global name a code object (and the functions and lambdas defined inside it) may look up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def in_space(fn, space, _memo=None):
    """``fn`` rebuilt so that its ``mp`` (and that of the project functions it calls) is ``space``.

    Only the names ``fn`` looks up are rebound; the module itself is untouched, so the formula as the
    checks call it is unchanged.  Functions of mpmath, sympy, torch and numpy are left as they are."""
    memo = {} if _memo is None else _memo
    if not isinstance(fn, types.FunctionType) or (fn.__module__ or "").split(".")[0] in _FOREIGN:
        return fn
    if fn in memo:
        return memo[fn]
    namespace = dict(fn.__globals__)
    cells = tuple(types.CellType() for _ in fn.__closure__) if fn.__closure__ else None
    rebuilt = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, cells)
    memo[fn] = rebuilt                 # before rebinding: a function that calls itself gets its rebuilt self
    convert = lambda value: space if _is_mpmath(value) else in_space(value, space, memo)   # noqa: E731
    for name in _global_names(fn.__code__):
        if name in namespace:
            namespace[name] = convert(namespace[name])
    for cell, original in zip(cells or (), fn.__closure__ or ()):
        try:
            cell.cell_contents = convert(original.cell_contents)
        except ValueError:             # a free variable not bound yet
            pass
    rebuilt.__kwdefaults__ = fn.__kwdefaults__
    return rebuilt


# --- integrals, roots, extrema ---------------------------------------------------------------------

def real_integral(integrand, a, b):
    """int_a^b f(x) dx for f real on [a, b] and analytic near it, written with ball operations that work on
    arb's complex balls (acb): arb's adaptive Gauss-Legendre integration with rigorous error bounds."""
    module = flint()
    value = module.acb.integral(lambda x, analytic: integrand(x), ball(a), ball(b))
    if not value.imag.contains(0):
        raise Undecided(f"the integral of a real function came out complex: {value}")
    if not value.real.is_finite():
        raise Undecided("the integrand is not analytic near the path (the integral's bound is infinite)")
    return value.real


def gaussian_tail(t):
    """An upper bound on P(z > t) = Q(t) for a standard normal z and t > 0 (Q(t) <= phi(t) / t)."""
    t = ball(t)
    return ((-t * t / 2).exp() / (2 * flint().arb.pi()).sqrt() / t).upper()


def chi_square_tail(n: int, x):
    """An upper bound on P(s > x) for s ~ chi-square(n) and x > n (Chernoff: E e^(u s) / e^(u x) at its
    best u = (1 - n/x)/2): (x/n)^(n/2) e^((n - x)/2)."""
    x = ball(x)
    return ((x / n) ** (flint().arb(n) / 2) * ((n - x) / 2).exp()).upper()


def positive_real_roots(coefficients):
    """The positive real roots of a real polynomial (coefficients highest degree first, balls or exact
    numbers), each as a ball that isolates it: exact root isolation (flint) for rational coefficients,
    ball-coefficient isolation otherwise, where a root counts as real when its box is the only one that
    meets its own mirror image in the real axis (the roots of a real polynomial come in conjugate pairs).
    Raises Undecided where isolation fails (a multiple root) or a root's sign or reality is not decided."""
    module = flint()
    exact = all(isinstance(c, (int, Fraction)) or (isinstance(c, sp.Basic) and c.is_Rational) for c in coefficients)
    if exact:
        fractions = [module.fmpq(int(sp.Rational(c).p), int(sp.Rational(c).q)) for c in coefficients]
        poly = module.fmpq_poly(list(reversed(fractions)))
        roots = []
        for root, multiplicity in poly.complex_roots():
            if multiplicity != 1:
                raise Undecided(f"a multiple root {root}")
            if root.imag == 0:
                roots.append(root.real)
        reals = roots
    else:
        poly = module.arb_poly([ball(c) for c in reversed(coefficients)])
        try:
            boxes = poly.complex_roots(tol=module.arb(2) ** (8 - module.ctx.prec), maxprec=4 * module.ctx.prec)
        except (ValueError, ArithmeticError) as error:
            raise Undecided(f"root isolation failed ({error}): a multiple root, or coefficients too wide") from None
        reals = []
        for i, box in enumerate(boxes):
            if not box.imag.contains(0):
                continue
            mirror = module.acb(box.real, -box.imag)
            if any(j != i and other.overlaps(mirror) for j, other in enumerate(boxes)):
                raise Undecided(f"the root {box} is not decided real or complex")
            reals.append(box.real)
    positive = []
    for root in reals:
        if root > 0:
            positive.append(root)
        elif not root < 0:
            raise Undecided(f"the real root {root} is not decided positive or negative")
    return sorted(positive, key=lambda r: float(r.mid()))


def increasing_root(function, low, high, steps: int | None = None):
    """The root of a function increasing on [low, high] with function(low) < 0 < function(high), enclosed by
    bisection in balls: a ball whose ends have opposite certified signs.  Raises Undecided if the bracket
    does not hold."""
    low, high = ball(low), ball(high)
    if not (function(low) < 0 and function(high) > 0):
        raise Undecided("the bracket does not straddle the root with certified signs")
    steps = steps or flint().ctx.prec
    for _ in range(steps):
        middle = ((low + high) / 2).mid()
        value = function(flint().arb(middle))
        if value < 0:
            low = flint().arb(middle)
        elif value > 0:
            high = flint().arb(middle)
        else:                          # the midpoint's sign is not decided: it is within rounding of the root
            break
    return low.union(high)


def lowest(values):
    """An enclosure of the minimum of balls (Python's min compares balls, which is undecided where they overlap)."""
    return functools.reduce(lambda a, b: a.min(b), [ball(v) for v in values])


def highest(values):
    """An enclosure of the maximum of balls (as ``lowest``)."""
    return functools.reduce(lambda a, b: a.max(b), [ball(v) for v in values])
