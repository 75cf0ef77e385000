import math

import pytest
import torch

from simulate.data import gaussian_design, task_pair, unit_vectors
from simulate.device import DeviceError, decompose, generator, looped_on_cuda, on_host, resolve_device
from simulate.estimators import min_norm_solution, row_space_projector
from simulate.rkc import rkc_stages, stages_for
from simulate.linear_nets import (balance_margin, empirical, end_to_end, init_weights, population, train,
                                   train_two_layer)
from simulate.regression import min_norm_risk_samples
from simulate.stats import Estimate, estimate, mean_z, weighted_poly_fit, z_critical, z_score


def gen(seed=0):
    return generator(seed, torch.device("cpu"))


@pytest.mark.parametrize("n, d", [(5, 12), (12, 5)])
def test_min_norm_solution_is_pinv(n, d):
    g = gen()
    X = gaussian_design(4, n, d, g)
    y = torch.randn(4, n, generator=g, dtype=torch.float64)
    expected = (torch.linalg.pinv(X) @ y.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(min_norm_solution(X, y), expected, atol=1e-10)


def test_row_space_projector_is_an_orthogonal_projector_onto_row_space():
    X = gaussian_design(3, 4, 9, gen())
    P = row_space_projector(X)
    assert torch.allclose(P @ P, P, atol=1e-12)
    assert torch.allclose(P, P.transpose(1, 2), atol=1e-12)
    assert torch.allclose(X @ P, X, atol=1e-12)
    assert torch.allclose(P.diagonal(dim1=1, dim2=2).sum(1), torch.full((3,), 4.0, dtype=torch.float64))


def test_task_pair_has_unit_norms_and_the_angle():
    s, t = task_pair(50, 7, 1.1, gen())
    assert torch.allclose(s.norm(dim=1), torch.ones(50, dtype=torch.float64))
    assert torch.allclose(t.norm(dim=1), torch.ones(50, dtype=torch.float64))
    assert torch.allclose((s * t).sum(1), torch.full((50,), math.cos(1.1), dtype=torch.float64))


def test_same_seed_same_numbers_other_seed_other_numbers():
    a = min_norm_risk_samples(5, 20, 0.3, 10, gen(3))
    b = min_norm_risk_samples(5, 20, 0.3, 10, gen(3))
    c = min_norm_risk_samples(5, 20, 0.3, 10, gen(4))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_chunks_partition_the_trials(monkeypatch):
    import simulate.regression as regression
    monkeypatch.setattr(regression, "CHUNK_ELEMENTS", 5 * 20 * 5)  # five trials of 5 x 20 per chunk
    assert list(regression.chunks(12, 5 * 20)) == [5, 5, 2]
    samples = regression.min_norm_risk_samples(5, 20, 0.3, 12, gen(3))
    assert samples.shape == (12,) and bool((samples > 0).all())


def test_gradient_matches_autograd():
    # train() uses hand-written gradients; one step must equal autograd's.
    g = gen(5)
    X = gaussian_design(3, 4, 6, g)
    y = torch.randn(3, 4, generator=g, dtype=torch.float64)
    weights = init_weights(3, 6, 3, 0.7, "gaussian", g)
    stepped = train(empirical(X, y), weights, tol=0.0, max_steps=1, check_every=10**9).weights
    leaves = [w.clone().requires_grad_(True) for w in weights]
    loss = ((X @ end_to_end(leaves).unsqueeze(-1)).squeeze(-1) - y).pow(2).sum() / (2 * 4)
    loss.backward()
    for before, after, leaf in zip(weights, stepped, leaves):
        delta = before - after  # = lr * grad per trial
        ratio = (delta.flatten(1) * leaf.grad.flatten(1)).sum(1) / leaf.grad.flatten(1).pow(2).sum(1)
        assert torch.allclose(delta, ratio.view(-1, 1, 1) * leaf.grad, atol=1e-12)
        assert (ratio > 0).all()


def test_eq22_init_meets_eq22_and_gaussian_does_not():
    g = gen(1)
    alpha = 1e-2
    eq22 = init_weights(8, 10, 3, alpha, "eq22", g)
    assert (balance_margin(eq22) / alpha**2 >= 1 - 1e-9).all()
    gaussian = init_weights(8, 10, 2, alpha, "gaussian", g)
    assert (balance_margin(gaussian) < 0).all()
    with pytest.raises(ValueError, match="unknown initialisation"):
        init_weights(1, 3, 2, 0.1, "orthogonal", g)


def test_linear_gd_converges_to_the_limit_from_its_start():
    # L = 1 from w0: the limit is w0 + P_par (theta - w0) for noiseless labels.
    g = gen(2)
    X = gaussian_design(5, 6, 15, g)
    theta, w0 = unit_vectors(5, 15, g), unit_vectors(5, 15, g)
    y = (X @ theta.unsqueeze(-1)).squeeze(-1)
    fit = train(empirical(X, y), [w0.unsqueeze(-1)], tol=1e-12, max_steps=100000, step_scale=1.0)
    assert fit.converged.all()
    expected = w0 + (row_space_projector(X) @ (theta - w0).unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(fit.beta, expected, atol=1e-9)


def test_frozen_layers_do_not_move():
    g = gen(2)
    X = gaussian_design(2, 3, 5, g)
    y = torch.randn(2, 3, generator=g, dtype=torch.float64)
    weights = init_weights(2, 5, 2, 0.5, "eq22", g)
    fit = train(empirical(X, y), weights, tol=1e-10, max_steps=50, frozen=(0,))
    assert torch.equal(fit.weights[0], weights[0]) and not torch.equal(fit.weights[1], weights[1])


def test_estimate_and_fit():
    e = estimate(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert e.mean == 2.5 and math.isclose(e.se, math.sqrt(5 / 3) / 2)
    coef, se = weighted_poly_fit([1, 2, 3], [3, 5, 7], [0.1, 0.1, 0.1], degree=1)
    assert math.isclose(coef[0], 1, abs_tol=1e-9) and math.isclose(coef[1], 2, abs_tol=1e-9)
    assert math.isclose(z_critical(0.05), 1.959963984540054)
    assert z_critical(1e-3, comparisons=5) > z_critical(1e-3)


def test_estimate_records_the_skewness_of_the_draws():
    assert estimate(torch.tensor([1.0, 2.0, 3.0, 4.0])).skewness == 0.0
    assert estimate(torch.tensor([0.0, 0.0, 0.0, 1.0])).skewness > 1
    assert estimate(torch.tensor([0.0, 1.0, 1.0, 1.0])).skewness < -1
    assert estimate(torch.ones(5)).skewness == 0.0


def test_mean_z_is_z_for_symmetric_draws_and_still_rejects_a_wrong_reference():
    flat = Estimate(1.0, 0.1, 100, 0.0)
    assert mean_z(flat, 0.5) == z_score(1.0, 0.5, 0.1) == 5.0
    assert mean_z(flat, 0.5, se=0.2) == 2.5
    skewed = Estimate(1.0, 0.1, 100, 2.0)
    zs = [mean_z(skewed, 1.0 + 0.1 * t) for t in (-6, -3, 0, 3, 6)]
    assert zs == sorted(zs, reverse=True)                    # monotone in the reference
    assert mean_z(skewed, 1.6) < -3.29 and mean_z(skewed, 0.4) > 3.29
    assert mean_z(Estimate(1.0, 0.0, 100, 2.0), 0.5) == math.inf


def test_mean_z_holds_the_false_alarm_rate_for_chi_square_draws():
    """Means of 40 chi-square(1) draws (skewness 2.8): the plain z's lower tail beyond -3.29 is ~40x its nominal
    5e-4; the skewness-corrected z brings the two-sided rate near the nominal 1e-3."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(100_000, 40, generator=gen, dtype=torch.float64).pow(2)
    mean, se = x.mean(1), x.std(1) / math.sqrt(40)
    centred = x - mean[:, None]
    skew = centred.pow(3).mean(1) / centred.pow(2).mean(1).pow(1.5)
    plain = (mean - 1) / se
    a = skew / (3 * math.sqrt(40))
    corrected = plain + a * plain**2 + a**2 * plain**3 / 3 + a / 2
    row = estimate(x[0])
    assert math.isclose(mean_z(row, 1.0), corrected[0].item(), rel_tol=1e-9)
    assert (plain.abs() > 3.29).double().mean() > 0.01
    assert (corrected.abs() > 3.29).double().mean() < 0.004


def test_device_resolution():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type in ("cpu", "cuda")
    with pytest.raises(DeviceError, match="unknown device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="no CUDA"):
            resolve_device("cuda")


def test_large_batches_of_matrices_above_cusolvers_batched_size_are_decomposed_on_the_host():
    # the batches the checks decompose: certificates over 10 000 draws of 30 x 60, covariance-bound's 100 of 200 x 200
    assert looped_on_cuda((10000, 30, 60)) and looped_on_cuda((100, 200, 200)) and looped_on_cuda((8, 8, 40, 40))
    # one big matrix, a paper-tier figure's 20 draws, or matrices cuSOLVER batches itself stay on the device
    assert not looped_on_cuda((500, 500)) and not looped_on_cuda((20, 1000, 500))
    assert not looped_on_cuda((10000, 32, 32)) and not looped_on_cuda((63, 60, 60))
    # the edges: side 32 is batched, 33 looped; 64 matrices are a large batch, 63 not
    assert looped_on_cuda((64, 33, 33)) and looped_on_cuda((64, 2, 33)) and not looped_on_cuda((64, 32, 32))


def test_decompose_on_the_cpu_is_the_plain_call():
    g = gen(3)
    A = torch.randn(100, 40, 50, generator=g, dtype=torch.float64)
    G = A @ A.transpose(-1, -2)
    assert not on_host(A)
    assert torch.equal(decompose(torch.linalg.svdvals, A), torch.linalg.svdvals(A))
    assert torch.equal(decompose(torch.linalg.matrix_norm, A, ord=2), torch.linalg.matrix_norm(A, ord=2))
    eig, vec = decompose(torch.linalg.eigh, G)
    assert torch.equal(eig, torch.linalg.eigh(G).eigenvalues) and torch.equal(vec, torch.linalg.eigh(G).eigenvectors)


@pytest.mark.parametrize("n, d, kind", [(6, 15, "eq22"), (15, 6, "gaussian")])
def test_two_layer_reformulation_equals_the_dense_trainer(n, d, kind):
    g = gen(7)
    X = gaussian_design(4, n, d, g)
    y = torch.randn(4, n, generator=g, dtype=torch.float64)
    weights = init_weights(4, d, 2, 0.3, kind, g)
    # The step sizes differ slightly (the fast one reads ||W_1||_F off the conserved
    # balance), so compare the limits, after training both to convergence.
    dense = train(empirical(X, y), weights, tol=1e-12, max_steps=100000)
    fast = train_two_layer(X, y, weights, tol=1e-12, max_steps=100000)
    assert dense.converged.all() and fast.converged.all()
    assert torch.allclose(fast.beta, dense.beta, atol=1e-6)
    assert torch.allclose(fast.weights[0] @ fast.weights[1], fast.beta.unsqueeze(-1), atol=1e-12)


@pytest.mark.parametrize("method", ["gd", "rk4", "rkc"])
def test_two_layer_flow_with_more_samples_than_dimensions_runs_on_the_thin_factor_exactly(method):
    """For n > d the trainer runs on X's d x d QR factor (X^T X and X^T y are all the flow sees): the limit is the
    dense trainer's, and a loss_tol stop counts the loss the factor leaves out (noisy labels: the least-squares
    loss is > 0, and a stop that ignored it would end before the loss reached loss_tol)."""
    g = gen(13)
    X = gaussian_design(3, 20, 6, g)
    y = torch.randn(3, 20, generator=g, dtype=torch.float64)
    weights = init_weights(3, 6, 2, 0.4, "eq22", g)
    dense = train(empirical(X, y), weights, tol=1e-12, max_steps=100000, step_scale=0.5, method="rk4")
    fast = train_two_layer(X, y, weights, tol=1e-12, max_steps=100000, method=method)
    assert dense.converged.all() and fast.converged.all()
    assert torch.allclose(fast.beta, dense.beta, atol=1e-6)
    assert torch.allclose(fast.loss, empirical(X, y).loss(fast.beta), rtol=1e-12)
    floor = dense.loss.max().item()
    stopped = train_two_layer(X, y, weights, tol=0.0, max_steps=100000, method=method, loss_tol=floor * (1 + 1e-3))
    assert bool((stopped.loss <= floor * (1 + 1e-3)).all())
    assert stopped.steps < 100000                           # stopped by the loss, not by the step cap (tol = 0)


def test_two_layer_reformulation_takes_the_same_steps_as_gradient_descent():
    # With one step, both trainers apply W <- W - lr grad; the reformulated W_1 must be
    # exactly W_1 - lr X^T r w_2^T / n with the same lr.
    g = gen(8)
    X = gaussian_design(3, 4, 9, g)
    y = torch.randn(3, 4, generator=g, dtype=torch.float64)
    W1, w2 = init_weights(3, 9, 2, 0.5, "eq22", g)
    fast = train_two_layer(X, y, [W1, w2], tol=0.0, max_steps=1, check_every=10**9)
    r = (X @ W1 @ w2).squeeze(-1) - y
    grad_W1 = X.transpose(1, 2) @ r.unsqueeze(-1) @ w2.transpose(1, 2) / 4
    lr = (W1 - fast.weights[0]).flatten(1).norm(dim=1) / grad_W1.flatten(1).norm(dim=1)
    assert torch.allclose(fast.weights[0], W1 - lr.view(-1, 1, 1) * grad_W1, atol=1e-13)


@pytest.mark.parametrize("method", ["gd", "rk4"])
def test_the_two_layer_trainer_s_history_is_the_flow_stopped_at_each_check(method):
    # no check asks these paths for a history (fine-tuning's runs by RKC): each recorded beta must be the product
    # the same trainer reaches when stopped at that step, and the last the result's
    g = gen(12)
    X = gaussian_design(3, 5, 11, g)
    y = torch.randn(3, 5, generator=g, dtype=torch.float64)
    weights = init_weights(3, 11, 2, 0.5, "eq22", g)
    history = []
    fit = train_two_layer(X, y, weights, tol=1e-9, max_steps=100000, check_every=7, method=method, history=history)
    steps = [step for step, _ in history]
    assert steps == list(range(0, fit.steps + 1, 7)) and steps[-1] == fit.steps
    assert torch.equal(history[-1][1], fit.beta)
    for step, beta in history[1:4] + history[-2:-1]:
        stopped = train_two_layer(X, y, weights, tol=0.0, max_steps=step, check_every=7, method=method)
        assert torch.allclose(beta, stopped.beta, rtol=0, atol=1e-13), step


def test_population_pretraining_recovers_the_source():
    g = gen(9)
    beta_s = unit_vectors(4, 12, g)
    fit = train(population(beta_s), init_weights(4, 12, 2, 1e-3, "eq22", g), tol=1e-10, max_steps=20000)
    assert fit.converged.all()
    assert torch.allclose(fit.beta, beta_s, atol=1e-9)


def test_rk4_two_layer_equals_dense_rk4_and_tracks_the_flow_better_than_gd():
    g = gen(11)
    X = gaussian_design(3, 6, 14, g)
    y = torch.randn(3, 6, generator=g, dtype=torch.float64)
    weights = init_weights(3, 14, 2, 0.8, "eq22", g)
    fast = train_two_layer(X, y, weights, tol=1e-12, max_steps=100000, step_scale=1.0, method="rk4")
    dense = train(empirical(X, y), weights, tol=1e-12, max_steps=100000, step_scale=1.0, method="rk4")
    assert torch.allclose(fast.beta, dense.beta, atol=1e-6)
    # Gradient flow conserves W_1^T W_1 - w_2 w_2^T; RK4 drifts far less than GD at the same step.
    def drift(fit):
        W1, w2 = fit.weights
        start = weights[0].transpose(1, 2) @ weights[0] - weights[1] @ weights[1].transpose(1, 2)
        return (W1.transpose(1, 2) @ W1 - w2 @ w2.transpose(1, 2) - start).abs().max().item()
    gd = train_two_layer(X, y, weights, tol=1e-12, max_steps=100000, step_scale=1.0, method="gd")
    assert drift(fast) < drift(gd) / 100
    with pytest.raises(ValueError, match="unknown method"):
        train_two_layer(X, y, weights, tol=1e-10, method="euler")


# --- Runge-Kutta-Chebyshev integration of the two-layer flow ---

def _stability_polynomial(stages, z):
    """RKC2's R(z) for y' = z y, built from the stored stage coefficients."""
    values, fields = [1.0], [z]
    for j in range(1, stages.s + 1):
        value = 1 + sum(c * f for c, f in zip(stages.coefficients[j], fields))
        values.append(value)
        fields.append(z * value)
    return values[-1]


@pytest.mark.parametrize("s", [2, 3, 7, 40, 150])
def test_rkc_stages_are_second_order_and_stable_on_their_interval(s):
    stages = rkc_stages(s)
    for z in (1e-2, -1e-2):                        # order 2: R(z) - e^z = O(z^3)
        assert abs(_stability_polynomial(stages, z) - math.exp(z)) < abs(z) ** 3
    grid = [-stages.stability * k / 400 for k in range(401)]
    values = [abs(_stability_polynomial(stages, z)) for z in grid]
    assert max(values) <= 1 + 1e-9
    if s >= 7:                                      # the damping (eps = 5) that drives the flow to rest
        assert max(v for z, v in zip(grid, values) if z < -0.05 * stages.stability) < 0.4
    assert stages_for(stages.stability) <= s and rkc_stages(stages_for(stages.stability)).stability >= stages.stability * (1 - 1e-12)


def test_rkc_two_layer_flow_ends_where_small_step_rk4_ends():
    # Fine-tuning-like start (a rank-one pretrained W_1, noisy targets, n near d): the end point of
    # the flow depends on its path, so RKC must land where RK4 at a quarter step lands.
    g = gen(12)
    X = gaussian_design(4, 24, 30, g)
    beta_s = unit_vectors(1, 30, g)
    pre = train(population(beta_s.expand(1, -1)), init_weights(1, 30, 2, 1e-3, "gaussian", g), tol=1e-12,
                max_steps=100000, step_scale=1.0, method="rk4")
    y = torch.randn(4, 24, generator=g, dtype=torch.float64)
    weights = [w.expand(4, *w.shape[1:]) for w in pre.weights]
    reference = train_two_layer(X, y, weights, tol=1e-11, max_steps=400000, step_scale=0.25, method="rk4")
    gaps = {}
    for rtol in (1e-5, 1e-6, 1e-7):
        fit = train_two_layer(X, y, weights, tol=1e-11, max_steps=100000, method="rkc", rkc_rtol=rtol)
        assert fit.converged.all()
        gaps[rtol] = (fit.beta - reference.beta).norm(dim=1).max().item()
    assert gaps[1e-6] < 1e-4 and gaps[1e-7] < gaps[1e-5] / 3, gaps
    cond = torch.linalg.eigvalsh(X @ X.transpose(1, 2))
    assert (cond[:, -1] / cond[:, 0]).max() > 100          # the regime RKC is for
    assert fit.evaluations < reference.steps               # fewer evaluations than RK4 steps (x4 evaluations each)


def test_relu_product_samples_returns_exactly_count_across_batches(monkeypatch):
    """Batches of CHUNK draws: the last, partial batch must hold the remainder, not a full batch."""
    import simulate.kernel_sampling as kernel_sampling
    monkeypatch.setattr(kernel_sampling, "CHUNK", 10)
    samples = kernel_sampling.relu_product_samples(0.5, 3, 25, generator(0, torch.device("cpu")))
    assert samples.shape == (25,) and bool((samples >= 0).all())


@pytest.mark.parametrize("total, size, expected", [(25, 10, [10, 10, 5]), (20, 10, [10, 10]), (3, 10, [3]),
                                                   (0, 4, []), (5, 1, [1] * 5)])
def test_batches_split_the_trials_exactly(total, size, expected):
    from simulate.batching import batches
    assert list(batches(total, size)) == expected


def test_a_batch_size_below_one_is_refused():
    from simulate.batching import batches
    with pytest.raises(ValueError, match="at least 1"):
        list(batches(5, 0))


def test_two_sizes_extrapolate_along_their_straight_line():
    # Two rungs fix a line in 1/d, not a parabola: its intercept and the intercept's propagated error,
    # c0 = (v1 x2 - v2 x1) / (x2 - x1), var = (x2^2 se1^2 + x1^2 se2^2) / (x2 - x1)^2 with x = 1/d.
    from simulate.size_ladder import extrapolate_to_infinite_size
    value, se = extrapolate_to_infinite_size([10, 20], [1.3, 0.9], [0.1, 0.2])
    x1, x2 = 1 / 10, 1 / 20
    assert value == pytest.approx((1.3 * x2 - 0.9 * x1) / (x2 - x1), rel=1e-12)
    assert se == pytest.approx(((x2 * 0.1) ** 2 + (x1 * 0.2) ** 2) ** 0.5 / abs(x2 - x1), rel=1e-12)


def test_the_size_ladder_extrapolates_the_gap_to_the_claimed_limit_in_one_over_d():
    """Means that approach their limit like 1/d extrapolate to a gap of 0 at d -> oo, rung by rung in order."""
    from simulate.size_ladder import estimates_along_ladder, extrapolated_gap
    jitter = torch.tensor([-1e-3, 1e-3, -1e-3, 1e-3], dtype=torch.float64)
    rungs = estimates_along_ladder([(10, 20), (20, 40), (40, 80)], lambda n, d: 0.5 + 3.0 / d + jitter,
                                   lambda n, d: 0.5 + 3.0 / d, lambda n, d: 0.5, torch.float64)
    assert [(r.n, r.d) for r in rungs] == [(10, 20), (20, 40), (40, 80)]
    assert rungs[0].row(1.5) == {"n": 10, "d": 20, "mc": pytest.approx(0.65), "se": pytest.approx(rungs[0].mc.se),
                                 "finite": 0.65, "asymptotic": 0.5, "z": 1.5}
    gap, se = extrapolated_gap(rungs, torch.float64)
    assert abs(gap) < 1e-9 < se


def test_a_short_init_scale_run_reports_its_distance_at_every_check():
    # fewer than 12 convergence checks: the trace along training is the whole history, not every other check
    from simulate.init_scale_ladder import distance_over_init_scales
    gen = generator(0, torch.device("cpu"))
    X = torch.randn(2, 40, 4, dtype=torch.float64, generator=gen)
    target = torch.randn(2, 4, dtype=torch.float64, generator=gen)
    y = (X @ target.unsqueeze(-1)).squeeze(-1)
    ladder = distance_over_init_scales(X, y, target, 2, 0.1, (1.0,), "eq22", gen, tol=1e-6)
    steps = [row["step"] for row in ladder.along_training]
    assert steps[-1] == ladder.rows[0]["steps"] and len(steps) < 12
    assert steps == list(range(0, steps[-1] + 1, 25))


def test_feature_map_is_the_product_of_all_but_the_last_layer_and_the_identity_for_one_layer():
    from simulate.transfer import feature_map
    gen = torch.Generator().manual_seed(5)
    W1, W2, W3 = (torch.randn(2, 4, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    assert torch.equal(feature_map([W1, W2, W3]), W1 @ W2) and torch.equal(feature_map([W1, W3]), W1)
    one = feature_map([torch.randn(3, 4, 1, generator=gen, dtype=torch.float64)])
    assert one.shape == (3, 4, 4) and torch.equal(one, torch.eye(4, dtype=torch.float64).expand(3, 4, 4))


def test_an_ntk_run_counts_a_draw_as_stalled_once_whichever_phases_stalled_and_a_floor_ratio_needs_positive_means():
    from simulate.ntk import TransferRun
    from simulate.ntk_ladder import _floor_ratio
    from simulate.relu_nets import ReluTrainResult, init_relu_net
    net = init_relu_net(4, 3, 2, torch.Generator().manual_seed(0), scaling="ntk")
    phase = lambda *flags: ReluTrainResult(net, torch.zeros(4), 10, torch.tensor(flags))
    run = TransferRun(net, phase(True, False, False, True), phase(True, False, True, False))
    assert run.stalled == 3 and not run.converged
    assert TransferRun(net, phase(True, True, True, False), None).stalled == 1
    assert TransferRun(net, phase(True, True, True, True), phase(*[True] * 4)).converged
    a, b = torch.tensor([1.0, 3.0]), torch.tensor([0.5, 1.5])
    assert _floor_ratio(a, b)["ratio"] == pytest.approx(2.0) and _floor_ratio(a, b)["exponent"] == pytest.approx(1.0)
    assert _floor_ratio(-a, b) is None and _floor_ratio(a, -b) is None


def test_freed_host_memory_is_kept_under_glibc():
    import platform
    from simulate.device import keep_freed_host_memory
    assert keep_freed_host_memory() is (platform.libc_ver()[0] == "glibc")
