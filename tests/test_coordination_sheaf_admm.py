"""Sheaf-ADMM: the unrolled solver against the exact QP, and the classifier."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from sklearn_ext.coordination import SheafADMMClassifier, patch_grid
from sklearn_ext.coordination._sheaf_layer import SheafADMM


def _problem(seed, n=5, d_v=4, batch=2):
    rng = np.random.default_rng(seed)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 0], [0, 2]])[: n + 1]
    L = rng.normal(size=(batch, n, d_v, d_v))
    Q = L @ np.swapaxes(L, -1, -2) / d_v + 0.5 * np.eye(d_v)
    q = rng.normal(size=(batch, n, d_v))
    return edges, torch.as_tensor(Q), torch.as_tensor(q)


def _kkt_solution(edges, F, Q, q):
    """The centralised optimum: one linear solve of the KKT system."""
    n, d_v = q.shape
    d_e = F.shape[2]
    H = np.zeros((n * d_v, n * d_v))
    for i in range(n):
        H[i * d_v : (i + 1) * d_v, i * d_v : (i + 1) * d_v] = Q[i]
    C = np.zeros((len(edges) * d_e, n * d_v))
    for e, (i, j) in enumerate(edges):
        C[e * d_e : (e + 1) * d_e, i * d_v : (i + 1) * d_v] += F[e, 0]
        C[e * d_e : (e + 1) * d_e, j * d_v : (j + 1) * d_v] -= F[e, 1]
    K = np.block([[H, C.T], [C, np.zeros((len(C), len(C)))]])
    rhs = np.concatenate([-q.ravel(), np.zeros(len(C))])
    return np.linalg.lstsq(K, rhs, rcond=None)[0][: n * d_v].reshape(n, d_v)


@pytest.mark.parametrize("seed", range(3))
def test_unrolled_admm_reaches_the_centralised_optimum(seed):
    edges, Q, q = _problem(seed)
    layer = SheafADMM(edges, 5, 4, 2, n_iter=5000, rho=3.0).double()
    layer.init_parameters(torch.Generator().manual_seed(seed))
    with torch.no_grad():
        x, states = layer(Q, q, return_states=True)
    F = layer.maps().detach().numpy()
    for b in range(len(q)):
        ref = _kkt_solution(edges, F, Q[b].numpy(), q[b].numpy())
        np.testing.assert_allclose(x[b].numpy(), ref, atol=1e-6)
    # The agents end up agreeing on what the sheaf asks of them.
    assert states.disagreement[-1].max() < 1e-6 < states.disagreement[0].min()


def test_constraints_couple_the_agents():
    """Without edges each agent solves alone; with them, the solutions move."""
    edges, Q, q = _problem(0)
    alone = torch.linalg.solve(Q, -q[..., None])[..., 0]
    layer = SheafADMM(edges, 5, 4, 2, n_iter=300, rho=3.0).double()
    layer.init_parameters(torch.Generator().manual_seed(0))
    with torch.no_grad():
        x = layer(Q, q)
    assert (x - alone).abs().max() > 0.05


def test_gradients_pass_gradcheck():
    edges, _, q = _problem(1, batch=1)
    layer = SheafADMM(edges[:3], 4, 3, 2, n_iter=4).double()
    layer.init_parameters(torch.Generator().manual_seed(1))
    L = torch.randn(
        1, 4, 3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2)
    )
    L.requires_grad_(True)
    q = q[:, :4, :3].clone().requires_grad_(True)
    eye = 0.5 * torch.eye(3, dtype=torch.float64)

    def solve(L, q, F):
        with torch.no_grad():
            layer.restriction.copy_(F)
        return layer(L @ L.transpose(-1, -2) + eye, q)

    assert torch.autograd.gradcheck(
        lambda L, q: solve(L, q, layer.restriction.detach()), (L, q)
    )
    # ... and through the restriction maps (the learned sheaf) and rho.
    F = layer.restriction.detach().clone().requires_grad_(True)
    log_rho = layer.log_rho.detach().clone().requires_grad_(True)

    def through_sheaf(F, log_rho):
        params = {"restriction": F, "log_rho": log_rho}
        Q = L.detach() @ L.detach().transpose(-1, -2) + eye
        return torch.func.functional_call(layer, params, (Q, q.detach()))

    assert torch.autograd.gradcheck(through_sheaf, (F, log_rho))


def test_restriction_maps_cannot_collapse():
    layer = SheafADMM(np.array([[0, 1]]), 2, 4, 2, n_iter=2)
    with torch.no_grad():
        layer.restriction.mul_(1e-6)
    norms = layer.maps().flatten(2).norm(dim=2)
    torch.testing.assert_close(norms, torch.full_like(norms, 2**0.5))


# --- patches -------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    size=st.integers(1, 4),
    stride=st.integers(1, 4),
)
def test_patch_grid_covers_every_pixel_and_links_neighbours(h, w, size, stride):
    ph = 1 if h == 1 else size
    if ph > h or size > w:
        with pytest.raises(ValueError, match="larger than the image"):
            patch_grid((h, w), size, stride)
        return
    if stride > size:
        with pytest.raises(ValueError, match="left out"):
            patch_grid((h, w), size, stride)
        return
    index, edges = patch_grid((h, w), size, stride)
    assert index.shape[1] == ph * size
    assert set(index.ravel()) == set(range(h * w))
    assert len(np.unique(index, axis=0)) == len(index)
    # Every edge joins two distinct patches, and the graph is connected.
    assert np.all(edges[:, 0] != edges[:, 1])
    reached, frontier = {0}, [0]
    while frontier:
        a = frontier.pop()
        for b in np.concatenate(
            [edges[edges[:, 0] == a, 1], edges[edges[:, 1] == a, 0]]
        ):
            if b not in reached:
                reached.add(int(b))
                frontier.append(int(b))
    assert reached == set(range(len(index)))


# --- the classifier -----------------------------------------------------------------


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)


@pytest.fixture(scope="module")
def fitted(digits):
    X_tr, _, y_tr, _ = digits
    return SheafADMMClassifier(max_iter=30, random_state=0).fit(X_tr, y_tr)


def test_agents_together_beat_any_single_patch(digits, fitted):
    from sklearn.linear_model import LogisticRegression

    X_tr, X_te, y_tr, y_te = digits
    best_single = max(
        LogisticRegression(max_iter=2000)
        .fit(X_tr[:, idx], y_tr)
        .score(X_te[:, idx], y_te)
        for idx in fitted.patches_
    )
    assert fitted.score(X_te, y_te) > best_single + 0.05
    assert fitted.score(X_te, y_te) > 0.94


def test_the_deciding_agent_needs_the_coordination(digits, fitted):
    """The central agent decides; without ADMM iterations it sees one patch.

    With its own patch occluded it still answers from what the others
    agreed on, which the uncoordinated agent cannot.
    """
    X_tr, X_te, y_tr, y_te = digits
    alone = SheafADMMClassifier(n_admm_iter=1, max_iter=30, random_state=0)
    alone.fit(X_tr, y_tr)
    assert fitted.score(X_te, y_te) > alone.score(X_te, y_te) + 0.05
    centre = fitted.patches_[len(fitted.patches_) // 2]
    occluded = X_te.copy()
    occluded[:, centre] = 0.0
    assert fitted.score(occluded, y_te) > 0.6
    assert fitted.score(occluded, y_te) > alone.score(occluded, y_te) + 0.3


def test_admm_states_are_exposed_and_agents_converge(digits, fitted):
    _, X_te, _, _ = digits
    states = fitted.admm_states(X_te[:20])
    k, n_agents, n_edges = fitted.n_admm_iter, len(fitted.patches_), len(fitted.edges_)
    assert states["primal"].shape == (k, 20, n_agents, fitted.stalk_dim)
    assert states["consensus"].shape == (k, 20, n_edges, fitted.edge_dim)
    assert states["dual"].shape == (k, 20, n_edges, 2, fitted.edge_dim)
    d = np.median(states["disagreement"], axis=1)
    assert d[-1] < 0.5 * d[0]
    # Read-only inspection: the fitted model is unchanged.
    assert next(fitted.module_.parameters()).dtype == torch.float32


@pytest.mark.parametrize(
    "params, X, match",
    [
        ({"image_shape": (8, 7)}, np.zeros((4, 64)), "56 pixels but X has 64"),
        (
            {"image_shape": (8, 8), "patch_size": 9},
            np.zeros((4, 64)),
            r"larger than the image of shape \(8, 8\); pass patch_size <= 8",
        ),
        # A 1-D signal shorter than the patch.
        ({}, np.zeros((4, 3)), r"image of shape \(1, 3\); pass patch_size <= 3"),
        # A square image smaller than the patch is not read as a signal.
        ({}, np.zeros((4, 9)), r"a 3 x 3 image, smaller than patch_size=4"),
        ({"image_shape": (0, 8)}, np.zeros((4, 64)), "two positive integers"),
        ({"patch_size": 2, "stride": 3}, np.zeros((4, 64)), "left out"),
    ],
)
def test_bad_shapes_are_named(params, X, match):
    y = np.arange(4) % 2
    with pytest.raises(ValueError, match=match):
        SheafADMMClassifier(max_iter=1, **params).fit(X, y)


def test_non_square_width_is_read_as_a_signal():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 10))
    y = (X[:, :3].sum(1) > 0).astype(int)
    clf = SheafADMMClassifier(max_iter=5, random_state=0).fit(X, y)
    assert clf.image_shape_ == (1, 10)
    assert clf.patches_.shape[1] == 4


@pytest.mark.parametrize(
    "change", [{"n_admm_iter": 2}, {"rho": 3.0}, {"learn_sheaf": False}]
)
def test_warm_start_refuses_a_changed_architecture(change):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 16))
    y = np.arange(30) % 2
    params = {**SheafADMMClassifier._get_test_params(), "max_iter": 2}
    clf = SheafADMMClassifier(**params, warm_start=True, random_state=0).fit(X, y)
    (name,) = change
    with pytest.raises(ValueError, match=f"{name}: .* changed since that fit"):
        clf.set_params(**change).fit(X, y)
    clf.set_params(warm_start=False).fit(X, y)
    assert clf.n_iter_ == 2
    # Unchanged, it continues.
    clf.set_params(warm_start=True).fit(X, y)
    assert clf.n_iter_ == 4
