"""Deep linear networks f(x) = x^T W_1 W_2 ... W_L trained by full-batch gradient descent.

Shapes: W_l is (trials, d, d) for l < L and W_L is (trials, d, 1), so a batch of
independent networks trains as one tensor program.  L = 1 is plain linear
regression with a single (trials, d, 1) weight.

The loss is the papers' empirical objective 1/(2n) ||X beta - y||^2 with
beta = W_1 ... W_L.  Its gradient with respect to W_l is
(W_1 ... W_{l-1})^T g (W_{l+1} ... W_L)^T with g = X^T (X beta - y) / n, which
is what :func:`train` computes, without autograd, from prefix and suffix products.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import torch

from simulate.device import decompose
from simulate.rkc import rkc_stages, stages_for

__all__ = ["Objective", "TrainResult", "balance_margin", "empirical", "end_to_end", "init_weights", "population",
           "train", "train_two_layer"]


def init_weights(trials: int, d: int, depth: int, alpha: float, kind: str, gen: torch.Generator) -> list[torch.Tensor]:
    """alpha * Wbar_l for l = 1..L.

    kind = "gaussian": i.i.d. N(0, 1/d) entries, the paper's experiments (App. D.1);
        for L >= 2 it does *not* meet eq. (22), because the smallest singular
        value of a square Gaussian matrix is O(1/sqrt(d)) - see :func:`balance_margin`.
    kind = "eq22": Wbar_l = sqrt(L - l + 1) Q_l with Q_l Haar-orthogonal (l < L) and
        Wbar_L a unit vector, so Wbar_l^T Wbar_l - Wbar_{l+1} Wbar_{l+1}^T >= I:
        eq. (22) with lambda = 1.
    """
    opts = dict(generator=gen, device=gen.device, dtype=torch.float64)
    weights = []
    for layer in range(1, depth + 1):
        cols = 1 if layer == depth else d
        if kind == "gaussian":
            w = torch.randn(trials, d, cols, **opts) / math.sqrt(d)
        elif kind == "eq22":
            if layer == depth:
                w = torch.randn(trials, d, 1, **opts)
                w = w / w.norm(dim=1, keepdim=True)
            else:
                q, r = decompose(torch.linalg.qr, torch.randn(trials, d, d, **opts))
                q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)  # Haar
                w = math.sqrt(depth - layer + 1) * q
        else:
            raise ValueError(f"unknown initialisation {kind!r} (choose gaussian or eq22)")
        weights.append(alpha * w)
    return weights


def balance_margin(weights: list[torch.Tensor]) -> torch.Tensor:
    """Per trial, min over l of lambda_min(W_l^T W_l - W_{l+1} W_{l+1}^T).

    Eq. (22) asks this to be >= alpha^2 lambda > 0 at initialisation; gradient
    flow conserves the matrices, so the margin also measures how far gradient
    descent's discretisation has drifted from the flow.
    """
    margins = [
        decompose(torch.linalg.eigvalsh, a.transpose(-1, -2) @ a - b @ b.transpose(-1, -2))[..., 0]
        for a, b in zip(weights[:-1], weights[1:])
    ]
    if not margins:
        return torch.full((weights[0].shape[0],), math.inf, dtype=weights[0].dtype, device=weights[0].device)
    return torch.stack(margins).amin(dim=0)


def end_to_end(weights: list[torch.Tensor]) -> torch.Tensor:
    """beta = W_1 ... W_L, shape (trials, d)."""
    beta = weights[-1]
    for w in reversed(weights[:-1]):
        beta = w @ beta
    return beta.squeeze(-1)


@dataclass
class TrainResult:
    weights: list[torch.Tensor]
    beta: torch.Tensor          # (trials, d) end-to-end vector
    loss: torch.Tensor          # (trials,) final objective (1/(2n) ||X beta - y||^2 for data)
    grad_norm: torch.Tensor     # (trials,) final norm of the gradient with respect to beta
    steps: int
    converged: torch.Tensor     # (trials,) bool: grad_norm <= tol * ||b||
    evaluations: int = 0        # gradient evaluations (0: one per step, GD)
    # (trials,) a bound on the end point's distance to the limit it converges to, where the trainer certifies one
    distance: torch.Tensor | None = None


@dataclass
class Objective:
    """A quadratic loss of the end-to-end vector, 0.5 beta^T H beta - b^T beta + const, given by
    how to apply H, the vector b, lambda_max(H), and the loss itself computed from its
    residual (not from the expanded quadratic, which cancels catastrophically near 0)."""

    apply_h: Callable[[torch.Tensor], torch.Tensor]
    b: torch.Tensor             # (trials, d)
    lam_max: torch.Tensor       # (trials,)
    loss: Callable[[torch.Tensor], torch.Tensor]

    def gradient(self, beta: torch.Tensor) -> torch.Tensor:
        return self.apply_h(beta) - self.b


def empirical(X: torch.Tensor, y: torch.Tensor) -> Objective:
    """The papers' training objective 1/(2n) ||y - X beta||^2 on data (X, y)."""
    n = X.shape[-2]
    Xt = X.transpose(-1, -2)
    return Objective(
        apply_h=lambda beta: (Xt @ (X @ beta.unsqueeze(-1))).squeeze(-1) / n,
        b=(Xt @ y.unsqueeze(-1)).squeeze(-1) / n,
        lam_max=decompose(torch.linalg.eigvalsh, Xt @ X / n)[..., -1] if n >= X.shape[-1]
        else decompose(torch.linalg.eigvalsh, X @ Xt / n)[..., -1],
        loss=lambda beta: ((X @ beta.unsqueeze(-1)).squeeze(-1) - y).pow(2).sum(1) / (2 * n),
    )


def population(target: torch.Tensor) -> Objective:
    """The population loss for x ~ N(0, I) and noiseless labels x^T target:
    E (x^T beta - x^T target)^2 / 2 = ||beta - target||^2 / 2 (Features-are-fate eq. 4)."""
    ones = torch.ones(target.shape[0], dtype=target.dtype, device=target.device)
    return Objective(apply_h=lambda beta: beta, b=target, lam_max=ones, loss=lambda beta: (beta - target).pow(2).sum(1) / 2)


def _smoothness(weights: list[torch.Tensor]) -> torch.Tensor:
    """sum_l prod_{k != l} ||W_k||_F^2 per trial: with lambda_max(H) it bounds the
    curvature of the loss along the current weights (Frobenius >= operator norm)."""
    sq = torch.stack([w.flatten(1).pow(2).sum(1) for w in weights])  # (L, trials)
    total = torch.zeros_like(sq[0])
    for l in range(len(weights)):
        total = total + torch.cat([sq[:l], sq[l + 1:]]).prod(dim=0)
    return total


def _second_order_bound(weights: list[torch.Tensor], norms: torch.Tensor | None = None) -> torch.Tensor:
    """c_t = max_l sum_{l' != l} prod_{k != l, l'} ||W_k||_F per trial: ||g|| c_t bounds the curvature that
    the product's own bend adds to the loss's (see :func:`_curvature_bound`)."""
    norms = _layer_norms(weights) if norms is None else norms
    depth = len(weights)
    rows = []
    for l in range(depth):
        row = torch.zeros_like(norms[0])
        for m in range(depth):
            if m != l:
                others = [k for k in range(depth) if k not in (l, m)]
                row = row + (norms[others].prod(dim=0) if others else torch.ones_like(row))
        rows.append(row)
    return torch.stack(rows).amax(dim=0)


def _curvature_bound(objective: Objective, weights: list[torch.Tensor], grad_beta: torch.Tensor) -> torch.Tensor:
    """K_t = lambda_max(H) s_t + ||g|| c_t >= ||Hess_W l(beta(W))|| per trial, for depth L >= 3.

    The Hessian of l(beta(W)) in the weights is J^T H J + sum_i g_i Hess(beta_i), g = grad l(beta),
    J = d beta / dW.  Along a direction dW = (dW_1, ..., dW_L) of unit norm (sum_l ||dW_l||_F^2 = 1):

    - J dW = sum_l W_1 ... dW_l ... W_L, so ||J dW|| <= sum_l ||dW_l|| prod_{k != l} ||W_k|| <= sqrt(s_t)
      (Cauchy-Schwarz; Frobenius norms bound operator norms), s_t = sum_l prod_{k != l} ||W_k||_F^2
      (:func:`_smoothness`), and dW^T J^T H J dW <= lambda_max(H) s_t.
    - beta is multilinear, so its second derivative along dW is sum over ordered pairs l != l' of the product
      with W_l, W_l' replaced by dW_l, dW_l'.  Hence |g^T D^2 beta [dW, dW]| <= ||g|| x^T M x with
      x_l = ||dW_l||_F (||x|| = 1) and M_ll' = prod_{k != l, l'} ||W_k||_F for l != l', M_ll = 0.  M is
      symmetric and non-negative, so ||M|| <= its largest row sum, c_t (:func:`_second_order_bound`).

    Near the saddle at 0 both terms are small (s_t ~ alpha^(2(L-1)), c_t ~ alpha^(L-2)), and the step
    step_scale / K_t grows as the true curvature shrinks instead of stopping at a fixed floor.  No floor
    is needed: with h = step_scale / K_t, layer l moves by h ||dl/dW_l|| <= step_scale
    prod_{k != l} ||W_k|| / (||g|| c_t) <= step_scale / sum_{l' != l} (1 / ||W_l'||), i.e. by at most
    step_scale / (L - 1) times the other layers' (harmonic mean) norm, however small they all are.  K_t is
    clamped away from 0 only for weights that are exactly 0 (or a zero gradient), where every step is 0.
    """
    norms = _layer_norms(weights)
    sq = norms.pow(2)
    smoothness = torch.zeros_like(sq[0])
    for l in range(len(weights)):
        smoothness = smoothness + torch.cat([sq[:l], sq[l + 1:]]).prod(dim=0)
    bound = objective.lam_max * smoothness + grad_beta.norm(dim=1) * _second_order_bound(weights, norms)
    return bound.clamp(min=torch.finfo(bound.dtype).tiny)


def _layer_norms(weights: list[torch.Tensor]) -> torch.Tensor:
    """||W_l||_F per layer and trial, (L, trials).  vector_norm reduces in place: w.pow(2) would be a fresh
    (trials, d, d) tensor per layer and step, whose pages the kernel zeroes (2.7 of 12.4 ms of an RK4 step
    at 40 draws, d = 60, L = 3, with the dense stages)."""
    return torch.stack([torch.linalg.vector_norm(w, dim=(-2, -1)) for w in weights])


def _deep_gradients(objective: Objective, weights: list[torch.Tensor], shifts: list[list]):
    """:func:`_layer_gradients` at the weights W_l - sum_i s_i a_i b_i (``shifts[l]``: pairs (s_i a_i, b_i),
    a_i (trials, d, 1), b_i (trials, 1, cols)), without forming them or the gradients: every layer's
    gradient is the outer product a_l b_l of prefix_t = (W_1 ... W_{l-1})^T g and suffix^T = (W_{l+1} ... W_L)^T,
    and the shifted weights enter only through products with vectors.  Returns (beta, g, [(a_l, b_l)])."""
    depth = len(weights)

    def times(l, v):                                                    # (shifted W_l) @ v
        out = weights[l] @ v
        for sa, b in shifts[l]:
            out = out - sa @ (b @ v)
        return out

    def times_t(l, u):                                                  # (shifted W_l)^T @ u
        out = weights[l].transpose(-1, -2) @ u
        for sa, b in shifts[l]:
            out = out - b.transpose(-1, -2) @ (sa.transpose(-1, -2) @ u)
        return out

    last = weights[-1].clone()                                          # not a view: train updates in place
    for sa, b in shifts[-1]:
        last = last - sa @ b
    suffix, acc = [None] * depth, last                                  # suffix[l] = W_{l+1} ... W_L
    for l in reversed(range(depth - 1)):
        suffix[l] = acc
        acc = times(l, acc)
    grad_beta = objective.gradient(acc.squeeze(-1)).unsqueeze(-1)      # (trials, d, 1)
    ones = torch.ones_like(grad_beta[:, :1])                            # (trials, 1, 1): the last layer's b
    prefix_t, factors = grad_beta, []
    for l in range(depth):
        factors.append((prefix_t, ones if suffix[l] is None else suffix[l].transpose(-1, -2)))
        if l + 1 < depth:
            prefix_t = times_t(l, prefix_t)
    return acc.squeeze(-1), grad_beta.squeeze(-1), factors


def _train_deep(objective, weights, *, tol, max_steps, step_scale, frozen, check_every, history, method, times):
    """:func:`train` for L >= 3, the step from :func:`_curvature_bound`.  The same iteration as the dense loop, with
    each layer's stage gradients kept as rank-one factors: a step then forms one (trials, d, d) update per
    layer (a rank-<= 4 product, subtracted in place) instead of a dozen dense temporaries."""
    weights = [w.clone() for w in weights]
    depth = len(weights)
    scale = objective.b.norm(dim=1)
    trainable = [l for l in range(depth) if l not in frozen]
    steps = 0
    clock = torch.zeros_like(scale)
    unshifted = [[] for _ in range(depth)]
    while True:
        beta, grad_beta, factors = _deep_gradients(objective, weights, unshifted)
        grad_norm = grad_beta.norm(dim=1)
        if _stops(steps, beta, grad_norm, clock, tol * scale, max_steps, check_every, history, times):
            break
        h = (step_scale / _curvature_bound(objective, weights, grad_beta)).view(-1, 1, 1)
        stages = [factors]
        if method == "rk4":
            for coefficients in RK4:
                shifts = [[(h * c * k[l][0], k[l][1]) for c, k in zip(coefficients, stages) if c]
                          if l in trainable else [] for l in range(depth)]
                stages.append(_deep_gradients(objective, weights, shifts)[2])
        step_weights = RK4_WEIGHTS if method == "rk4" else (1.0,)
        for l in trainable:
            a = torch.cat([h * w * k[l][0] for w, k in zip(step_weights, stages)], dim=-1)   # (trials, d, stages)
            b = torch.cat([k[l][1] for k in stages], dim=-2)                                # (trials, stages, cols)
            weights[l].baddbmm_(a, b, alpha=-1)
        if times is not None:
            clock = clock + h.view(-1)
        steps += 1
    return TrainResult(weights, beta, objective.loss(beta), grad_norm, steps, grad_norm <= tol * scale)


def _stops(steps, beta, grad_norm, clock, threshold, max_steps, check_every, history, times) -> bool:
    """At every ``check_every``-th step (and at the last): record (step, beta) and the flow time, and say whether
    every trial's gradient is within ``threshold`` or the step budget is spent."""
    if steps % check_every != 0 and steps < max_steps:
        return False
    if history is not None:
        history.append((steps, beta))
    if times is not None:
        times.append(clock)
    return bool((grad_norm <= threshold).all()) or steps >= max_steps


def _layer_gradients(objective: Objective, weights: list[torch.Tensor]):
    """(beta, dLoss/dbeta, [dLoss/dW_l]) for the product W_1 ... W_L."""
    depth = len(weights)
    beta = end_to_end(weights)
    grad_beta = objective.gradient(beta).unsqueeze(-1)                  # (trials, d, 1)
    suffix, acc = [None] * depth, None                                  # suffix[l] = W_{l+1} ... W_L
    for l in reversed(range(depth)):
        suffix[l] = acc
        acc = weights[l] if acc is None else weights[l] @ acc
    prefix_t, grads = grad_beta, []                                     # prefix_t = (W_1 ... W_{l-1})^T g
    for l in range(depth):
        grads.append(prefix_t if suffix[l] is None else prefix_t @ suffix[l].transpose(-1, -2))
        if l + 1 < depth:
            prefix_t = weights[l].transpose(-1, -2) @ prefix_t
    return beta, grad_beta.squeeze(-1), grads


RK4 = ((0.5,), (0.0, 0.5), (0.0, 0.0, 1.0))  # stage coefficients; weights 1/6, 1/3, 1/3, 1/6
RK4_WEIGHTS = (1 / 6, 1 / 3, 1 / 3, 1 / 6)
METHODS = ("gd", "rk4")
TWO_LAYER_METHODS = METHODS + ("rkc",)


def train(
    objective: Objective,
    weights: list[torch.Tensor],
    *,
    tol: float,
    max_steps: int = 20000,
    step_scale: float = 0.5,
    frozen: tuple[int, ...] = (),
    check_every: int = 25,
    history: list | None = None,
    method: str = "gd",
    times: list | None = None,
) -> TrainResult:
    """Integrate gradient flow on ``objective`` until ||grad_beta|| <= tol * ||b|| for every trial.

    ``method="gd"`` is gradient descent; ``"rk4"`` is the classical Runge-Kutta
    scheme for the same flow, whose limit point differs from the flow's by O(h^4)
    rather than GD's O(h) -- it matters where the limit depends on the path
    (fine-tuning's rescaling of the null-space part), not where it does not.
    Step per trial: h = step_scale / K_t, a fixed fraction of the stable step of the
    current iterate.  For L <= 2, K_t = lambda_max(H) max(s_t, 1), with s_t of
    :func:`_smoothness` and the floor at 1 standing for the curvature's second term.
    For L >= 3, K_t = lambda_max(H) s_t + ||g|| c_t, a bound on the local Hessian in
    the weights (:func:`_curvature_bound`): near the saddle at 0 the true curvature is
    ~ alpha^(L-2), and a floor at lambda_max(H) held the flow there for ~alpha^-(L-2)
    steps; relative to the local curvature RK4's per-step accuracy is what it is at
    the end of training (:func:`_train_deep` runs L >= 3, with the stage gradients
    kept as rank-one factors).  ``frozen`` lists 0-based layers kept fixed.  If
    ``history`` is a list, (step, beta) is appended at every convergence check; if ``times`` is a list, the
    flow time reached by then (per trial: the sum of its steps h) is appended beside it.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (choose {METHODS})")
    if len(weights) >= 3:
        return _train_deep(objective, weights, tol=tol, max_steps=max_steps, step_scale=step_scale, frozen=frozen,
                           check_every=check_every, history=history, method=method, times=times)
    weights = [w.clone() for w in weights]
    scale = objective.b.norm(dim=1)
    trainable = [l for l in range(len(weights)) if l not in frozen]
    steps = 0
    clock = torch.zeros_like(scale)
    while True:
        beta, grad_beta, grads = _layer_gradients(objective, weights)
        grad_norm = grad_beta.norm(dim=1)
        if _stops(steps, beta, grad_norm, clock, tol * scale, max_steps, check_every, history, times):
            break
        h = (step_scale / (objective.lam_max * _smoothness(weights).clamp(min=1.0))).view(-1, 1, 1)
        if method == "gd":
            increments = grads
        else:
            stages = [grads]
            for coefficients in RK4:
                shifted = list(weights)
                for l in trainable:
                    shifted[l] = weights[l] - h * sum(c * k[l] for c, k in zip(coefficients, stages) if c)
                stages.append(_layer_gradients(objective, shifted)[2])
            increments = [sum(w * k[l] for w, k in zip(RK4_WEIGHTS, stages)) for l in range(len(weights))]
        for l in trainable:
            weights[l] = weights[l] - h * increments[l]
        if times is not None:
            clock = clock + h.view(-1)
        steps += 1
    return TrainResult(weights, beta, objective.loss(beta), grad_norm, steps, grad_norm <= tol * scale)


def train_two_layer(
    X: torch.Tensor,
    y: torch.Tensor,
    weights: list[torch.Tensor],
    *,
    tol: float,
    max_steps: int = 20000,
    step_scale: float = 0.5,
    check_every: int = 25,
    history: list | None = None,
    loss_tol: float | None = None,
    method: str = "gd",
    rkc_rtol: float = 1e-8,
) -> TrainResult:
    """:func:`train` on 1/(2n) ||y - X W_1 w_2||^2 for L = 2, in O(min(n, d)^2) per step instead of O(n d^2).

    Exact reformulation.  The gradient of W_1 is X^T r w_2^T / n, so
    W_1(t) = W_1(0) + X^T M(t), and X W_1 = F = X W_1(0) + X X^T M.  The gradient of
    w_2 is F^T r / n, which keeps w_2 in V = span(w_2(0), rows of X W_1(0)), a space
    of dimension k <= n + 1; so with Q an orthonormal basis of V, w_2 = Q a,
    F = Ft Q^T and M = Mt Q^T, and the flow runs on (Ft, a) of sizes n x k and k.
    Every increment of Ft and Mt is a sum of rank-one terms (G r) a^T and r a^T
    (one per stage), applied as such; Mt's are only needed at the end and are
    applied in blocks.  The step rule is :func:`train`'s, with ||W_1||_F^2 =
    ||w_2||^2 + (||W_1(0)||_F^2 - ||w_2(0)||^2), the balance gradient flow conserves.
    For n > d the same flow runs on X's d x d QR factor (:func:`_two_layer_subspace`).
    Stops when the relative gradient is <= ``tol`` or, if given, the loss <= ``loss_tol``.

    ``method="rkc"`` integrates the same flow with adaptive Runge-Kutta-Chebyshev
    steps (:func:`_train_two_layer_rkc`): ~sqrt(condition number) gradient
    evaluations instead of ~condition number, for ill-conditioned X (n near d).
    """
    if method not in TWO_LAYER_METHODS:
        raise ValueError(f"unknown method {method!r} (choose {TWO_LAYER_METHODS})")
    if method == "rkc":
        return _train_two_layer_rkc(X, y, weights, tol=tol, max_steps=max_steps, rtol=rkc_rtol,
                                    history=history, loss_tol=loss_tol)
    W1, w2 = weights[0], weights[1].squeeze(-1)
    n = X.shape[-2]
    objective = empirical(X, y)
    Xt, gram, Q, Ft, a, y, loss_offset = _two_layer_subspace(X, y, W1, w2)
    lam_max, scale = objective.lam_max, objective.b.norm(dim=1)
    balance = W1.flatten(1).pow(2).sum(1) - w2.pow(2).sum(1)
    Mt, update = torch.zeros_like(Ft), torch.empty_like(Ft)
    pending_r, pending_a = [], []                                       # deferred rank-one updates of Mt

    def flush(Mt):
        if pending_r:
            Mt = Mt - torch.stack(pending_r, -1) @ torch.stack(pending_a, -2)
            pending_r.clear(), pending_a.clear()
        return Mt

    def lift(a, Mt):
        return _two_layer_lift(W1, Xt, Q, a, Mt)

    def field(shift_g, shift_a, a_stage):
        """Residual and gradients at Ft - sum_i (shift_g_i) (shift_a_i)^T, a_stage (a stage of RK4)."""
        Fa = (Ft @ a_stage.unsqueeze(-1)).squeeze(-1)
        for g_i, a_i in zip(shift_g, shift_a):
            Fa = Fa - g_i * (a_i * a_stage).sum(-1, keepdim=True)
        r = Fa - y
        Ftr = (Ft.transpose(-1, -2) @ r.unsqueeze(-1)).squeeze(-1)
        for g_i, a_i in zip(shift_g, shift_a):
            Ftr = Ftr - a_i * (g_i * r).sum(-1, keepdim=True)
        return r, (gram @ r.unsqueeze(-1)).squeeze(-1), Ftr / n

    steps = 0
    while True:
        residual = (Ft @ a.unsqueeze(-1)).squeeze(-1) - y               # X beta - y
        if steps % check_every == 0 or steps >= max_steps:
            grad_norm = (Xt @ residual.unsqueeze(-1)).squeeze(-1).norm(dim=1) / n
            loss = residual.pow(2).sum(1) / (2 * n) + loss_offset
            done = grad_norm <= tol * scale
            if loss_tol is not None:
                done = done | (loss <= loss_tol)
            if history is not None:
                Mt = flush(Mt)
                history.append((steps, lift(a, Mt)[0]))
            if bool(done.all()) or steps >= max_steps:
                break
        h = (step_scale / (lam_max * (2 * a.pow(2).sum(1) + balance).clamp(min=1.0))).unsqueeze(-1)
        if method == "gd":
            r = residual
            stages = [(r, (gram @ r.unsqueeze(-1)).squeeze(-1), (Ft.transpose(-1, -2) @ r.unsqueeze(-1)).squeeze(-1) / n, a)]
            weights_ = (1.0,)
        else:
            stages, weights_ = [], RK4_WEIGHTS
            for coefficients in ((),) + RK4:
                shift_g = [c * h * g / n for c, (_, g, _, _) in zip(coefficients, stages) if c]
                shift_a = [a_i for c, (_, _, _, a_i) in zip(coefficients, stages) if c]
                a_stage = a - sum((c * h * ga for c, (_, _, ga, _) in zip(coefficients, stages) if c), torch.zeros_like(a))
                stages.append((*field(shift_g, shift_a, a_stage), a_stage))
        for w, (r, g, ga, a_i) in zip(weights_, stages):
            pending_r.append(w * h * r / n), pending_a.append(a_i)
        # Ft -= the step's rank-one terms, through a buffer: a fresh (trials, n, k) tensor per step is, at the
        # paper's sizes, a fresh mmap whose pages the kernel zeroes (a third of the time went there)
        torch.bmm(torch.stack([w * h * g / n for w, (_, g, _, _) in zip(weights_, stages)], -1),
                  torch.stack([a_i for _, _, _, a_i in stages], -2), out=update)
        Ft.sub_(update)
        a = a - sum(w * h * ga for w, (_, _, ga, _) in zip(weights_, stages))
        steps += 1
        if len(pending_r) >= 64:
            Mt = flush(Mt)
    Mt = flush(Mt)
    return _two_layer_result(W1, Xt, Q, a, Mt, objective, grad_norm, steps, done)


def _two_layer_subspace(X, y, W1, w2):
    """X^T, X X^T, the reduced coordinates (Q, Ft = X W1 Q, a = Q^T w2) of train_two_layer, the labels the flow
    runs on and the loss they leave out.

    For n > d the flow sees the data only through X^T X and X^T y.  With X = Q_x R (thin QR, R d x d) those are
    R^T R and R^T (Q_x^T y), so it runs exactly on the design R and labels Q_x^T y: O(d^2) per step instead of
    O(n^2 + n d).  The loss then lacks ||y - Q_x Q_x^T y||^2 / (2n), a constant returned as the offset; the
    caller keeps normalising by the original n."""
    n, d = X.shape[-2:]
    offset = torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)
    if n > d:
        Qx, X = decompose(torch.linalg.qr, X)
        projected = (Qx.transpose(-1, -2) @ y.unsqueeze(-1)).squeeze(-1)
        offset = (y - (Qx @ projected.unsqueeze(-1)).squeeze(-1)).pow(2).sum(-1) / (2 * n)
        y, n = projected, d
    Xt = X.transpose(-1, -2)
    gram = X @ Xt                                                       # (trials, n, n)
    P0 = X @ W1                                                         # (trials, n, d)
    if n + 1 < d:
        basis = torch.cat([w2.unsqueeze(-1), P0.transpose(-1, -2)], dim=-1)
        Q = decompose(torch.linalg.qr, basis)[0]                        # (trials, d, n+1)
        return Xt, gram, Q, P0 @ Q, (Q.transpose(-1, -2) @ w2.unsqueeze(-1)).squeeze(-1), y, offset
    return Xt, gram, None, P0, w2, y, offset


def _two_layer_lift(W1, Xt, Q, a, Mt):
    """(beta, w_2, M) in the original coordinates (W_1 = W_1(0) + X^T M)."""
    w2_full = a if Q is None else (Q @ a.unsqueeze(-1)).squeeze(-1)
    Mq = Mt if Q is None else Mt @ Q.transpose(-1, -2)
    return (W1 @ w2_full.unsqueeze(-1) + Xt @ (Mq @ w2_full.unsqueeze(-1))).squeeze(-1), w2_full, Mq


def _two_layer_result(W1, Xt, Q, a, Mt, objective, grad_norm, steps, done, evaluations=0):
    beta, w2_full, Mq = _two_layer_lift(W1, Xt, Q, a, Mt)
    return TrainResult([W1 + Xt @ Mq, w2_full.unsqueeze(-1)], beta, objective.loss(beta), grad_norm, steps, done,
                       evaluations)


def _train_two_layer_rkc(X, y, weights, *, tol, max_steps, rtol, history, loss_tol, check_every=10,
                         max_stages=300):
    """Gradient flow of train_two_layer's reduced system, integrated by adaptive RKC2 steps.

    State (Ft, a, Mt); the field is dMt/dt = -r a^T / n, dFt/dt = X X^T dMt/dt,
    da/dt = -Ft^T r / n with r = Ft a - y.  Each stage's Ft is the step's Ft minus
    a sum of rank-one terms (gram r_i) a_i^T, kept as rows of G and A.  The
    number of stages s is set by h rho, rho = lambda_max(X^T X / n) (2 ||a||^2 +
    ||W_1||_F^2 - ||w_2||^2) bounding the Hessian (the balance term is the flow's
    invariant); h by the local error estimate of Sommeijer et al. (second order:
    error ~ h^3), per trial, relative tolerance ``rtol`` on (a, Ft / sqrt(n)).
    A rejected trial keeps its state and retries with a smaller h.
    """
    W1, w2 = weights[0], weights[1].squeeze(-1)
    n = X.shape[-2]
    objective = empirical(X, y)
    Xt, gram, Q, Ft, a, y, loss_offset = _two_layer_subspace(X, y, W1, w2)
    rows = Ft.shape[-2]                                 # n, or d where the flow runs on X's d x d factor
    lam_max, scale = objective.lam_max, objective.b.norm(dim=1)
    balance = W1.flatten(1).pow(2).sum(1) - w2.pow(2).sum(1)
    Mt = torch.zeros_like(Ft)
    trials, k = a.shape
    G = Ft.new_zeros(trials, max_stages + 1, rows)      # row i: gram r_i
    R = Ft.new_zeros(trials, max_stages + 1, rows)      # r_i
    A = Ft.new_zeros(trials, max_stages + 1, k)         # a at stage i
    GA = Ft.new_zeros(trials, max_stages + 1, k)        # da/dt at stage i

    def field(a_stage, c):
        """(r, gram r, da/dt) at a_stage and Ft - (1/n) sum_i c_i G_i A_i^T over the first m = c.shape[1] rows."""
        m = c.shape[1]
        Fa = (Ft @ a_stage.unsqueeze(-1)).squeeze(-1)
        if m:
            weights_ = c * (A[:, :m] @ a_stage.unsqueeze(-1)).squeeze(-1)
            Fa = Fa - (weights_.unsqueeze(-2) @ G[:, :m]).squeeze(-2) / n
        r = Fa - y
        Ftr = (r.unsqueeze(-2) @ Ft).squeeze(-2)
        if m:
            weights_ = c * (G[:, :m] @ r.unsqueeze(-1)).squeeze(-1)
            Ftr = Ftr - (weights_.unsqueeze(-2) @ A[:, :m]).squeeze(-2) / n
        return r, (gram @ r.unsqueeze(-1)).squeeze(-1), -Ftr / n

    def rho(a):
        return lam_max * (2 * a.pow(2).sum(1) + balance).clamp(min=1.0)

    def size(a, Ft):
        return 1 + (a.pow(2).sum(1) + Ft.flatten(1).pow(2).sum(1) / n).sqrt()

    # The slowest mode of the residual decays at a rate >= lambda_min^+(X^T X / n) ||a||^2 (the W_1 term
    # of the kernel only adds); a step beyond ~2 of its time constants buys nothing but stages.
    spectrum = decompose(torch.linalg.eigvalsh, gram / n)
    lam_min = torch.where(spectrum > spectrum[..., -1:] * 1e-10, spectrum, torch.inf).amin(-1)
    r0, g0, ga0 = field(a, a.new_zeros(trials, 0))
    h = 0.5 / rho(a)
    h_cap = rkc_stages(max_stages).stability
    steps = evaluations = 0
    while True:
        grad_norm = (Xt @ r0.unsqueeze(-1)).squeeze(-1).norm(dim=1) / n
        done = grad_norm <= tol * scale
        if loss_tol is not None:
            done = done | (r0.pow(2).sum(1) / (2 * n) + loss_offset <= loss_tol)
        if history is not None and steps % check_every == 0:
            history.append((steps, _two_layer_lift(W1, Xt, Q, a, Mt)[0]))
        if bool(done.all()) or steps >= max_steps:
            break
        h = torch.minimum(torch.minimum(h, h_cap / rho(a)), 2 / (lam_min * a.pow(2).sum(1)))
        stages = rkc_stages(stages_for(float((h * rho(a)).max()), max_stages))
        s = stages.s
        coefficients = _coefficient_table(s, a.dtype, a.device)          # (s + 1, s), row j: stage j
        G[:, 0], R[:, 0], A[:, 0], GA[:, 0] = g0, r0, a, ga0
        for j in range(1, s):
            c = h.unsqueeze(-1) * coefficients[j, :j]
            a_j = a + (c.unsqueeze(-2) @ GA[:, :j]).squeeze(-2)
            R[:, j], G[:, j], GA[:, j] = field(a_j, c)
            A[:, j] = a_j
        c = h.unsqueeze(-1) * coefficients[s]                               # the new state Y_s
        a_new = a + (c.unsqueeze(-2) @ GA[:, :s]).squeeze(-2)
        evaluations += s
        dFt = -(G[:, :s] * c.unsqueeze(-1)).transpose(-1, -2) @ A[:, :s] / n
        r1, g1, ga1 = field(a_new, c)                 # F at the new state: first stage of the next step
        error_a = -12 * (a_new - a) + 6 * h.unsqueeze(-1) * (ga0 + ga1)
        error_F = -12 * dFt - 6 * h.view(-1, 1, 1) * (g0.unsqueeze(-1) @ a.unsqueeze(-2)
                                                       + g1.unsqueeze(-1) @ a_new.unsqueeze(-2)) / n
        error = (error_a.pow(2).sum(1) + error_F.flatten(1).pow(2).sum(1) / n).sqrt() / 15
        ratio = error / (rtol * size(a_new, Ft + dFt))
        accepted = ratio <= 1
        keep = accepted.to(a.dtype).view(-1, 1, 1)
        Ft = Ft + keep * dFt
        Mt = Mt - keep * (R[:, :s] * c.unsqueeze(-1)).transpose(-1, -2) @ A[:, :s] / n
        take = accepted.unsqueeze(-1)
        a, r0, g0, ga0 = (torch.where(take, new, old) for new, old in ((a_new, a), (r1, r0), (g1, g0), (ga1, ga0)))
        factor = (0.8 * ratio.clamp(min=1e-12).pow(-1 / 3)).clamp(0.1, 10.0)
        h = h * torch.where(accepted, factor, factor.clamp(max=0.8))
        steps += 1
    return _two_layer_result(W1, Xt, Q, a, Mt, objective, grad_norm, steps, done, evaluations)


@lru_cache(maxsize=None)
def _coefficient_table_cpu(s: int) -> torch.Tensor:
    table = torch.zeros(s + 1, s, dtype=torch.float64)
    for j, row in enumerate(rkc_stages(s).coefficients):
        table[j, :j] = torch.tensor(row, dtype=torch.float64)
    return table


def _coefficient_table(s, dtype, device):
    return _coefficient_table_cpu(s).to(dtype=dtype, device=device)
