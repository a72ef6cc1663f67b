"""TGINEE: recovery, the GEE equations, inference, link prediction, bad input."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import norm
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score, make_scorer, roc_auc_score
from sklearn.model_selection import GridSearchCV, KFold, train_test_split

from sklearn_ext.datasets import make_multilayer_network
from sklearn_ext.network import TGINEE, tensor_to_dyads
from sklearn_ext.network._tginee_solver import (
    MaskedInverse,
    gee_blocks,
    missing_layout,
    moments,
)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _network(n=80, rho=0.0, link="logit", seed=0, **kw):
    A, C, truth = make_multilayer_network(
        n, 3, 2, link=link, layer_correlation=rho, random_state=seed, **kw
    )
    # Row-major order: the tolerances below were set on these data.
    X, Y = tensor_to_dyads(A, C, shuffle=False)
    return X, Y, truth


def _model(**kw):
    kw = {"dyad_columns": (0, 1), **kw}
    return TGINEE(2, device="cpu", random_state=0, **kw)


def test_recovers_communities_coefficients_and_links():
    X, Y, truth = _network(n=120, rho=0.6)
    X_tr, X_te, Y_tr, Y_te = train_test_split(X, Y, test_size=0.2, random_state=0)
    model = _model().fit(X_tr, Y_tr)
    labels = KMeans(3, n_init=10, random_state=0).fit_predict(model.node_factors_)
    assert adjusted_rand_score(truth.communities[model.nodes_], labels) >= 0.9
    rel = np.linalg.norm(model.coef_ - truth.coef) / np.linalg.norm(truth.coef)
    assert rel < 0.15
    P = model.predict(X_te)
    auc = np.mean([roc_auc_score(Y_te[:, k], P[:, k]) for k in range(3)])
    assert auc > 0.75
    assert 0.1 < model.working_correlation_[0, 1] < 0.6  # copula-attenuated 0.6


def test_independence_solves_the_bernoulli_score_equations():
    X, Y, _ = _network(n=40)
    model = _model(working_covariance="independence", alpha=0.0).fit(X, Y)
    mu = model.predict(X)
    Zt = np.hstack([X[:, 2:], np.ones((len(X), 1))])
    # GEE with R = I and a canonical link: sum_d z_d (y_dl - mu_dl) = 0.
    assert_allclose(Zt.T @ (Y - mu), 0, atol=1e-4)


@pytest.mark.parametrize("structure", ["exchangeable", "unstructured"])
def test_coefficients_solve_the_gee_with_the_working_correlation(structure):
    X, Y, _ = _network(n=50, rho=0.6)
    model = _model(working_covariance=structure, max_iter=60, tol=1e-8).fit(X, Y)
    eta = np.log(model.predict(X) / (1 - model.predict(X)))
    mu, dmu, var = moments(eta, "logit")
    inv_sd = 1 / np.sqrt(var)
    layout = missing_layout(np.ones_like(Y, dtype=bool), torch.device("cpu"))
    inverse = MaskedInverse(torch.as_tensor(model.working_correlation_), layout)
    Zt = np.hstack([X[:, 2:], np.ones((len(X), 1))])
    H, S = gee_blocks(
        *map(torch.as_tensor, (dmu, inv_sd, Y - mu)),
        inverse,
        torch.as_tensor(Zt),
        torch.ones(len(Zt), dtype=torch.float64),
    )
    S = S.numpy()
    # The estimating function for (beta, b) vanishes at the solution.
    assert np.abs(S.sum(0)).max() < 1e-4 * np.abs(S).sum(0).max()
    R = model.working_correlation_
    assert_allclose(R, R.T)
    assert np.linalg.eigvalsh(R).min() > 0
    if structure == "exchangeable":
        off = R[~np.eye(3, dtype=bool)]
        assert_allclose(off, off[0])


@pytest.mark.parametrize("structure", ["unstructured", "exchangeable"])
def test_masked_inverse_equals_the_inverse_on_each_dyads_layers(structure):
    """Low-rank and closed forms against R_OO^{-1}, dyad by dyad."""
    rng = np.random.default_rng(0)
    n, L, q = 200, 6, 2
    if structure == "exchangeable":
        R = np.full((L, L), -0.15)  # negative: c_d < 0 in the closed form
        np.fill_diagonal(R, 1.0)
    else:
        B = rng.normal(size=(L, L))
        R = B @ B.T + L * np.eye(L)
        R = R / np.sqrt(np.outer(np.diag(R), np.diag(R)))
    # Every count of missing layers, from none to all: both low-rank forms.
    mask = rng.random((n, L)) >= rng.uniform(0, 1, (n, 1))
    mask[:3] = True
    mask[3] = False
    layout = missing_layout(mask, torch.device("cpu"))
    inverse = MaskedInverse(torch.as_tensor(R), layout)
    assert inverse.exchangeable == (structure == "exchangeable")
    e = rng.normal(size=(n, L)) * mask
    a = rng.uniform(0.2, 1.0, (n, L)) * mask
    Zt = rng.normal(size=(n, q))
    w = rng.uniform(0.5, 2.0, n)
    want_e = np.zeros((n, L))
    want_H = np.zeros((L * q, L * q))
    for d in range(n):
        seen = np.flatnonzero(mask[d])
        Rinv = np.zeros((L, L))
        if seen.size:
            Rinv[np.ix_(seen, seen)] = np.linalg.inv(R[np.ix_(seen, seen)])
        want_e[d] = Rinv @ e[d]
        block = a[d][:, None] * Rinv * a[d][None, :]
        want_H += w[d] * np.kron(block, np.outer(Zt[d], Zt[d]))
    got_e = inverse.matvec(torch.as_tensor(e)).numpy()
    got_H = inverse.gram(*map(torch.as_tensor, (a, Zt, w))).numpy()
    assert_allclose(got_e, want_e, atol=1e-10)
    assert_allclose(got_H, want_H, atol=1e-9)


def test_sandwich_intervals_cover_the_truth():
    """The benchmark's coverage study, smaller: 204 intervals, two-sided.

    The band [0.90, 0.99] around the nominal 0.95 (about 3 binomial standard
    errors each way at 204 intervals) fails intervals that are too narrow and
    intervals that are too wide.
    """
    hits, total = 0, 0
    for seed in range(34):
        X, Y, truth = _network(n=100, rho=0.6, seed=seed)
        model = _model().fit(X, Y)
        lo, hi = np.moveaxis(model.conf_int(0.05), -1, 0)
        hits += ((lo <= truth.coef) & (truth.coef <= hi)).sum()
        total += truth.coef.size
    assert total >= 200
    assert 0.90 <= hits / total <= 0.99


def test_identity_link_without_factors_matches_least_squares():
    rng = np.random.RandomState(0)
    X = rng.randn(200, 3)
    B = rng.randn(2, 3)
    Y = X @ B.T + 0.5 + 0.1 * rng.randn(200, 2)
    model = TGINEE(link="identity", device="cpu").fit(X, Y)
    Xt = np.hstack([X, np.ones((200, 1))])
    ols = np.linalg.lstsq(Xt, Y, rcond=None)[0].T
    assert_allclose(model.coef_, ols[:, :3], atol=1e-6)
    assert_allclose(model.intercept_, ols[:, 3], atol=1e-6)
    assert not hasattr(model, "transform")


def test_missing_entries_are_skipped():
    X, Y, truth = _network(n=80)
    Y = Y.copy()
    rng = np.random.RandomState(0)
    Y[rng.rand(*Y.shape) < 0.2] = np.nan
    model = _model().fit(X, Y)
    assert np.isfinite(model.predict(X)).all()
    rel = np.linalg.norm(model.coef_ - truth.coef) / np.linalg.norm(truth.coef)
    assert rel < 0.3
    assert np.isfinite(model.score(X, Y))


def test_count_layers_with_log_link():
    X, Y, truth = _network(n=60, link="log")
    model = _model(link="log").fit(X, Y)
    rel = np.linalg.norm(model.coef_ - truth.coef) / np.linalg.norm(truth.coef)
    assert rel < 0.15
    assert (model.predict(X) > 0).all()


def test_transform_returns_node_factors_and_names_unseen_nodes():
    X, Y, _ = _network(n=30)
    model = _model().fit(X, Y)
    assert_array_equal(model.transform(np.array([3, 0])), model.node_factors_[[3, 0]])
    with pytest.raises(ValueError, match="Node 99"):
        model.transform(np.array([99]))
    # A dyad with an unseen node: zero factor term (covariates and intercepts
    # alone), with a warning that names it; the other dyads are unchanged.
    X_new = X[:2].copy()
    X_new[0, 1] = 77
    with pytest.warns(UserWarning, match=r"1 node\(s\) of X were not seen.*node 77"):
        eta = model.decision_function(X_new)
    assert_allclose(eta[0], X_new[0, 2:] @ model.coef_.T + model.intercept_)
    assert_allclose(eta[1], model.decision_function(X[1:2])[0])


def test_grid_search_over_dyads_is_link_prediction():
    X, Y, _ = _network(n=50)

    def mean_auc(y_true, y_pred):
        return np.mean(
            [roc_auc_score(y_true[:, k], y_pred[:, k]) for k in range(y_true.shape[1])]
        )

    search = GridSearchCV(
        _model(max_iter=5),
        {
            "n_components": [1, 2],
            "working_covariance": ["independence", "exchangeable"],
        },
        scoring=make_scorer(mean_auc),
        cv=KFold(3, shuffle=True, random_state=0),
    ).fit(X, Y)
    assert search.best_params_["n_components"] == 2
    assert 0.6 < search.best_score_ <= 1.0


# --------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda X: np.r_[[[-1.0, *X[0, 1:]]], X[1:]], "non-negative integers"),
        (lambda X: np.r_[X[:1] + [0.5, 0, 0, 0], X[1:]], "non-negative integers"),
        (lambda X: np.where(np.arange(X.shape[1]) == 2, np.nan, X), "NaN"),
    ],
)
def test_bad_node_indices_and_nan_in_x(change, match):
    X, Y, _ = _network(n=20)
    with pytest.raises(ValueError, match=match):
        _model().fit(change(X), Y)


def test_dyad_columns_out_of_range():
    X, Y, _ = _network(n=20)
    with pytest.raises(ValueError, match="out of range"):
        TGINEE(dyad_columns=(0, 9), device="cpu").fit(X, Y)
    with pytest.raises(ValueError, match="two different column"):
        TGINEE(dyad_columns=(1, 1), device="cpu").fit(X, Y)


def test_link_that_does_not_fit_the_data():
    X, Y, _ = _network(n=20, link="identity")
    with pytest.raises(ValueError, match='link="log" needs non-negative'):
        _model(link="log").fit(X, Y)
    with pytest.raises(ValueError, match='link="logit" needs binary'):
        _model(link="logit").fit(X, Y)


def test_layer_count_must_match_fit():
    X, Y, _ = _network(n=20)
    model = _model().fit(X, Y)
    with pytest.raises(ValueError, match="3 layers|fitted with 3"):
        model.score(X, Y[:, :2])


def test_a_layer_without_edges_does_not_drag_the_others():
    X, Y, truth = _network(n=60)
    Y = Y.copy()
    Y[:, 1] = 0
    with pytest.warns(UserWarning, match=r"Layers \[1\] of y take a single value"):
        model = _model().fit(X, Y)
    assert np.abs(model.coef_[[0, 2]] - truth.coef[[0, 2]]).max() < 0.5
    assert np.isfinite(model.intercept_).all()


def test_score_skips_a_layer_without_observed_entries():
    X, Y, _ = _network(n=40)
    model = _model().fit(X, Y)
    Y_test = Y.copy()
    Y_test[:, 2] = np.nan
    assert np.isfinite(model.score(X, Y_test))


def test_huge_node_ids_and_refits_without_factors():
    X, Y, _ = _network(n=20)
    X_big = X.copy()
    X_big[:, :2] += 2.0**60
    with pytest.raises(ValueError, match="below 2\\*\\*53"):
        _model().fit(X_big, Y)
    model = _model().fit(X, Y)
    model.set_params(dyad_columns=None, link="logit").fit(X[:, 2:], Y)
    assert not hasattr(model, "node_factors_")


# ---------------------------------------------------------- sample weights

FITTED = (
    "coef_",
    "intercept_",
    "node_factors_",
    "layer_weights_",
    "bse_",
    "intercept_bse_",
    "covariance_",
    "working_correlation_",
    "scale_",
)


@pytest.mark.parametrize("structure", ["exchangeable", "unstructured"])
def test_integer_weights_are_repeated_dyads(structure):
    """Weights are frequencies: likelihood, correlation, GEE and sandwich alike."""
    X, Y, _ = _network(n=40, rho=0.5)
    rng = np.random.RandomState(1)
    Y = np.where(rng.rand(*Y.shape) < 0.1, np.nan, Y)
    keep = ~np.isnan(Y).all(1)
    X, Y = X[keep], Y[keep]
    w = rng.randint(0, 4, size=len(X))
    w[(X[:, 0] == 5) | (X[:, 1] == 5)] = 0  # node 5 only in dropped dyads
    # Solved tightly: the two fits sum the same terms in different orders, so
    # they agree to rounding, amplified up to the solver's tolerance.
    params = {"working_covariance": structure, "tol": 1e-11, "max_iter": 400}
    weighted = _model(**params).fit(X, Y, sample_weight=w)
    order = rng.permutation(int(w.sum()))
    X_rep, Y_rep = np.repeat(X, w, axis=0)[order], np.repeat(Y, w, axis=0)[order]
    repeated = _model(**params).fit(X_rep, Y_rep)
    assert_array_equal(weighted.nodes_, repeated.nodes_)
    assert 5 not in weighted.nodes_
    for attr in FITTED:
        expected = np.asarray(getattr(repeated, attr))
        scale = np.abs(expected).max()
        assert_allclose(getattr(weighted, attr), expected, atol=1e-6 * scale)
    assert_allclose(weighted.predict(X[w > 0]), repeated.predict(X[w > 0]), rtol=1e-6)
    with pytest.raises(ValueError, match="Node 5 was not seen"):
        weighted.transform([5])
    # Weights that differ from one change the fit.
    plain = _model(**params).fit(X, Y)
    assert np.abs(plain.coef_ - weighted.coef_).max() > 1e-3


def test_weighted_fit_is_weighted_least_squares_with_its_sandwich():
    rng = np.random.RandomState(0)
    X = rng.randn(150, 3)
    Y = X @ rng.randn(2, 3).T + 0.3 + rng.randn(150, 2) * (1 + X[:, :1] ** 2)
    w = rng.uniform(0.2, 3.0, size=150)
    model = TGINEE(link="identity", working_covariance="independence", device="cpu")
    model.fit(X, Y, sample_weight=w)
    Xt = np.hstack([X, np.ones((150, 1))])
    root = np.sqrt(w)[:, None]
    wls = np.linalg.lstsq(Xt * root, Y * root, rcond=None)[0].T
    assert_allclose(model.coef_, wls[:, :3], atol=1e-6)
    assert_allclose(model.intercept_, wls[:, 3], atol=1e-6)
    # HC0 sandwich of WLS with frequency weights, layer by layer.
    bread = np.linalg.inv(Xt.T @ (Xt * w[:, None]))
    for layer in range(2):
        r = Y[:, layer] - Xt @ wls[layer]
        meat = Xt.T @ (Xt * (w * r**2)[:, None])
        se = np.sqrt(np.diag(bread @ meat @ bread))
        assert_allclose(model.bse_[layer], se[:3], rtol=1e-5)
        assert_allclose(model.intercept_bse_[layer], se[3], rtol=1e-5)


# ------------------------------------------------ column names, string ids


def test_dataframe_column_names_and_string_node_ids():
    pd = pytest.importorskip("pandas")
    X, Y, _ = _network(n=30)
    by_index = _model().fit(X, Y)
    names = np.array([f"node{k:02d}" for k in range(30)], dtype=object)
    i, j = X[:, 0].astype(int), X[:, 1].astype(int)
    frame = pd.DataFrame(
        {"x1": X[:, 2], "src": names[i], "x2": X[:, 3], "dst": names[j]}
    )
    by_name = _model(dyad_columns=("src", "dst")).fit(frame, Y)
    assert by_name.nodes_.dtype == object
    assert list(by_name.nodes_) == list(names)
    assert_allclose(by_name.predict(frame), by_index.predict(X), rtol=1e-10)
    assert_allclose(by_name.coef_, by_index.coef_, rtol=1e-10)
    assert_allclose(
        by_name.transform(["node03", "node00"]), by_index.transform([3, 0]), rtol=1e-10
    )
    # Integer ids in named columns work too.
    ints = frame.assign(src=i, dst=j)
    by_int_name = _model(dyad_columns=["src", "dst"]).fit(ints, Y)
    assert_allclose(by_int_name.predict(ints), by_index.predict(X), rtol=1e-10)

    new = frame.iloc[:2].copy()
    new.loc[new.index[0], "dst"] = "stranger"
    with pytest.warns(UserWarning, match="node 'stranger'"):
        by_name.predict(new)
    with pytest.raises(ValueError, match="Node 3 was not seen"):
        by_name.transform([3])
    with pytest.raises(ValueError, match="Node 'node03' was not seen"):
        by_index.transform(["node03"])
    with pytest.raises(ValueError, match="names the column 'source'"):
        _model(dyad_columns=("source", "dst")).fit(frame, Y)
    # A string among the covariates is still an error, and so are mixed ids.
    bad = frame.astype({"x1": object})
    bad.loc[0, "x1"] = "high"
    with pytest.raises(ValueError, match="could not convert string"):
        by_name.fit(bad, Y)
    mixed = frame.astype({"src": object})
    mixed.loc[0, "src"] = 7
    with pytest.raises(ValueError, match="mix strings and numbers"):
        by_name.fit(mixed, Y)


# ------------------------------------------------- progress and warnings


def test_verbose_shows_a_labelled_progress_bar(capsys):
    X, Y, _ = _network(n=20)
    _model(verbose=1, max_iter=3).fit(X, Y)
    out, err = capsys.readouterr()
    assert "TGINEE: rounds" in err
    assert out == ""


def test_convergence_warning_names_the_callers_line():
    X, Y, _ = _network(n=20)
    with pytest.warns(ConvergenceWarning, match="max_iter=1") as record:
        _model(max_iter=1).fit(X, Y)
    assert record[0].filename == __file__
    model = _model().fit(X, y=Y)
    assert model.device_ == "cpu"


def test_roc_auc_scoring_and_the_default_score_for_binary_edges():
    from sklearn.model_selection import cross_val_score

    X, Y, _ = _network(n=60, rho=0.3)
    model = _model().fit(X, Y)
    eta = model.decision_function(X)
    assert_allclose(1 / (1 + np.exp(-eta)), model.predict(X))
    auc = np.mean([roc_auc_score(Y[:, k], eta[:, k]) for k in range(3)])
    assert model.score(X, Y) == pytest.approx(auc)
    cv = KFold(3, shuffle=True, random_state=0)
    by_scorer = cross_val_score(_model(), X, Y, scoring="roc_auc", cv=cv)
    by_default = cross_val_score(_model(), X, Y, cv=cv)
    assert np.isfinite(by_scorer).all() and (by_scorer > 0.6).all()
    assert_allclose(by_scorer, by_default)
    # Not for counts or weights, where score stays R^2.
    assert not hasattr(_model(link="identity"), "decision_function")


def test_node_id_columns_without_dyad_columns_warn():
    X, Y, _ = _network(n=30)
    with pytest.warns(UserWarning, match=r"Columns 0 and 1 of X look like node ids"):
        TGINEE(dyad_columns=None, device="cpu").fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        TGINEE(device="cpu").fit(X[:, 2:], Y)  # covariates only: no warning


def test_without_factors_equals_statsmodels_gee_exchangeable():
    """Coefficients and sandwich errors of statsmodels' GEE, to 1e-6."""
    sm = pytest.importorskip("statsmodels.api")
    X, Y, _ = _network(n=40, rho=0.5)
    Z = X[:, 2:]
    Y = Y.copy()
    Y[np.random.RandomState(0).rand(*Y.shape) < 0.15] = np.nan  # scattered NaN
    keep = ~np.isnan(Y).all(1)
    Z, Y = Z[keep], Y[keep]
    n, L = Y.shape
    model = TGINEE(
        link="logit",
        working_covariance="exchangeable",
        tol=1e-12,
        max_iter=200,
        device="cpu",
    ).fit(Z, Y)
    # Long format: one row per observed (dyad, layer), a block of (z, 1) per layer.
    d, layer = np.nonzero(~np.isnan(Y))
    Zt = np.hstack([Z, np.ones((n, 1))])
    q = Zt.shape[1]
    exog = np.zeros((len(d), L * q))
    for k in range(L):
        rows = layer == k
        exog[rows, k * q : (k + 1) * q] = Zt[d[rows]]
    gee = sm.GEE(
        Y[d, layer],
        exog,
        groups=d,
        family=sm.families.Binomial(),
        cov_struct=sm.cov_struct.Exchangeable(),
    ).fit(maxiter=200, ctol=1e-12, ddof_scale=0)
    params = gee.params.reshape(L, q)
    assert_allclose(model.coef_, params[:, :-1], atol=1e-6)
    assert_allclose(model.intercept_, params[:, -1], atol=1e-6)
    bse = np.sqrt(np.diag(gee.cov_robust)).reshape(L, q)
    assert_allclose(model.bse_, bse[:, :-1], atol=1e-6)
    assert_allclose(model.intercept_bse_, bse[:, -1], atol=1e-6)
    rho = gee.model.cov_struct.dep_params
    assert_allclose(model.working_correlation_[0, 1], rho, atol=1e-6)


@pytest.mark.parametrize("link", ["probit", "cloglog"])
def test_probit_and_cloglog_links_solve_their_score_equations(link):
    X, Y, _ = _network(n=50, rho=0.3)
    model = _model(link=link, working_covariance="independence", alpha=0.0).fit(X, Y)
    eta = model.decision_function(X)
    mu, dmu, var = moments(eta, link)
    expected = norm.cdf(eta) if link == "probit" else -np.expm1(-np.exp(eta))
    assert_allclose(model.predict(X), expected, rtol=1e-10)
    assert_allclose(mu, expected, rtol=1e-10)
    Zt = np.hstack([X[:, 2:], np.ones((len(X), 1))])
    # Bernoulli score for any link: sum_d z_d dmu (y - mu) / (mu (1 - mu)) = 0.
    score = Zt.T @ (dmu * (Y - mu) / var)
    assert np.abs(score).max() < 1e-4 * np.abs(Zt).sum()
    logit = _model(working_covariance="independence").fit(X, Y)
    # The links differ, the ranking of the dyads hardly does.
    assert abs(model.score(X, Y) - logit.score(X, Y)) < 0.01
    exch = _model(link=link).fit(X, Y)
    assert np.isfinite(exch.bse_).all() and exch.n_iter_ > 1


def test_the_working_covariance_reaches_the_factors():
    X, Y, truth = _network(n=80, rho=0.9)
    Y = Y.copy()
    Y[np.random.RandomState(0).rand(*Y.shape) < 0.3] = np.nan
    keep = ~np.isnan(Y).all(1)
    X, Y = X[keep], Y[keep]
    fits = {
        cov: _model(working_covariance=cov).fit(X, Y)
        for cov in ("independence", "exchangeable", "unstructured")
    }
    U0 = fits["independence"].node_factors_
    for cov in ("exchangeable", "unstructured"):
        U = fits[cov].node_factors_
        # The same factors up to the GEE weighting: close, but not equal.
        assert 1e-3 < np.abs(U - U0).max() < 0.5 * np.abs(U0).max()
        assert fits[cov].working_correlation_[0, 1] > 0.3
    # Under independence the factors are the likelihood's: one stage, no rounds.
    assert fits["independence"].n_iter_ == 1


def test_factors_match_tensorly_masked_cp_on_an_exact_low_rank_tensor():
    """No covariates, independence, identity link: a CP of the tensor."""
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import parafac

    rng = np.random.default_rng(0)
    n, L, R = 30, 3, 2
    U = rng.normal(size=(n, R))
    W = rng.uniform(0.5, 1.5, size=(L, R))
    A = np.einsum("ir,jr,lr->lij", U, U, W)
    for layer in A:
        np.fill_diagonal(layer, np.nan)
    X, Y = tensor_to_dyads(A)
    model = TGINEE(
        R,
        dyad_columns=(0, 1),
        link="identity",
        working_covariance="independence",
        alpha=0.0,
        fit_intercept=False,
        device="cpu",
        random_state=0,
    ).fit(X, Y)
    assert np.abs(model.predict(X) - Y).max() < 1e-5
    mask = tl.tensor((~np.isnan(A)).astype(float))
    cp = parafac(
        tl.tensor(np.nan_to_num(A)),
        R,
        mask=mask,
        init="random",
        n_iter_max=2000,
        tol=1e-14,
        random_state=0,
    )
    i, j = X[:, 0].astype(int), X[:, 1].astype(int)
    assert np.abs(tl.cp_to_tensor(cp)[:, i, j].T - Y).max() < 1e-6
    # The same node factors up to the CP indeterminacies (order, scale, sign).
    ours = model.node_factors_[np.argsort(model.nodes_)]
    corr = np.abs(np.corrcoef(np.hstack([ours, cp.factors[1]]).T)[:R, R:])
    match = corr.argmax(1)
    assert sorted(match) == list(range(R))
    assert corr[np.arange(R), match].min() > 0.9999


def test_directed_fit_recovers_sender_and_receiver_roles():
    """Flows from community k + 1 to k: only sender and receiver factors fit them."""
    A, C, truth = make_multilayer_network(
        80, 3, 2, directed=True, asymmetric=True, layer_correlation=0.6, random_state=0
    )
    X, Y = tensor_to_dyads(A, C)
    X_tr, X_te, Y_tr, Y_te = train_test_split(X, Y, test_size=0.25, random_state=0)
    directed = _model(directed=True).fit(X_tr, Y_tr)
    undirected = _model().fit(X_tr, Y_tr)

    def auc(model):
        P = model.predict(X_te)
        return np.mean([roc_auc_score(Y_te[:, k], P[:, k]) for k in range(3)])

    assert auc(directed) > auc(undirected) + 0.05
    assert auc(directed) > 0.75
    z = truth.communities[directed.nodes_]
    for factors in (directed.node_factors_, directed.receiver_factors_):
        labels = KMeans(3, n_init=10, random_state=0).fit_predict(factors)
        assert adjusted_rand_score(z, labels) >= 0.9
    # The senders' and receivers' factors differ (a cyclic shift of roles).
    assert not np.allclose(directed.node_factors_, directed.receiver_factors_, atol=0.3)
    assert directed.transform(directed.nodes_[:4]).shape == (4, 4)
    assert_allclose(
        directed.transform(directed.nodes_[:4]),
        np.hstack([directed.node_factors_[:4], directed.receiver_factors_[:4]]),
    )
    # Undirected: one factor per node, the receivers' a copy of it.
    assert_array_equal(undirected.receiver_factors_, undirected.node_factors_)
    assert undirected.transform(undirected.nodes_[:4]).shape == (4, 2)
    # The direction is fitted: swapping the id columns changes the prediction.
    swapped = X_te[:, [1, 0, 2, 3]]
    assert np.abs(directed.predict(swapped) - directed.predict(X_te)).max() > 0.1
    assert_allclose(undirected.predict(swapped), undirected.predict(X_te))


@pytest.mark.parametrize("structure", ["independence", "exchangeable"])
def test_directed_cp_fits_an_exact_asymmetric_low_rank_tensor(structure):
    rng = np.random.default_rng(1)
    n, L, R = 25, 3, 2
    U, V = rng.normal(size=(n, R)), rng.normal(size=(n, R))
    W = rng.uniform(0.5, 1.5, size=(L, R))
    A = np.einsum("ir,jr,lr->lij", U, V, W)
    for layer in A:
        np.fill_diagonal(layer, np.nan)
    X, Y = tensor_to_dyads(A)
    kw = {"link": "identity", "alpha": 0.0, "fit_intercept": False, "max_iter": 50}
    kw["working_covariance"] = structure
    directed = _model(directed=True, **kw).fit(X, Y)
    assert np.abs(directed.predict(X) - Y).max() < 1e-4
    # The symmetric CP cannot: its residual is of the size of the data.
    undirected = _model(**kw).fit(X, Y)
    assert np.abs(undirected.predict(X) - Y).std() > 0.3 * Y.std()


# ------------------------------------- scoring and cross-validation (issue 57)


def _incomplete(n=40, hidden=0.2, seed=0):
    """A network with symmetric unobserved entries, dyads in node order."""
    A, C, truth = make_multilayer_network(
        n, 3, 2, layer_correlation=0.3, random_state=seed
    )
    hide = np.random.RandomState(seed).rand(*A.shape) < hidden
    A = np.where(hide | hide.transpose(0, 2, 1), np.nan, A)
    X, Y = tensor_to_dyads(A, C, shuffle=False)
    return X, Y, truth


def test_observed_metrics_equal_the_complete_data_metrics_on_observed_entries():
    from sklearn.metrics import accuracy_score, log_loss, r2_score

    from sklearn_ext.network import (
        observed_accuracy_score,
        observed_log_loss,
        observed_r2_score,
        observed_roc_auc_score,
    )

    rng = np.random.RandomState(0)
    Y = (rng.rand(200, 3) < 0.4).astype(float)
    P = np.clip(0.3 * Y + 0.7 * rng.rand(200, 3), 1e-3, 1 - 1e-3)
    w = rng.uniform(0.5, 2.0, 200)
    # Complete y: scikit-learn's own metrics.
    assert observed_roc_auc_score(Y, P) == pytest.approx(roc_auc_score(Y, P))
    assert observed_log_loss(Y, P) == pytest.approx(log_loss(Y.ravel(), P.ravel()))
    assert observed_accuracy_score(Y, P) == pytest.approx(
        accuracy_score(Y.ravel(), P.ravel() >= 0.5)
    )
    assert observed_r2_score(Y, P) == pytest.approx(r2_score(Y, P))
    # NaN entries: each metric on the observed entries only, the same numbers
    # whatever the hidden entries' predictions.
    Y_nan = np.where(rng.rand(200, 3) < 0.3, np.nan, Y)
    seen = ~np.isnan(Y_nan)
    P_other = np.where(seen, P, rng.rand(200, 3))
    per_layer = [
        roc_auc_score(Y[seen[:, k], k], P[seen[:, k], k], sample_weight=w[seen[:, k]])
        for k in range(3)
    ]
    for preds in (P, P_other):
        assert observed_roc_auc_score(Y_nan, preds, sample_weight=w) == pytest.approx(
            np.mean(per_layer)
        )
        assert_allclose(
            observed_roc_auc_score(Y_nan, preds, sample_weight=w, average=None),
            per_layer,
        )
        ww = np.broadcast_to(w[:, None], Y.shape)[seen]
        assert observed_log_loss(Y_nan, preds, sample_weight=w) == pytest.approx(
            log_loss(Y[seen], P[seen], sample_weight=ww)
        )
        assert observed_roc_auc_score(Y_nan, preds, average="micro") == pytest.approx(
            roc_auc_score(Y[seen], P[seen])
        )
        assert observed_accuracy_score(Y_nan, preds) == pytest.approx(
            accuracy_score(Y[seen], P[seen] >= 0.5)
        )
    # A layer with one class among its observed entries is skipped.
    Y_one = Y_nan.copy()
    Y_one[:, 2] = np.where(seen[:, 2], 1.0, np.nan)
    assert observed_roc_auc_score(Y_one, P, sample_weight=w) == pytest.approx(
        np.mean(per_layer[:2])
    )
    with pytest.raises(ValueError, match="both classes"):
        observed_roc_auc_score(np.ones((5, 2)), rng.rand(5, 2))
    with pytest.raises(ValueError, match="binary edges"):
        observed_roc_auc_score(Y_nan * 2, P)
    with pytest.raises(ValueError, match="same shape"):
        observed_log_loss(Y, P[:, :2])
    with pytest.raises(ValueError, match="probabilities"):
        observed_log_loss(Y, P * 3)


def test_observed_scorer_makes_cross_val_score_finite_and_equals_score():
    from sklearn.model_selection import cross_validate

    from sklearn_ext.network import (
        NodeKFold,
        get_observed_scorer,
        observed_accuracy_score,
    )

    X, Y, _ = _incomplete()
    assert np.isnan(Y).mean() > 0.1
    cv = NodeKFold(3, shuffle=True, random_state=0)
    scoring = {
        "plain": "roc_auc",
        "auc": get_observed_scorer("roc_auc"),
        "loss": get_observed_scorer("neg_log_loss"),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = cross_validate(_model(), X, Y, scoring=scoring, cv=cv)
    assert np.isnan(result["test_plain"]).all()  # scikit-learn rejects NaN in y
    assert np.isfinite(result["test_auc"]).all() and (result["test_auc"] > 0.6).all()
    assert np.isfinite(result["test_loss"]).all() and (result["test_loss"] < 0).all()
    # The default score and the scorers agree with the metrics on a fit.
    train, test = next(cv.split(X, Y))
    model = _model().fit(X[train], Y[train])
    auc = get_observed_scorer("roc_auc")(model, X[test], Y[test])
    assert auc == pytest.approx(result["test_auc"][0])
    assert model.score(X[test], Y[test]) == pytest.approx(auc)
    scorer = get_observed_scorer("accuracy")
    assert scorer(model, X, Y) == observed_accuracy_score(Y, model.predict(X))
    with pytest.raises(ValueError, match="scoring must be one of"):
        get_observed_scorer("f1")


def _check_folds(folds, X, Y, n_splits):
    """Every node in each training fold; the test folds partition the dyads."""
    observed = ~np.isnan(Y).all(1)
    tested = np.concatenate([test for _, test in folds])
    assert len(folds) == n_splits
    assert len(np.unique(tested)) == len(tested)  # disjoint
    for train, test in folds:
        assert_array_equal(np.sort(np.r_[train, test]), np.arange(len(X)))
        seen = np.unique(X[train][observed[train]][:, :2])
        assert_array_equal(seen, np.unique(X[observed][:, :2]))
    return set(tested.tolist())


def test_node_k_fold_keeps_every_node_in_training_and_partitions_the_dyads():
    from sklearn.model_selection import KFold

    from sklearn_ext.network import NodeKFold

    X, Y, _ = _incomplete(n=30)
    Y[5] = np.nan  # a dyad without an observed entry is never tested
    observed = ~np.isnan(Y).all(1)
    # Plain KFold on dyads in node order leaves node 0 out of fold 0's training.
    train, _ = next(KFold(5).split(X))
    assert 0 not in X[train, :2]
    for params in ({}, {"shuffle": True, "random_state": 3}):
        cv = NodeKFold(5, **params)
        assert cv.get_n_splits() == 5
        tested = _check_folds(list(cv.split(X, Y)), X, Y, 5)
        assert tested == set(np.flatnonzero(observed).tolist())
    # Low degrees: a path 0-1-2-...-9 plus a pendant node 10 with one dyad.
    path = np.array([[i, i + 1] for i in range(9)] + [[3, 10], [0, 2], [5, 7]])
    folds = list(NodeKFold(3, shuffle=True, random_state=0).split(path))
    tested = _check_folds(folds, path, np.zeros((len(path), 1)), 3)
    # Rows (8, 9) and (3, 10) are the only dyads of nodes 9 and 10: never tested.
    assert tested == set(range(len(path))) - {8, 9}
    # String ids in named columns.
    pd = pytest.importorskip("pandas")
    names = np.array([f"n{i:02d}" for i in range(30)], dtype=object)
    frame = pd.DataFrame(
        {"x": X[:, 2], "a": names[X[:, 0].astype(int)], "b": names[X[:, 1].astype(int)]}
    )
    folds = list(NodeKFold(4, dyad_columns=("a", "b")).split(frame, Y))
    assert _check_folds(folds, X, Y, 4) == set(np.flatnonzero(observed).tolist())
    with pytest.raises(ValueError, match="n_splits"):
        list(NodeKFold(1).split(X))
    with pytest.raises(ValueError, match="names the column 'c'"):
        list(NodeKFold(dyad_columns=("c", "b")).split(frame))
    with pytest.raises(ValueError, match="non-negative integers"):
        list(NodeKFold().split(np.c_[X[:, :1] - 1, X[:, 1:]]))


@settings(max_examples=60, deadline=None)
@given(
    n_nodes=st.integers(3, 14),
    density=st.floats(0.1, 1.0),
    n_splits=st.integers(2, 5),
    seed=st.integers(0, 10_000),
    shuffle=st.booleans(),
)
def test_node_k_fold_covers_every_node_on_random_graphs(
    n_nodes, density, n_splits, seed, shuffle
):
    from sklearn_ext.network import NodeKFold

    rng = np.random.RandomState(seed)
    pairs = np.array([(i, j) for i in range(n_nodes) for j in range(i + 1, n_nodes)])
    pairs = pairs[rng.rand(len(pairs)) < density]
    Y = np.where(rng.rand(len(pairs), 2) < 0.1, np.nan, 1.0)
    observed = ~np.isnan(Y).all(1)
    if observed.sum() < n_splits:
        return
    cv = NodeKFold(n_splits, shuffle=shuffle, random_state=seed)
    folds = list(cv.split(pairs, Y))
    tested = np.concatenate([test for _, test in folds])
    assert len(np.unique(tested)) == len(tested)
    assert observed[tested].all()
    nodes = np.unique(pairs[observed])
    for train, _ in folds:
        assert_array_equal(np.unique(pairs[train][observed[train]]), nodes)
    # Untested observed dyads: those of a node with a single observed dyad
    # (only those from three folds on).
    degree = np.bincount(pairs[observed].ravel(), minlength=n_nodes)
    pendant = (degree[pairs] == 1).any(1) & observed
    untested = np.setdiff1d(np.flatnonzero(observed), tested)
    assert pendant[untested].all() or n_splits == 2
    if n_splits >= 3:
        assert_array_equal(untested, np.flatnonzero(pendant))


def test_kfold_on_node_order_warns_and_node_k_fold_does_not():
    from sklearn.model_selection import KFold, cross_val_score

    from sklearn_ext.network import NodeKFold

    X, Y, _ = _incomplete(n=30)
    with pytest.warns(UserWarning, match="were not seen during fit"):
        scores = cross_val_score(_model(), X, Y, cv=KFold(2))
    assert np.isfinite(scores).all()  # scored from the covariates, not NaN
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not seen during fit")
        scores = cross_val_score(_model(), X, Y, cv=NodeKFold(2))
    assert np.isfinite(scores).all()


def test_dyad_columns_are_inferred_from_tensor_to_dyads_output():
    A, C, truth = make_multilayer_network(40, 3, 2, random_state=0)
    X, Y = tensor_to_dyads(A, C)
    auto = TGINEE(2, device="cpu", random_state=0).fit(X, Y)
    explicit = _model().fit(X, Y)
    assert auto.dyad_columns_ == (0, 1)
    assert auto.node_factors_.shape == (40, 2)
    assert_allclose(auto.predict(X), explicit.predict(X))
    assert_allclose(auto.coef_, explicit.coef_)
    assert_allclose(auto.transform([0, 1]), explicit.transform([0, 1]))
    # Without covariates too: TGINEE().fit(*tensor_to_dyads(A)).
    only = TGINEE(2, device="cpu", random_state=0).fit(*tensor_to_dyads(A))
    assert only.coef_.shape == (3, 0) and only.node_factors_.shape == (40, 2)
    # Covariates that are not ids: no factors, no transform.
    plain = TGINEE(device="cpu").fit(X[:, 2:], Y)
    assert plain.dyad_columns_ is None
    assert not hasattr(plain, "node_factors_") and not hasattr(plain, "transform")
    # A self-pair or a repeated pair is not the tensor_to_dyads layout.
    X_loop = X.copy()
    X_loop[0, 1] = X_loop[0, 0]
    assert TGINEE(device="cpu").fit(X_loop, Y).dyad_columns_ is None
    # dyad_columns=None opts out even on tensor_to_dyads output.
    with pytest.warns(UserWarning, match="look like node ids"):
        none = TGINEE(dyad_columns=None, device="cpu").fit(X, Y)
    assert none.dyad_columns_ is None and none.coef_.shape == (3, 4)


def test_summary_reports_the_sandwich_inference():
    from scipy.stats import norm as normal

    from sklearn_ext.network import TGINEESummary

    X, Y, _ = _network(n=40, rho=0.3)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["i", "j", "distance", "same_group"])
    layers = pd.DataFrame(Y, columns=["friend", "advice", "work"])
    model = _model(dyad_columns=("i", "j")).fit(frame, layers)
    summary = model.summary(alpha=0.1)
    assert isinstance(summary, TGINEESummary)
    table = summary.table
    assert list(table.index.get_level_values("layer")[:3]) == ["friend"] * 3
    assert list(table.index.get_level_values("term")[:3]) == [
        "distance",
        "same_group",
        "intercept",
    ]
    coef = np.c_[model.coef_, model.intercept_].ravel()
    bse = np.c_[model.bse_, model.intercept_bse_].ravel()
    assert_allclose(table["coef"], coef)
    assert_allclose(table["std err"], bse)
    # The sandwich errors are the square roots of covariance_'s diagonal.
    assert_allclose(table["std err"] ** 2, np.diag(model.covariance_))
    assert_allclose(table["z"], coef / bse)
    assert_allclose(table["P>|z|"], 2 * normal.sf(np.abs(coef / bse)))
    lo, hi = np.moveaxis(model.conf_int(0.1), -1, 0)
    assert_allclose(table["[0.05"].to_numpy().reshape(3, 3)[:, :2], lo)
    assert_allclose(table["0.95]"].to_numpy().reshape(3, 3)[:, :2], hi)
    text = str(summary)
    assert "friend: distance" in text and "robust (sandwich)" in text
    assert "<table" in summary._repr_html_()
    with pytest.raises(ValueError, match="alpha"):
        model.summary(alpha=1.5)


def test_summary_without_statsmodels_is_a_plain_text_table(monkeypatch):
    import sys

    X, Y, _ = _network(n=30)
    model = _model().fit(X, Y)
    with_sm = str(model.summary())
    monkeypatch.setitem(sys.modules, "statsmodels.iolib.summary", None)
    plain = model.summary()
    text = str(plain)
    assert text != with_sm
    assert "layer 0: x2" in text and "P>|z|" in text
    assert f"{model.coef_[0, 0]:.4f}" in text
    assert plain._repr_html_().startswith("<pre>")


def test_an_all_nan_layer_is_a_clear_error():
    X, Y, _ = _network(n=20)
    Y = Y.copy()
    Y[:, 1] = np.nan
    with pytest.raises(ValueError, match=r"Layers \[1\] of y have no observed entry"):
        _model().fit(X, Y)
    with pytest.raises(ValueError, match='link="logit" needs binary'):
        _model().fit(X, np.where(np.isnan(Y), 0.0, Y) - 1)
