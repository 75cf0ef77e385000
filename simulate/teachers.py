"""Teacher networks for student-teacher experiments with two-layer ReLU nets, batched over trials.

- ``sphere_teacher``: f*(x) = (1/m*) sum_i c*_i relu(w*_i . x) with units uniform on S^{d-1};
- ``ablate``: the same teacher with a uniformly random fraction mu of its units removed
  and the 1/((1 - mu) m*) scaling of the remaining ones (Features are fate, eq. 19);
- ``correlated_units``: unit vectors at a given cosine with a teacher's units (related tasks);
- ``rkhs_split``: the L2(N(0, I)) norm of a teacher and of its part outside the span of a
  student's features, from the closed-form Gram matrices (Features are fate, eqs. 154-159);
- ``readout_gd``: gradient descent on the readout alone from zero, its iterates in closed form
  (kernel interpolation with the features, at a finite budget or in the limit);
- ``risk``: E_x (f(x) - f*(x))^2 for x ~ N(0, I), exactly.
"""

from __future__ import annotations

import torch

from simulate.device import decompose
from simulate.kernels import relu_gram
from simulate.relu_nets import ReluNet, quadratic_form

__all__ = ["sphere_teacher", "ablate", "correlated_units", "rkhs_split", "readout_gd", "risk", "PROJECTION_RTOL"]

# Eigenvalues of the student Gram below this fraction of the largest one are treated as zero in
# the projection: after feature learning the student units cluster, so K is singular to rounding.
PROJECTION_RTOL = 1e-10


def sphere_teacher(trials: int, m_star: int, d: int, gen: torch.Generator, *, readout: float = 1.0) -> ReluNet:
    """``trials`` teachers with m* units uniform on the sphere and equal readouts c*_i = ``readout``."""
    W = torch.randn(trials, m_star, d, generator=gen, device=gen.device, dtype=torch.float64)
    W = W / W.norm(dim=-1, keepdim=True)
    c = torch.full((trials, m_star), float(readout), dtype=torch.float64, device=gen.device)
    return ReluNet(W, c, 1.0 / m_star)


def ablate(teacher: ReluNet, removed: int, gen: torch.Generator) -> ReluNet:
    """The source network of eq. (19): the teacher without ``removed`` of its m* units (a uniformly
    random subset per trial), the others rescaled to 1/(m* - removed).

    The removed units stay in the tensor with readout 0 and the kept ones carry m*/(m* - removed)
    times their readout at the teacher's own 1/m* scale: the same function, and sources with
    different ablated counts stack into one batch."""
    trials, m_star = teacher.c.shape
    keep = m_star - removed
    if not 1 <= keep <= m_star:
        raise ValueError(f"cannot remove {removed} of {m_star} units")
    order = torch.rand(trials, m_star, generator=gen, device=gen.device, dtype=torch.float64).argsort(dim=1)
    kept = torch.zeros_like(teacher.c).scatter_(1, order[:, :keep], 1.0)
    return ReluNet(teacher.W, teacher.c * kept * (m_star / keep), teacher.scale)


def correlated_units(units: torch.Tensor, rho: float, gen: torch.Generator) -> torch.Tensor:
    """Unit vectors u_h with u_h . v_h = rho for the unit rows v_h of ``units`` (..., k, d), each tilted
    towards its own uniformly random direction orthogonal to v_h."""
    other = torch.randn(units.shape, generator=gen, device=gen.device, dtype=torch.float64)
    other = other - (other * units).sum(-1, keepdim=True) * units
    other = other / other.norm(dim=-1, keepdim=True)
    return rho * units + (1 - rho * rho) ** 0.5 * other


def rkhs_split(student_W: torch.Tensor, teacher: ReluNet, rtol: float = PROJECTION_RTOL):
    """(||P f*||^2, ||P_perp f*||^2, ||f*||^2) in L2(N(0, I)), P the projector on span{relu(w_i . x)}.

    Eqs. (154)-(159): with K = G/m, K* = G*/m*, Kt = G'/sqrt(m m*) (G the Gaussian Gram matrices of
    the units), ||P f*||^2 = c*^T Kt^T K^{-1} Kt c* / m* and ||P_perp f*||^2 = c*^T K* c* / m* - ||P f*||^2
    for f* = (1/m*) sum_j c*_j relu(w*_j . x).  The 1/m and 1/m* cancel; written with the teacher's own
    scale s* (f* = s* sum_j c*_j relu(w*_j . x)) this is ||P f*||^2 = s*^2 (G' c*)^T G^{-1} (G' c*).
    G^{-1} is the pseudo-inverse on the eigenvalues above ``rtol`` times the largest.
    """
    G = relu_gram(student_W, student_W)
    b = teacher.scale * (relu_gram(student_W, teacher.W) @ teacher.c.unsqueeze(-1))
    eig, vec = decompose(torch.linalg.eigh, G)
    kept = eig > rtol * eig[..., -1:]
    coef = (vec.transpose(-1, -2) @ b).squeeze(-1)
    inside = torch.where(kept, coef.pow(2) / eig.clamp(min=torch.finfo(eig.dtype).tiny), torch.zeros_like(eig)).sum(-1)
    total = teacher.scale ** 2 * quadratic_form(teacher.c, relu_gram(teacher.W, teacher.W), teacher.c)
    return inside, total - inside, total


def risk(net: ReluNet, teacher: ReluNet) -> torch.Tensor:
    """E_x (f(x) - f*(x))^2 for x ~ N(0, I), per trial, from the closed-form Gram matrices."""
    own = net.scale ** 2 * quadratic_form(net.c, relu_gram(net.W, net.W), net.c)
    cross = net.scale * teacher.scale * quadratic_form(net.c, relu_gram(net.W, teacher.W), teacher.c)
    return own - 2 * cross + teacher.scale ** 2 * quadratic_form(teacher.c, relu_gram(teacher.W, teacher.W), teacher.c)


def readout_gd(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, scale: float, *, lr: float, max_steps: int,
               loss_tol: float = 0.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradient descent on the readout alone from c = 0, exactly: (c, steps, final loss) per trial.

    The loss (1/2n) ||scale * relu(X W^T) c - y||^2 is quadratic in c, so with A = scale * features =
    U S V^T the iterates are c_t = V diag((1 - (1 - lr S^2/n)^t) / S) U^T y, the GD iterates
    themselves (no approximation); a trial stops at the first t with loss <= ``loss_tol`` (the loss
    decreases monotonically for a stable step), or at ``max_steps``.  As t -> oo this is the
    least-norm interpolant (least squares above the rank); a finite budget leaves the directions with
    lr t S^2/n << 1 unfitted, which is what keeps the fit away from the interpolation peak at n = m.
    """
    n = X.shape[-2]
    A = scale * torch.relu(X @ W.transpose(-1, -2))
    U, S, Vh = decompose(torch.linalg.svd, A, full_matrices=False)
    rate = lr * S.pow(2) / n
    if bool((rate >= 2).any()):
        raise ValueError(f"readout step lr = {lr} is unstable (lr S_max^2 / n = {rate.max().item():.3g} >= 2)")
    proj = (U.transpose(-1, -2) @ y.unsqueeze(-1)).squeeze(-1)
    outside = (y.pow(2).sum(-1) - proj.pow(2).sum(-1)).clamp(min=0)
    log_decay = torch.log1p(-rate)

    def loss_at(t):
        return ((proj * torch.exp(t.unsqueeze(-1) * log_decay)).pow(2).sum(-1) + outside) / (2 * n)

    top = torch.full(y.shape[:-1], float(max_steps), dtype=y.dtype, device=y.device)
    low = torch.zeros_like(top)      # loss(low) > tol unless low = 0; loss(top) <= tol or top = max_steps
    done = loss_at(top) > loss_tol   # never reaches the tolerance: run the whole budget
    low = torch.where(done, top, low)
    while bool((top - low > 1).any()):
        mid = torch.floor((top + low) / 2)
        below = loss_at(mid) <= loss_tol
        top, low = torch.where(below, mid, top), torch.where(below, low, mid)
    steps = torch.where(loss_at(low) <= loss_tol, low, top)
    filt = -torch.expm1(steps.unsqueeze(-1) * log_decay) / S.clamp(min=torch.finfo(S.dtype).tiny)
    c = (Vh.transpose(-1, -2) @ (filt * proj).unsqueeze(-1)).squeeze(-1)
    return c, steps, loss_at(steps)
