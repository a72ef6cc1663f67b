"""The multilayer-network generator."""

import numpy as np
import pytest
from scipy.special import expit
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from sklearn_ext.datasets._multilayer_network import make_multilayer_network
from sklearn_ext.network._dyads import tensor_to_dyads

LINKS = ["logit", "log", "identity"]


def _dyad_values(tensor, directed):
    """(n_layers, n_dyads) values of the dyads i < j (or i != j if directed)."""
    n = tensor.shape[1]
    if directed:
        rows, cols = np.nonzero(~np.eye(n, dtype=bool))
    else:
        rows, cols = np.triu_indices(n, k=1)
    return tensor[:, rows, cols]


def _variance(mu, link):
    return {"logit": mu * (1 - mu), "log": mu, "identity": np.ones_like(mu)}[link]


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("link", LINKS)
def test_shapes_symmetry_and_diagonal(link, directed):
    n, L, R, p = 30, 3, 2, 4
    A, C, truth = make_multilayer_network(
        n, L, R, link=link, n_covariates=p, directed=directed, random_state=0
    )
    assert A.shape == (L, n, n) and A.dtype == np.float64
    assert C.shape == (n, n, p) and C.dtype == np.float64
    assert truth.communities.shape == (n,)
    assert np.issubdtype(truth.communities.dtype, np.integer)
    assert set(truth.communities) <= {0, 1, 2}
    assert truth.node_factors.shape == (n, R)
    assert truth.layer_weights.shape == (L, R)
    assert truth.coef.shape == (L, p) and truth.intercept.shape == (L,)
    off = ~np.eye(n, dtype=bool)
    for tensor in (A, truth.linear_predictor, truth.mean):
        assert tensor.shape == (L, n, n)
        assert np.isnan(tensor[:, ~off]).all()
        assert not np.isnan(tensor[:, off]).any()
    assert (C[~off] == 0).all() and np.isfinite(C).all()
    symmetric = [
        np.array_equal(A, A.transpose(0, 2, 1), equal_nan=True),
        np.array_equal(C, C.transpose(1, 0, 2)),
        np.array_equal(truth.mean, truth.mean.transpose(0, 2, 1), equal_nan=True),
    ]
    assert all(symmetric) != directed
    if directed:
        assert not any(symmetric)
    # tensor_to_dyads sees the same directedness.
    X, Y = tensor_to_dyads(A, C)
    assert X.shape == (n * (n - 1) // (1 if directed else 2), 2 + p)
    assert Y.shape == (X.shape[0], L)


@pytest.mark.parametrize(
    "directed, asymmetric", [(False, False), (True, False), (True, True)]
)
@pytest.mark.parametrize("link", LINKS)
def test_truth_is_the_stated_model(link, directed, asymmetric):
    A, C, truth = make_multilayer_network(
        40, 3, 2, link=link, directed=directed, asymmetric=asymmetric, random_state=1
    )
    U, V, W = truth.node_factors, truth.receiver_factors, truth.layer_weights
    assert np.allclose(U, V) != asymmetric
    assert V is not U
    factor = np.einsum("ir,jr,lr->lij", U, V, W)
    eta = factor + np.einsum("ijk,lk->lij", C, truth.coef)
    eta += truth.intercept[:, None, None]
    off = ~np.eye(40, dtype=bool)
    np.testing.assert_allclose(truth.linear_predictor[:, off], eta[:, off])
    inverse_link = {"logit": expit, "log": np.exp, "identity": lambda x: x}[link]
    np.testing.assert_allclose(
        truth.mean[:, off], inverse_link(truth.linear_predictor[:, off])
    )
    assert ((W >= 0.5) & (W <= 1.5)).all()
    # The factor term has a moderate spread.
    assert np.std(_dyad_values(factor, directed)) == pytest.approx(1.25)
    mu = _dyad_values(truth.mean, directed)
    if link == "logit":
        np.testing.assert_allclose(mu.mean(axis=1), 0.2, rtol=1e-8)
    elif link == "log":
        np.testing.assert_allclose(mu.mean(axis=1), 2.0, rtol=1e-8)
    else:
        np.testing.assert_array_equal(truth.intercept, 0.0)


@pytest.mark.parametrize("link", LINKS)
def test_edge_values_by_link(link):
    A, _, _ = make_multilayer_network(40, 2, link=link, random_state=2)
    y = _dyad_values(A, False).ravel()
    if link == "logit":
        assert set(np.unique(y)) == {0.0, 1.0}
    elif link == "log":
        assert (y >= 0).all() and (y == np.round(y)).all() and y.max() > 1
    else:
        assert len(np.unique(y)) == y.size


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("link", LINKS)
def test_empirical_mean_matches_truth(link, directed):
    A, _, truth = make_multilayer_network(
        120, 3, link=link, layer_correlation=0.4, directed=directed, random_state=3
    )
    y, mu = _dyad_values(A, directed), _dyad_values(truth.mean, directed)
    se = np.sqrt(_variance(mu, link).sum(axis=1)) / mu.shape[1]
    z = (y.mean(axis=1) - mu.mean(axis=1)) / se
    assert (np.abs(z) < 4).all(), z


def _residual_correlation(link, rho, seed):
    A, _, truth = make_multilayer_network(
        150, 4, link=link, layer_correlation=rho, random_state=seed
    )
    y, mu = _dyad_values(A, False), _dyad_values(truth.mean, False)
    corr = np.corrcoef((y - mu) / np.sqrt(_variance(mu, link)))
    return corr[~np.eye(4, dtype=bool)]


@pytest.mark.parametrize("link", LINKS)
def test_layers_are_uncorrelated_at_zero(link):
    assert np.abs(_residual_correlation(link, 0.0, seed=4)).max() < 0.05


def test_layer_correlation_through_the_copula():
    assert _residual_correlation("logit", 0.6, seed=5).mean() > 0.2
    assert _residual_correlation("log", 0.6, seed=5).min() > 0.3
    np.testing.assert_allclose(
        _residual_correlation("identity", 0.6, 5), 0.6, atol=0.03
    )
    # Negative within the positive-definite range.
    assert _residual_correlation("identity", -0.3, seed=5).max() < -0.25
    assert _residual_correlation("logit", -0.3, seed=5).max() < -0.03


def test_reproducible_with_random_state():
    first = make_multilayer_network(30, 3, link="log", random_state=7)
    second = make_multilayer_network(
        30, 3, link="log", random_state=np.random.RandomState(7)
    )
    other = make_multilayer_network(30, 3, link="log", random_state=8)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    for key in first[2]:
        np.testing.assert_array_equal(first[2][key], second[2][key])
    assert not np.array_equal(first[0], other[0], equal_nan=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_node_factors_recover_communities(seed):
    _, _, truth = make_multilayer_network(random_state=seed)
    labels = KMeans(3, n_init=10, random_state=0).fit_predict(truth.node_factors)
    assert adjusted_rand_score(truth.communities, labels) > 0.95


def test_asymmetric_flows_run_from_one_community_to_the_next():
    A, _, truth = make_multilayer_network(
        120, 2, directed=True, asymmetric=True, random_state=3
    )
    z = truth.communities
    forward = z[:, None] == (z[None, :] + 1) % 3  # sender in k + 1, receiver in k
    backward = z[None, :] == (z[:, None] + 1) % 3
    for layer in A:
        assert np.nanmean(layer[forward]) > 2 * np.nanmean(layer[backward])
    # The same seed without asymmetry: the same communities, symmetric flows.
    _, _, plain = make_multilayer_network(120, 2, directed=True, random_state=3)
    assert np.array_equal(plain.communities, z)


def test_layers_are_assortative():
    A, _, truth = make_multilayer_network(100, 3, random_state=9)
    same = truth.communities[:, None] == truth.communities[None, :]
    off = ~np.eye(100, dtype=bool)
    for layer in A:
        assert np.mean(layer[same & off]) > 2 * np.mean(layer[~same])


def test_edge_cases():
    A, C, truth = make_multilayer_network(
        2, 1, 1, n_covariates=0, n_communities=2, layer_correlation=-0.9
    )
    assert A.shape == (1, 2, 2) and C.shape == (2, 2, 0)
    assert truth.coef.shape == (1, 0)
    A, C, truth = make_multilayer_network(
        20, 5, 3, link="identity", n_communities=1, layer_correlation=-0.24
    )
    assert (truth.communities == 0).all() and np.isfinite(truth.intercept).all()
    _, _, truth = make_multilayer_network(10, 2, n_communities=3, random_state=0)
    assert truth.node_factors.shape == (10, 2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_nodes": 1}, "n_nodes"),
        ({"n_nodes": 2.5}, "n_nodes"),
        ({"n_layers": 0}, "n_layers"),
        ({"n_components": 0}, "n_components"),
        ({"link": "probit"}, "link"),
        ({"layer_correlation": 1.0}, "layer_correlation"),
        ({"layer_correlation": -1.0, "n_layers": 1}, "layer_correlation"),
        ({"layer_correlation": -1 / 3}, "layer_correlation"),
        ({"layer_correlation": -0.6, "n_layers": 3}, "layer_correlation"),
        ({"n_covariates": -1}, "n_covariates"),
        ({"n_communities": 0}, "n_communities"),
        ({"n_communities": 11, "n_nodes": 10}, "n_communities"),
        ({"community_separation": -1.0}, "community_separation"),
        ({"directed": "no"}, "directed"),
        ({"asymmetric": True}, "asymmetric=True needs directed=True"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_bad_inputs_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_multilayer_network(**kwargs)
