"""SheafADMM as a public differentiable layer: stopping, warm starts, gradients."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

# The exact optimum from the KKT system (numpy), shared with the solver's tests.
from test_coordination_sheaf_admm import _kkt_solution

from sklearn_ext.coordination import SheafADMM, SheafADMMStates

TREE = np.array([[0, 1], [0, 2], [1, 3], [1, 4]])  # converges in ~100 iterations
RING = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 0]])  # a cycle: slower


def _problem(seed, n=5, d_v=4, batch=2):
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(batch, n, d_v, d_v))
    Q = L @ np.swapaxes(L, -1, -2) / d_v + 0.5 * np.eye(d_v)
    q = rng.normal(size=(batch, n, d_v))
    return torch.as_tensor(Q), torch.as_tensor(q)


def _layer(edges=TREE, n_iter=2000, seed=0, d_e=2, **kwargs):
    layer = SheafADMM(edges, 5, 4, d_e, n_iter, **kwargs).double()
    layer.init_parameters(torch.Generator().manual_seed(seed))
    return layer


# --- gradients ------------------------------------------------------------------


@pytest.mark.parametrize("batched_maps", [False, True])
def test_implicit_gradients_match_finite_differences_at_convergence(batched_maps):
    """Through Q (via L L' + I/2), q and restriction maps passed in."""
    Q, q = _problem(1, batch=2)
    layer = _layer(tol=1e-12, backward="implicit")
    F = layer.maps().detach()
    F = F.expand(2, *F.shape).clone() if batched_maps else F.clone()
    L = torch.linalg.cholesky(Q - 0.5 * torch.eye(4, dtype=torch.float64))
    eye = 0.5 * torch.eye(4, dtype=torch.float64)

    def solve(L, q, F):
        return layer(L @ L.transpose(-1, -2) + eye, q, maps=F)

    inputs = tuple(t.clone().requires_grad_(True) for t in (L, q, F))
    # fast_mode: finite differences along random directions of every input.
    assert torch.autograd.gradcheck(
        solve, inputs, eps=1e-6, atol=1e-6, rtol=1e-4, fast_mode=True
    )
    assert bool(layer.converged_.all())


def test_unrolled_gradients_match_finite_differences_at_convergence():
    Q, q = _problem(2, batch=1)
    layer = _layer(n_iter=600, learn_rho=False)

    def solve(q, F):
        return layer(Q, q, maps=F)

    F = layer.maps().detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        solve,
        (q.clone().requires_grad_(True), F),
        eps=1e-6,
        atol=1e-6,
        rtol=1e-4,
        fast_mode=True,
    )


@pytest.mark.parametrize(
    "edges, rho, n_iter, learn_sheaf",
    [
        (TREE, 1.0, 1000, True),
        (RING, 10.0, 1500, True),
        # A cycle with the constant sheaf: the constraints are redundant.
        (RING, 3.0, 300, False),
    ],
)
def test_implicit_matches_unrolled_at_many_iterations(edges, rho, n_iter, learn_sheaf):
    Q, q = _problem(3)
    target = torch.as_tensor(np.random.default_rng(4).normal(size=q.shape))
    grads = {}
    for backward in ("unrolled", "implicit"):
        layer = _layer(
            edges, n_iter, rho=rho, learn_sheaf=learn_sheaf, backward=backward
        )
        Q_, q_ = Q.clone().requires_grad_(True), q.clone().requires_grad_(True)
        x = layer(Q_, q_)
        ((x - target) ** 2).sum().backward()
        grads[backward] = [Q_.grad, q_.grad]
        if learn_sheaf:
            grads[backward].append(layer.restriction.grad)
        # The solution is the exact optimum, so both gradients are exact.
        F = layer.maps().detach().numpy()
        ref = _kkt_solution(edges, F, Q[0].numpy(), q[0].numpy())
        np.testing.assert_allclose(x[0].detach().numpy(), ref, atol=1e-8)
    for unrolled, implicit in zip(grads["unrolled"], grads["implicit"]):
        torch.testing.assert_close(implicit, unrolled, rtol=1e-6, atol=1e-8)


def test_truncated_unrolled_gradient_differs_from_the_implicit_one():
    """Three iterations are far from the optimum: their gradient is another."""
    Q, q = _problem(5)
    out = {}
    for backward in ("unrolled", "implicit"):
        layer = _layer(RING, 3, rho=3.0, backward=backward)
        q_ = q.clone().requires_grad_(True)
        layer(Q, q_).square().sum().backward()
        out[backward] = q_.grad
    assert (out["unrolled"] - out["implicit"]).norm() > 0.1 * out["implicit"].norm()


def test_implicit_backward_records_no_iterations_and_shares_Q():
    """Q of batch 1 is shared; its gradient keeps its shape; no graph per step."""
    Q, q = _problem(6, batch=3)
    layer = _layer(tol=1e-10, backward="implicit")
    Q1 = Q[:1].clone().requires_grad_(True)
    x = layer(Q1, q.clone().requires_grad_(True))
    assert x.grad_fn is not None and "ImplicitQP" in type(x.grad_fn).__name__
    x.sum().backward()
    assert Q1.grad.shape == (1, 5, 4, 4)
    # No gradient reaches rho: the optimum does not depend on it.
    assert layer.log_rho.grad is None


# --- stopping and warm starts ---------------------------------------------------


def test_tol_stops_each_problem_early_and_reports_its_count():
    Q, q = _problem(7, batch=3)
    q[2] *= 50.0  # a harder (larger) problem in the same batch
    layer = _layer(n_iter=5000, tol=1e-8)
    with torch.no_grad():
        x, states = layer(Q, q, return_states=True)
    counts = layer.n_iter_
    assert isinstance(states, SheafADMMStates)
    assert counts.dtype == torch.long and counts.shape == (3,)
    assert bool(layer.converged_.all()) and int(counts.max()) < 500
    assert torch.equal(states.n_iter, counts)
    assert states.primal_residual.shape[0] == int(counts.max())
    # Each problem's result is that of exactly its own number of iterations.
    fixed = _layer(n_iter=5000)  # the same maps, no tol
    for b in range(3):
        with torch.no_grad():
            alone = fixed(Q[b : b + 1], q[b : b + 1], max_iter=int(counts[b]))
        torch.testing.assert_close(alone[0], x[b], rtol=1e-10, atol=1e-12)
        assert int(fixed.n_iter_[0]) == int(counts[b]) and fixed.converged_ is None
    # ... and it is within tol of the optimum's residuals when it stops.
    last = states.primal_residual[counts - 1, torch.arange(3)]
    assert float(last.max()) < 1e-6


def test_without_tol_runs_n_iter_and_warns_when_tol_is_not_met():
    Q, q = _problem(8)
    layer = _layer(n_iter=7)
    with torch.no_grad():
        layer(Q, q)
    assert layer.n_iter_.tolist() == [7, 7] and layer.converged_ is None
    with pytest.warns(ConvergenceWarning, match="did not reach tol"):
        with torch.no_grad():
            layer(Q, q, tol=1e-10)
    assert not bool(layer.converged_.any())


def test_warm_start_from_a_converged_state_needs_fewer_iterations():
    Q, q = _problem(9)
    layer = _layer(RING, 5000, rho=10.0, tol=1e-9)
    with torch.no_grad():
        x, z, u, _ = layer.iterate(Q, q)
        cold = layer.n_iter_.clone()
        x_again, _, _, _ = layer.iterate(Q, q, z, u)
        assert layer.n_iter_.tolist() == [1, 1]
        torch.testing.assert_close(x_again, x, rtol=0, atol=1e-7)
        # A slightly changed problem (the next step of training or of a
        # puzzle's rounds) also starts closer than from zero.
        layer.iterate(Q, q + 0.01, z, u)
    assert bool((layer.n_iter_ < cold).all())


# --- bad input ------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, error, match",
    [
        (lambda Q, q: (Q[0], q), ValueError, r"Q must have shape \(batch"),
        (lambda Q, q: (Q[..., :3, :3], q), ValueError, "Q must have shape"),
        (lambda Q, q: (Q[:, :4], q), ValueError, "n_agents=5"),
        (lambda Q, q: (Q, q[..., :3]), ValueError, r"q must have shape .*stalk_dim=4"),
        (lambda Q, q: (Q, q.float()), TypeError, "q has dtype torch.float32"),
        (lambda Q, q: (Q.numpy(), q), TypeError, "Q must be a torch.Tensor"),
    ],
)
def test_bad_problem_gets_a_clear_error(change, error, match):
    Q, q = _problem(10)
    layer = _layer(n_iter=3)
    with pytest.raises(error, match=match):
        layer(*change(Q, q))


def test_bad_maps_and_warm_starts_get_a_clear_error():
    Q, q = _problem(11)
    layer = _layer(n_iter=3)
    F = layer.maps().detach()
    with pytest.raises(ValueError, match=r"maps must have shape \(n_edges=4"):
        layer(Q, q, maps=F[:3])
    with pytest.raises(ValueError, match="maps must have shape"):
        layer(Q, q, maps=F.expand(3, *F.shape))  # batch of 3 for 2 problems
    _, z, u, _ = layer.iterate(Q, q)
    with pytest.raises(ValueError, match="both z and u"):
        layer.iterate(Q, q, z, None)
    with pytest.raises(ValueError, match="z must have shape"):
        layer.iterate(Q, q, z[:, :2], u)
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1"):
        layer(Q, q, max_iter=0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"edges": [[0, 5]]}, r"edges must join agents 0..4 .*got agent indices"),
        ({"edges": [[-1, 2]]}, "edges must join agents"),
        ({"edges": [[0, 1, 2]]}, r"edges must have shape \(n_edges, 2\)"),
        ({"edges": [[0.5, 1]]}, "edges must hold integers"),
        ({"edge_types": [0, 1]}, "edge_types must hold one integer per edge"),
        ({"n_iter": 0}, "n_iter must be an integer >= 1"),
        ({"rho": 0.0}, "rho must be a number > 0"),
        ({"tol": -1.0}, "tol must be None or a number >= 0"),
        ({"backward": "adjoint"}, "backward must be one of"),
    ],
)
def test_bad_construction_gets_a_clear_error(kwargs, match):
    args = {"edges": TREE, "n_agents": 5, "stalk_dim": 4, "edge_dim": 2}
    args.update({"n_iter": 3}, **kwargs)
    with pytest.raises(ValueError, match=match):
        SheafADMM(**args)


def test_inputs_are_not_modified():
    Q, q = _problem(12)
    Q0, q0 = Q.clone(), q.clone()
    layer = _layer(n_iter=50, tol=1e-6, backward="implicit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        x, z, u, _ = layer.iterate(Q, q)
        z0, u0 = z.clone(), u.clone()
        layer.iterate(Q, q, z, u)
    assert torch.equal(Q, Q0) and torch.equal(q, q0)
    assert torch.equal(z, z0) and torch.equal(u, u0)
