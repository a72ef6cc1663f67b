"""CorrelatedVariationalIMVC: fusion rule, correlation model, clustering, bad input."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score

from sklearn_ext.cluster import CorrelatedVariationalIMVC
from sklearn_ext.cluster._correlated_imvc_nn import CorrelatedIMVCNet
from sklearn_ext.datasets import make_multiview_blobs
from sklearn_ext.utils import check_views, clustering_accuracy

SMALL = {
    "latent_dim": 3,
    "hidden_layer_sizes": (32,),
    "max_iter": 40,
    "learning_rate_init": 3e-3,
    "device": "cpu",
    "random_state": 0,
}


def _net(n_views, learned=True, latent_dim=3):
    net = CorrelatedIMVCNet([2] * n_views, latent_dim, (4,), 2, learned).double()
    return net


def _gls(means, observed, omega):
    """Brute-force GLS fusion of one sample, one latent dimension at a time."""
    obs = np.flatnonzero(observed)
    inv = np.linalg.inv(omega[np.ix_(obs, obs)])
    one = np.ones(len(obs))
    prec = one @ inv @ one
    return np.array(
        [one @ inv @ means[obs, d] / prec for d in range(means.shape[1])]
    ), 1 / prec


def _set_error_model(net, corr_factor, scales):
    with torch.no_grad():
        net.corr_factor.copy_(torch.as_tensor(corr_factor))
        net.log_scale.copy_(torch.as_tensor(np.log(scales)))


@settings(max_examples=40, deadline=None)
@given(
    n_views=st.integers(2, 5),
    seed=st.integers(0, 10_000),
)
def test_calibrated_fusion_is_generalised_least_squares_over_observed_views(
    n_views, seed
):
    rng = np.random.default_rng(seed)
    net = _net(n_views)
    _set_error_model(
        net, rng.normal(size=(n_views, n_views)), rng.uniform(0.3, 2.0, n_views)
    )
    omega = net.error_covariance().detach().numpy()
    n = 6
    means = rng.normal(size=(n, n_views, 3))
    observed = rng.random((n, n_views)) < 0.6
    observed[np.arange(n), rng.integers(0, n_views, n)] = True
    # Values in missing slots must not matter.
    means[~observed] = 1e6
    with torch.no_grad():
        t, v, log_resp = net.calibrated_posterior(
            torch.as_tensor(means), torch.as_tensor(observed)
        )
    centres = net.prior_means.detach().numpy()
    log_pi = torch.log_softmax(net.prior_logits, 0).detach().numpy()
    for i in range(n):
        gm, gv = _gls(means[i], observed[i], omega)
        np.testing.assert_allclose(t[i].numpy(), gm, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(v[i].numpy(), gv, rtol=1e-8)
        # q(c | x) is the posterior of the cluster given the fused estimate.
        joint = log_pi - ((gm - centres) ** 2).sum(1) / (2 * gv)
        expected = joint - np.logaddexp.reduce(joint)
        np.testing.assert_allclose(log_resp[i].numpy(), expected, atol=1e-8)


def test_elbo_fusion_is_the_product_of_experts_under_independence():
    rng = np.random.default_rng(0)
    means = rng.normal(size=(5, 3, 2))
    variances = rng.uniform(0.2, 3.0, size=(5, 3, 2))
    observed = np.array([[1, 1, 1], [1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]], bool)
    net = _net(3, learned=False, latent_dim=2)
    with torch.no_grad():
        m, v = net.fuse(
            torch.as_tensor(means),
            torch.as_tensor(variances),
            torch.as_tensor(observed),
        )
    prec = (observed[..., None] / variances).sum(1)
    np.testing.assert_allclose(v.numpy(), 1 / prec)
    np.testing.assert_allclose(
        m.numpy(), (observed[..., None] * means / variances).sum(1) / prec
    )


def test_elbo_fusion_is_gls_under_the_learned_correlation():
    # Sigma = D R D per latent dimension, D the encoders' standard deviations.
    rng = np.random.default_rng(1)
    means = rng.normal(size=(5, 3, 2))
    variances = rng.uniform(0.2, 3.0, size=(5, 3, 2))
    observed = np.array([[1, 1, 1], [1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]], bool)
    net = _net(3, learned=True, latent_dim=2)
    _set_error_model(net, [[0, 0, 0], [0.8, 0, 0], [-0.3, 0.5, 0]], [1, 1, 1])
    R = net.correlation().detach().numpy()
    assert np.abs(R - np.eye(3)).max() > 0.2
    with torch.no_grad():
        m, v = net.fuse(
            torch.as_tensor(means),
            torch.as_tensor(variances),
            torch.as_tensor(observed),
        )
    for i in range(5):
        o = np.flatnonzero(observed[i])
        for d in range(2):
            sd = np.sqrt(variances[i, o, d])
            sigma = R[np.ix_(o, o)] * np.outer(sd, sd)
            w = np.linalg.solve(sigma, np.ones(len(o)))
            np.testing.assert_allclose(v[i, d].item(), 1 / w.sum(), rtol=1e-8)
            np.testing.assert_allclose(
                m[i, d].item(), w @ means[i, o, d] / w.sum(), rtol=1e-8, atol=1e-10
            )
    # The ELBO reaches R: its gradient to the correlation factor is not zero.
    views = [torch.as_tensor(rng.normal(size=(6, 2))) for _ in range(3)]
    mask = torch.ones(6, 3, dtype=torch.float64)
    noise = torch.Generator().manual_seed(0)
    net.negative_elbo(views, mask, noise).sum().backward()
    assert net.corr_factor.grad is not None
    assert torch.tril(net.corr_factor.grad, -1).abs().max() > 0


def test_positive_correlation_discounts_shared_evidence():
    # Two equally precise views: correlated errors leave the fused mean alone
    # but inflate the fused variance by (1 + rho) / 2 over independent errors.
    net = _net(2, latent_dim=1)
    _set_error_model(net, [[0.0, 0.0], [1.0, 0.0]], [1.0, 1.0])  # rho ~ 1/sqrt(2)
    R = net.correlation().detach().numpy()
    means = torch.tensor([[[1.0], [3.0]]], dtype=torch.float64)
    with torch.no_grad():
        t, v, _ = net.calibrated_posterior(means, torch.ones(1, 2, dtype=torch.bool))
    assert t.item() == pytest.approx(2.0)
    assert v.item() == pytest.approx((1 + R[0, 1]) / 2)


def test_a_view_sharing_the_better_views_error_gets_a_negative_weight():
    # sd 0.5 and 1.0, rho 0.8: GLS weights (4/3, -1/3), where independent
    # errors would weigh (0.8, 0.2).
    net = _net(2, latent_dim=1)
    rho = 0.8 / (1 - 1e-3)  # undo the jitter
    _set_error_model(net, [[0.0, 0.0], [rho / np.sqrt(1 - rho**2), 0.0]], [0.5, 1.0])
    means = torch.tensor([[[1.0], [0.0]], [[0.0], [1.0]]], dtype=torch.float64)
    with torch.no_grad():
        t, _, _ = net.calibrated_posterior(means, torch.ones(2, 2, dtype=torch.bool))
    np.testing.assert_allclose(t[:, 0].numpy(), [4 / 3, -1 / 3], atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 6), st.integers(0, 10_000))
def test_normalised_cholesky_gives_a_correlation_matrix(n_views, seed):
    net = _net(n_views)
    raw = np.random.default_rng(seed).normal(scale=3.0, size=(n_views, n_views))
    with torch.no_grad():
        net.corr_factor.copy_(torch.as_tensor(raw))
    R = net.correlation().detach().numpy()
    np.testing.assert_allclose(np.diag(R), 1.0, atol=1e-12)
    np.testing.assert_allclose(R, R.T, atol=1e-12)
    assert np.linalg.eigvalsh(R).min() > 0


def test_error_likelihood_recovers_planted_scales_and_correlation():
    # Per-view estimates mean_v = m_c + e_v around known centres with
    # Cov(e) = S R S: the error model's likelihood, from incomplete samples,
    # recovers S and R; its value is zero (the loss reported is the ELBO's).
    rng = np.random.default_rng(0)
    n, rho = 4000, 0.6
    sd = np.array([0.5, 1.0, 1.5])
    R_true = np.full((3, 3), rho) + (1 - rho) * np.eye(3)
    net = _net(3, latent_dim=2)
    with torch.no_grad():
        net.prior_means.copy_(torch.tensor([[-5.0, 0.0], [5.0, 0.0]]))
    centres = net.prior_means.detach().numpy()
    labels = rng.integers(0, 2, n)
    e = rng.multivariate_normal(np.zeros(3), R_true * np.outer(sd, sd), size=(n, 2))
    means = torch.as_tensor(centres[labels][:, None, :] + e.transpose(0, 2, 1))
    resp = torch.as_tensor(np.eye(2)[labels])
    observed = rng.random((n, 3)) < 0.7
    observed[observed.sum(1) == 0, 0] = True
    mask = torch.as_tensor(observed)
    opt = torch.optim.Adam(net.error_parameters(), lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        loss = net.error_nll(means, mask, resp).mean()
        assert loss.item() == 0.0
        loss.backward()
        opt.step()
    R = net.correlation().detach().numpy()
    np.testing.assert_allclose(R[np.triu_indices(3, 1)], rho, atol=0.06)
    np.testing.assert_allclose(net.log_scale.exp().detach().numpy(), sd, rtol=0.06)
    # Only the error model learns from this term.
    assert all(p.grad is None for p in net.encoders.parameters())


# ------------------------------------------------------------ the estimator


@pytest.fixture(scope="module")
def blobs():
    X, y, views = make_multiview_blobs(
        400,
        view_sizes=(6, 8, 5),
        n_clusters=3,
        separation=4.0,
        noise=0.3,
        missing_rate=0.4,
        random_state=0,
    )
    return X, y, views


@pytest.fixture(scope="module")
def fitted(blobs):
    X, y, views = blobs
    return CorrelatedVariationalIMVC(3, views=views, **SMALL).fit(X)


def test_recovers_planted_clusters_with_missing_views(blobs, fitted):
    X, y, _ = blobs
    missing = np.isnan(X).any(axis=1)
    assert missing.sum() > 100
    assert adjusted_rand_score(y, fitted.labels_) > 0.9
    assert clustering_accuracy(y[missing], fitted.labels_[missing]) > 0.9
    np.testing.assert_array_equal(fitted.predict(X), fitted.labels_)
    proba = fitted.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert fitted.transform(X).shape == (400, SMALL["latent_dim"])
    assert fitted.get_feature_names_out().tolist() == [
        f"correlatedvariationalimvc{i}" for i in range(3)
    ]
    assert fitted.correlation_.shape == (3, 3)
    assert len(fitted.loss_curve_) == fitted.n_iter_
    assert len(fitted.validation_loss_curve_) == fitted.n_iter_
    # The model's own partition is labels_ unless the anchor was kept.
    if fitted.anchor_kept_:
        assert fitted.predict_proba(X).argmax(1).tolist() == fitted.labels_.tolist()
    else:
        np.testing.assert_array_equal(fitted.model_labels_, fitted.labels_)
    assert clustering_accuracy(y, fitted.model_labels_) > 0.9


def test_one_view_is_enough_to_predict(blobs, fitted):
    # A sample seen through a single view gets the cluster of its full version.
    X, y, views = blobs
    full = ~np.isnan(X).any(axis=1)
    X_one = X[full].copy()
    X_one[:, 6:] = np.nan  # keep view 0 only
    agree = np.mean(fitted.predict(X_one) == fitted.predict(X[full]))
    assert agree > 0.85


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.8])
def test_fit_recovers_a_planted_error_correlation(rho):
    # Latent errors with sds 0.5 / 0.7 / 1.0 and correlation rho, tight
    # clusters (so that the errors around a cluster's centre are the planted
    # ones), 30% of the samples missing views: the estimator's own fit, scales
    # included, recovers R within 0.15 and orders the views' error scales.
    X, y, views = make_multiview_blobs(
        1500,
        view_sizes=(20, 20, 20),
        n_clusters=4,
        latent_dim=4,
        separation=1.5,
        cluster_std=0.1,
        noise=0.1,
        view_error=(0.5, 0.7, 1.0),
        error_correlation=rho,
        missing_rate=0.3,
        random_state=1,
    )
    model = CorrelatedVariationalIMVC(
        4,
        views=views,
        latent_dim=4,
        hidden_layer_sizes=(64,),
        device="cpu",
        random_state=1,
    ).fit(X)
    sd = np.array([0.5, 0.7, 1.0])
    omega = np.outer(sd, sd) * (np.full((3, 3), rho) + (1 - rho) * np.eye(3)) + 0.01
    planted = omega / np.sqrt(np.outer(np.diag(omega), np.diag(omega)))
    off = np.triu_indices(3, 1)
    assert np.abs(model.correlation_ - planted)[off].max() <= 0.15
    assert np.all(np.diff(model.error_scale_) > 0)
    assert clustering_accuracy(y, model.labels_) > 0.9


def test_learned_correlation_beats_independence_where_errors_are_shared():
    # Correlated errors (rho 0.8) whose GLS weights differ from the
    # independent ones (the Bayes-optimal accuracy gap is about 4 points):
    # the ablation to R = I, with its own learned scales, loses.
    X, y, views = make_multiview_blobs(
        1500,
        view_sizes=(20, 20, 20),
        n_clusters=4,
        latent_dim=4,
        separation=1.0,
        cluster_std=0.3,
        noise=0.2,
        view_error=(0.4, 0.8, 1.2),
        error_correlation=0.8,
        missing_rate=0.3,
        random_state=0,
    )
    acc = {}
    for corr in ("learned", "independent"):
        model = CorrelatedVariationalIMVC(
            4,
            views=views,
            latent_dim=4,
            hidden_layer_sizes=(64,),
            correlation=corr,
            device="cpu",
            random_state=0,
        ).fit(X)
        acc[corr] = clustering_accuracy(y, model.labels_)
    assert acc["learned"] > acc["independent"] + 0.02


def test_independent_ablation_keeps_the_identity(blobs):
    X, y, views = blobs
    model = CorrelatedVariationalIMVC(
        3, views=views, correlation="independent", **SMALL
    ).fit(X)
    np.testing.assert_array_equal(model.correlation_, np.eye(3))
    learned = CorrelatedVariationalIMVC(3, views=views, **SMALL).fit(X)
    assert not np.allclose(learned.correlation_, np.eye(3), atol=1e-3)
    # R is inside the ELBO: the encoders train under it, so they differ
    # from the independent model's (same seed, same data).
    a = learned.module_.encoders[0][0].weight.detach().numpy()
    b = model.module_.encoders[0][0].weight.detach().numpy()
    assert np.abs(a - b).max() > 1e-4


# --------------------------------------------------------------- bad input


def test_partly_missing_view_block(blobs):
    X, _, views = blobs
    X = X.copy()
    X[5, 0] = np.nan
    X[5, 1:6] = 1.0
    with pytest.raises(ValueError, match=r"sample\(s\) 5 have view 0 only partly"):
        CorrelatedVariationalIMVC(3, views=views, **SMALL).fit(X)


def test_sample_without_any_view(blobs):
    X, _, views = blobs
    X = X.copy()
    X[7] = np.nan
    with pytest.raises(ValueError, match=r"sample\(s\) 7 have no observed view"):
        CorrelatedVariationalIMVC(3, views=views, **SMALL).fit(X)


@pytest.mark.parametrize(
    "views, match",
    [
        ([6, 8], "add up to 14 columns, but X has 19"),
        ([[0, 1], [2, 3]], "belong to no view"),
        ([[0, 1, 2], [2, 3]], "column 2 is in view 0 and in view 1"),
    ],
)
def test_views_that_do_not_fit_the_columns(blobs, views, match):
    X, _, _ = blobs
    with pytest.raises(ValueError, match=match):
        CorrelatedVariationalIMVC(3, views=views, **SMALL).fit(X)


def test_more_clusters_than_samples(blobs):
    X, _, views = blobs
    with pytest.raises(ValueError, match="n_clusters=20 is larger than the number"):
        CorrelatedVariationalIMVC(20, views=views, **SMALL).fit(X[:10])


def test_infinity_is_not_a_missing_view(blobs):
    X, _, views = blobs
    X = X.copy()
    X[np.isfinite(X).all(1).argmax(), 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        CorrelatedVariationalIMVC(3, views=views, **SMALL).fit(X)


def test_anchor_marginalises_missing_views_and_sets_the_mixture(blobs):
    # The anchor partition (k-means with partial distances on the
    # standardised views) recovers the planted clusters with 40% of the
    # samples missing views, better than k-means on mean-imputed views.
    from sklearn.cluster import KMeans

    X, y, views = make_multiview_blobs(
        600,
        view_sizes=(10, 6, 4),
        n_clusters=4,
        separation=2.0,
        noise=(0.5, 1.0, 2.0),
        missing_rate=0.4,
        random_state=3,
    )
    model = CorrelatedVariationalIMVC(
        4, views=views, **{**SMALL, "pretrain_iter": 0, "max_iter": 1}
    ).fit(X)
    Z = model._standardised(X)
    observed = ~np.isnan(X[:, np.cumsum([0, *views[:-1]])])
    anchor, centres = model._anchor_labels(Z, observed, None, 0)
    imputed = KMeans(4, n_init=10, random_state=0).fit_predict(Z)
    assert clustering_accuracy(y, anchor) > clustering_accuracy(y, imputed) + 0.04
    # Its labels are the nearest centres over the observed columns.
    Zo, obs = model._observed_columns(Z, observed)
    np.testing.assert_array_equal(
        model._partial_distances(Zo, obs, centres).argmin(1), anchor
    )
    # The mixture starts from the anchor's clusters: its prior means are
    # distinct (one per anchor cluster).
    centres = model.module_.prior_means.detach().numpy()
    assert (
        min(np.linalg.norm(centres[i] - centres[j]) for i in range(4) for j in range(i))
        > 1e-3
    )
    # Complete data: the anchor is k-means on the standardised views.
    Xc, _, vc = make_multiview_blobs(120, view_sizes=(3, 4), random_state=1)
    full = np.ones((120, 2), bool)
    Zc = (Xc - Xc.mean(0)) / Xc.std(0)
    m2 = CorrelatedVariationalIMVC(3, views=vc)
    m2.views_ = check_views(vc, 7)
    np.testing.assert_array_equal(
        m2._anchor_labels(Zc, full, None, 5)[0],
        KMeans(3, n_init=10, random_state=5).fit_predict(Zc),
    )


def test_warm_start_continues_and_refuses_a_changed_network(blobs):
    X, _, views = blobs
    model = CorrelatedVariationalIMVC(
        3, views=views, warm_start=True, **{**SMALL, "max_iter": 5}
    ).fit(X)
    first = model.n_iter_
    model.fit(X)
    assert model.n_iter_ > first and len(model.loss_curve_) == model.n_iter_
    model.set_params(n_clusters=4)
    with pytest.raises(ValueError, match=r"n_clusters: 3 -> 4 changed"):
        model.fit(X)


def test_a_view_no_sample_has(blobs):
    X, _, views = blobs
    X = X[~np.isnan(X[:, 0])].copy()  # every sample keeps view 0
    X[:, 6:14] = np.nan  # and none has view 1
    with pytest.raises(ValueError, match=r"view\(s\) \[1\] are missing in every"):
        CorrelatedVariationalIMVC(3, views=views, **SMALL).fit(X)


# ------------------------------------------------------ phases and verbosity


def test_pretraining_is_a_labelled_fixed_phase(blobs, capsys):
    X, _, views = blobs
    model = CorrelatedVariationalIMVC(
        3, views=views, verbose=1, **{**SMALL, "pretrain_iter": 3, "max_iter": 2}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X)
    # Pretraining is a fixed budget: no warning, and none that names a value
    # the user did not set; the variational phase warns about its own max_iter.
    messages = [str(w.message) for w in caught if w.category is ConvergenceWarning]
    assert len(messages) == 1
    assert "training stopped at max_iter=2" in messages[0]
    assert "pretraining" not in messages[0]
    assert len(model.pretraining_loss_curve_) == 3
    assert model.n_iter_ == 2
    err = capsys.readouterr().err
    assert "CorrelatedVariationalIMVC: pretraining" in err
    assert "CorrelatedVariationalIMVC: training" in err


def test_silent_by_default(blobs, capsys):
    X, _, views = blobs
    CorrelatedVariationalIMVC(3, views=views, **{**SMALL, "max_iter": 2}).fit(X)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


# ------------------------------------------------------- DataFrame columns


def _named(X):
    pd = pytest.importorskip("pandas")
    return pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])


def test_views_by_dataframe_column_names(blobs):
    X, _, views = blobs
    # The DataFrame's columns shuffled, so that names must be mapped to the
    # right positions.
    perm = np.random.default_rng(0).permutation(X.shape[1])
    position = np.argsort(perm)  # where original column j lands
    df = _named(X)[[f"c{j}" for j in perm]]
    blocks = check_views(views, X.shape[1])
    name_views = [[f"c{j}" for j in block] for block in blocks]
    index_views = [position[block].tolist() for block in blocks]
    # Names and positions mixed in one view follow the same rule.
    name_views[0][0] = index_views[0][0]
    params = {**SMALL, "max_iter": 5, "pretrain_iter": 3}
    named = CorrelatedVariationalIMVC(3, views=name_views, **params).fit(df)
    plain = CorrelatedVariationalIMVC(3, views=index_views, **params).fit(X[:, perm])
    assert [v.tolist() for v in named.views_] == index_views
    np.testing.assert_array_equal(named.labels_, plain.labels_)
    np.testing.assert_array_equal(named.predict(df), plain.predict(X[:, perm]))
    np.testing.assert_allclose(named.transform(df), plain.transform(X[:, perm]))


def test_unknown_column_name_is_named(blobs):
    X, _, views = blobs
    df = _named(X)
    cols = [list(df.columns[:6]), list(df.columns[6:14]), [*df.columns[14:18], "cX"]]
    model = CorrelatedVariationalIMVC(3, views=cols, **SMALL)
    with pytest.raises(ValueError, match=r"views\[2\] names the column 'cX', which X"):
        model.fit(df)
    names = [list(df.columns[:6]), list(df.columns[6:])]
    with pytest.raises(ValueError, match=r"'c0', but X has no column names"):
        CorrelatedVariationalIMVC(3, views=names, **SMALL).fit(X)


# ----------------------------------------------------------- sample weights


@pytest.fixture(scope="module")
def weighted_blobs(blobs):
    X, y, views = blobs
    X, y = X[:150], y[:150]
    # Weight 2 on the samples of cluster 0, i.e. cluster 0 counted twice.
    weights = np.where(y == 0, 2, 1)
    return X, y, views, weights


WEIGHT_PARAMS = {**SMALL, "batch_size": 32}


def _share_of_cluster_zero(model, y):
    """The mixture weight of the component that holds true cluster 0."""
    component = np.bincount(model.labels_[y == 0]).argmax()
    log_pi = torch.log_softmax(model.module_.prior_logits.detach(), 0)
    return float(log_pi.exp()[component])


def test_weighted_standardisation_equals_repeated_rows(weighted_blobs):
    X, _, views, weights = weighted_blobs
    params = {**WEIGHT_PARAMS, "pretrain_iter": 0, "max_iter": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = CorrelatedVariationalIMVC(3, views=views, **params).fit(
            X, sample_weight=weights
        )
        repeated = CorrelatedVariationalIMVC(3, views=views, **params).fit(
            np.repeat(X, weights, axis=0)
        )
    np.testing.assert_allclose(weighted.col_mean_, repeated.col_mean_)
    np.testing.assert_allclose(weighted.col_scale_, repeated.col_scale_)


@pytest.mark.slow
def test_weights_of_two_match_repeated_rows_in_distribution(weighted_blobs):
    """Over seeds, weight 2 and a repeated row give the same fitted mixture.

    The statistic is the mixture weight of the component holding cluster 0:
    its share of the samples without weights, its share of the weight when
    cluster 0 counts twice. Weighted and repeated fits must agree within the
    seed-to-seed spread, and differ from the unweighted fit by far more.
    """
    X, y, views, weights = weighted_blobs
    X_rep, y_rep = np.repeat(X, weights, axis=0), np.repeat(y, weights)
    shares = {"weighted": [], "repeated": [], "unweighted": []}
    for seed in range(3):
        params = {**WEIGHT_PARAMS, "random_state": seed}
        model = CorrelatedVariationalIMVC(3, views=views, **params)
        shares["weighted"].append(
            _share_of_cluster_zero(model.fit(X, sample_weight=weights), y)
        )
        shares["repeated"].append(_share_of_cluster_zero(model.fit(X_rep), y_rep))
        shares["unweighted"].append(_share_of_cluster_zero(model.fit(X), y))
    mean = {k: np.mean(v) for k, v in shares.items()}
    spread = max(np.std(shares["weighted"]), np.std(shares["repeated"]), 0.01)
    assert abs(mean["weighted"] - mean["repeated"]) < 3 * spread, shares
    assert abs(mean["weighted"] - np.mean(y_rep == 0)) < 0.03, shares
    assert abs(mean["unweighted"] - np.mean(y == 0)) < 0.03, shares
    assert mean["weighted"] - mean["unweighted"] > 10 * spread, shares


def test_zero_weights_leave_the_fit_to_the_other_samples(weighted_blobs):
    """Zero weight on cluster 2: the data of clusters 0 and 1 alone decide."""
    X, y, views, _ = weighted_blobs
    weights = (y != 2).astype(float)
    params = {**WEIGHT_PARAMS, "random_state": 0}
    model = CorrelatedVariationalIMVC(2, views=views, **params)
    zeroed = model.fit(X, sample_weight=weights)
    keep = y != 2
    np.testing.assert_allclose(
        zeroed.col_mean_, np.nanmean(X[keep], axis=0), rtol=1e-10, atol=1e-12
    )
    # Two components for the two weighted clusters, each taking one of them.
    assert adjusted_rand_score(y[keep], zeroed.labels_[keep]) > 0.9
    log_pi = torch.log_softmax(zeroed.module_.prior_logits.detach(), 0)
    np.testing.assert_allclose(np.sort(log_pi.exp().numpy()), [0.5, 0.5], atol=0.08)
    # A view that only zero-weight samples have cannot be learned.
    X_one = np.where(np.isnan(X), 0.0, X)
    X_one[y == 0, :6] = np.nan  # cluster 0 keeps views 1 and 2 only,
    X_one[y != 0, 6:] = np.nan  # the others view 0 only
    with pytest.raises(ValueError, match=r"\[1, 2\] are missing in every sample of"):
        model.fit(X_one, sample_weight=(y != 0).astype(float))


def _as_list(X, views):
    edges = np.cumsum([0, *views])
    return [X[:, a:b].copy() for a, b in zip(edges[:-1], edges[1:])]


def test_a_list_of_per_view_arrays_gives_the_stacked_result(blobs):
    X, y, views = blobs
    params = {**SMALL, "max_iter": 3, "pretrain_iter": 2}
    stacked = CorrelatedVariationalIMVC(3, views=views, **params).fit(X)
    Xs = _as_list(X, views)
    before = [x.copy() for x in Xs]
    listed = CorrelatedVariationalIMVC(3, **params).fit(Xs)
    np.testing.assert_array_equal(listed.labels_, stacked.labels_)
    np.testing.assert_array_equal(listed.predict(Xs), stacked.predict(X))
    np.testing.assert_allclose(listed.transform(Xs), stacked.transform(X))
    np.testing.assert_array_equal(
        CorrelatedVariationalIMVC(3, **params).fit_predict(Xs), stacked.labels_
    )
    for a, b in zip(Xs, before):  # input not modified
        np.testing.assert_array_equal(a, b)
    # A per-view mask marks the same rows as the NaN rows do.
    mask = ~np.isnan(np.column_stack([x[:, 0] for x in Xs]))
    filled = [np.where(np.isnan(x), 7.0, x) for x in Xs]
    masked = CorrelatedVariationalIMVC(3, **params).fit(filled, view_mask=mask)
    np.testing.assert_array_equal(masked.labels_, stacked.labels_)
    as_list = CorrelatedVariationalIMVC(3, **params).fit(filled, view_mask=list(mask.T))
    np.testing.assert_array_equal(as_list.labels_, stacked.labels_)
    # A model fitted on the stacked X predicts a list in its column layout.
    np.testing.assert_array_equal(stacked.predict(Xs), stacked.labels_)


def test_a_view_list_with_bad_shapes_is_refused(blobs):
    X, _, views = blobs
    Xs = _as_list(X, views)
    model = CorrelatedVariationalIMVC(3, max_iter=1, pretrain_iter=0, device="cpu")
    with pytest.raises(ValueError, match="different numbers of rows"):
        model.fit([Xs[0], Xs[1][:-1], Xs[2]])
    with pytest.raises(ValueError, match="view 1 of the list is 1-D"):
        model.fit([Xs[0], Xs[1][:, 0], Xs[2]])
    with pytest.raises(ValueError, match="view_mask must have shape"):
        model.fit(Xs, view_mask=np.ones((len(X), 2), bool))
    with pytest.raises(ValueError, match="missing in every view"):
        model.fit(Xs, view_mask=np.zeros((len(X), 3), bool))
    with pytest.raises(ValueError, match="views=\\[1, 2\\]"):
        CorrelatedVariationalIMVC(3, views=[1, 2]).fit(Xs)
    with pytest.raises(ValueError, match="view_mask marks missing rows"):
        model.fit(X, view_mask=np.ones((len(X), 3), bool))
    fitted = CorrelatedVariationalIMVC(3, views=views, **{**SMALL, "max_iter": 1}).fit(
        X
    )
    with pytest.raises(ValueError, match="fitted on views of widths"):
        fitted.predict([Xs[0], Xs[1], Xs[2][:, :2]])


def test_defaults_beat_kmeans_on_a_planted_incomplete_set():
    # Defaults (device aside) against k-means on standardised mean-imputed
    # views, 40% of the samples missing views; seeds not used by the benchmark.
    from sklearn.cluster import KMeans
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import StandardScaler

    ours, peer = [], []
    for seed in (200, 201):
        X, y, views = make_multiview_blobs(
            500,
            view_sizes=(10, 6, 4),
            n_clusters=4,
            separation=2.0,
            noise=(0.5, 1.0, 2.0),
            missing_rate=0.4,
            random_state=seed,
        )
        model = CorrelatedVariationalIMVC(
            4, views=views, device="cpu", random_state=seed
        ).fit(X)
        ours.append(clustering_accuracy(y, model.labels_))
        Z = SimpleImputer().fit_transform(StandardScaler().fit_transform(X))
        peer.append(
            clustering_accuracy(
                y, KMeans(4, n_init=10, random_state=seed).fit_predict(Z)
            )
        )
    assert np.mean(ours) >= np.mean(peer) + 0.03, (ours, peer)


def test_auto_schedule_trains_small_data_enough_to_find_the_clusters():
    """Iris in two views (sepals, petals): 150 samples fit in one minibatch.

    With a budget in epochs (10 pretraining epochs = 10 steps) and the
    fixed tol=0.5 (an eighth of iris's final loss), the mixture starts from
    an untrained encoder and collapses (the anchor is then kept); "auto"
    resolves both from the data.
    """
    from sklearn.datasets import load_iris

    from sklearn_ext.utils import clustering_accuracy

    X, y = load_iris(return_X_y=True)
    observed = np.ones((150, 2), bool)
    auto, fixed = [], []
    for seed in range(2):
        model = CorrelatedVariationalIMVC(
            n_clusters=3, views=[2, 2], device="cpu", random_state=seed
        ).fit(X)
        # 15 of the 150 samples are held out; the 135 training rows fit in
        # one batch: ceil(80 / 1 batch) pretraining epochs.
        assert len(model.pretraining_loss_curve_) == 80
        # The trained model's posterior (labels_ may be the anchor's).
        auto.append(clustering_accuracy(y, model._infer(X, observed)[2].argmax(1)))
        old = CorrelatedVariationalIMVC(
            n_clusters=3,
            views=[2, 2],
            pretrain_iter=10,
            tol=0.5,
            device="cpu",
            random_state=seed,
        ).fit(X)
        # The old schedule's mixture collapses (a cluster left empty), so the
        # anchor (k-means) is kept: the defaults cannot fall below it.
        assert old.anchor_kept_
        fixed.append(clustering_accuracy(y, old.labels_))
    assert min(auto) > 0.85
    assert min(fixed) > 0.8
