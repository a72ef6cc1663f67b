"""Bundled data and generators."""

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from sklearn_ext.datasets import load_mfeat, make_multiview_blobs, mask_views
from sklearn_ext.utils import check_views, observed_views


def test_load_mfeat_shape_views_and_classes():
    data = load_mfeat()
    assert data.data.shape == (2000, 649) and data.data.dtype == np.float64
    assert data.views == [76, 216, 64, 240, 47, 6]
    assert data.view_names == ["fou", "fac", "kar", "pix", "zer", "mor"]
    np.testing.assert_array_equal(np.bincount(data.target), np.full(10, 200))
    assert np.isfinite(data.data).all()
    assert len(data.feature_names) == 649
    assert "CC BY 4.0" in data.DESCR and "10.24432/C5HC70" in data.DESCR
    X, y = load_mfeat(return_X_y=True)
    np.testing.assert_array_equal(X, data.data)
    # The pixel view holds 2x3-window pixel averages: integers 0..6.
    pix = X[:, 76 + 216 + 64 : 76 + 216 + 64 + 240]
    assert pix.min() == 0 and pix.max() == 6 and np.all(pix == np.round(pix))


def test_mfeat_views_carry_the_digits():
    X, y = load_mfeat(return_X_y=True)
    pix = X[:, 356:596]
    labels = KMeans(10, n_init=3, random_state=0).fit_predict(pix)
    assert adjusted_rand_score(y, labels) > 0.5


@pytest.mark.parametrize("missing_rate", [0.0, 0.3, 0.7, 1.0])
def test_mask_views_protocol(missing_rate):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 9))
    X_before = X.copy()
    views = [3, 4, 2]
    Xm = mask_views(X, views, missing_rate, random_state=0)
    np.testing.assert_array_equal(X, X_before)
    observed = observed_views(Xm, check_views(views, 9))  # raises if a sample has none
    lost = ~observed.all(axis=1)
    assert lost.sum() == round(missing_rate * 200)
    np.testing.assert_array_equal(Xm[~np.isnan(Xm)], X[~np.isnan(Xm)])


def test_mask_views_is_seeded_and_needs_two_views():
    X = np.zeros((50, 4))
    a = mask_views(X, [2, 2], 0.5, random_state=3)
    b = mask_views(X, [2, 2], 0.5, random_state=3)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    with pytest.raises(ValueError, match="at least 2 views"):
        mask_views(X, [4], 0.5)
    with pytest.raises(ValueError, match="NaN"):
        mask_views(a, [2, 2], 0.5)
    with pytest.raises(ValueError, match="missing_rate"):
        mask_views(X, [2, 2], 1.5)


def test_multiview_blobs_plant_clusters_and_noise():
    X, y, views = make_multiview_blobs(
        400, view_sizes=(5, 5), n_clusters=3, noise=(0.1, 5.0), random_state=0
    )
    assert X.shape == (400, 10) and views == [5, 5]
    clean, noisy = X[:, :5], X[:, 5:]
    ari = [
        adjusted_rand_score(y, KMeans(3, n_init=5, random_state=0).fit_predict(v))
        for v in (clean, noisy)
    ]
    assert ari[0] > 0.8 and ari[1] < ari[0] - 0.3


def test_multiview_blobs_missing_rate_and_errors():
    X, y, views = make_multiview_blobs(100, missing_rate=0.5, random_state=0)
    observed = observed_views(X, check_views(views, X.shape[1]))
    assert (~observed.all(axis=1)).sum() == 50
    with pytest.raises(ValueError, match="noise has 2 values"):
        make_multiview_blobs(10, view_sizes=(2, 2, 2), noise=(1.0, 1.0))


def _reference_multiview_blobs(n_samples, sizes, n_clusters, dim, sep, noise, seed):
    # The generator as it was before view errors existed: the stream to keep.
    rng = (
        seed if isinstance(seed, np.random.RandomState) else np.random.RandomState(seed)
    )
    centres = rng.normal(scale=sep, size=(n_clusters, dim))
    y = rng.randint(n_clusters, size=n_samples)
    z = centres[y] + rng.normal(size=(n_samples, dim))
    blocks = []
    for size, sd in zip(sizes, noise):
        loading = rng.normal(scale=1.0 / np.sqrt(dim), size=(dim, size))
        blocks.append(z @ loading + sd * rng.normal(size=(n_samples, size)))
    return np.hstack(blocks), y


@pytest.mark.parametrize("missing_rate", [0.0, 0.4])
def test_multiview_blobs_zero_view_error_keeps_the_stream(missing_rate):
    kwargs = {
        "view_sizes": (3, 5),
        "n_clusters": 4,
        "noise": (0.2, 1.0),
        "missing_rate": missing_rate,
    }
    X, y, views = make_multiview_blobs(120, random_state=7, **kwargs)
    X0, y0, views0, latent = make_multiview_blobs(
        120,
        view_error=0.0,
        error_correlation=0.0,
        return_latent=True,
        random_state=7,
        **kwargs,
    )
    np.testing.assert_array_equal(X0, X)
    np.testing.assert_array_equal(y0, y)
    assert views0 == views == [3, 5]
    assert latent["z"].shape == (120, 4) and latent["errors"].shape == (120, 2, 4)
    assert not latent["errors"].any()
    X_ref, y_ref = _reference_multiview_blobs(120, [3, 5], 4, 4, 3.0, [0.2, 1.0], 7)
    np.testing.assert_array_equal(y, y_ref)
    if missing_rate == 0:
        np.testing.assert_array_equal(X, X_ref)
    else:  # same values where observed, same masked samples as mask_views gives
        observed = ~np.isnan(X)
        np.testing.assert_array_equal(X[observed], X_ref[observed])
        rng = np.random.RandomState(7)
        _reference_multiview_blobs(120, [3, 5], 4, 4, 3.0, [0.2, 1.0], rng)
        np.testing.assert_array_equal(
            np.isnan(X), np.isnan(mask_views(X_ref, [3, 5], missing_rate, rng))
        )


def test_multiview_blobs_view_error_changes_only_the_errors():
    kwargs = {"view_sizes": (4, 4, 4), "missing_rate": 0.3, "return_latent": True}
    X0, y0, _, lat0 = make_multiview_blobs(200, random_state=1, **kwargs)
    X1, y1, _, lat1 = make_multiview_blobs(
        200, view_error=0.7, error_correlation=0.4, random_state=1, **kwargs
    )
    np.testing.assert_array_equal(y1, y0)
    np.testing.assert_array_equal(lat1["z"], lat0["z"])
    np.testing.assert_array_equal(np.isnan(X1), np.isnan(X0))
    assert lat1["errors"].std() > 0.5
    assert not np.allclose(X1[~np.isnan(X1)], X0[~np.isnan(X0)])


@pytest.mark.parametrize("rho", [0.6, -0.4, 0.0])
def test_multiview_blobs_plant_error_correlation_and_scale(rho):
    sds = np.array([0.5, 1.0, 2.0])
    X, _, views, latent = make_multiview_blobs(
        5000,
        view_sizes=(3, 4, 5),
        latent_dim=2,
        view_error=tuple(sds),
        error_correlation=rho,
        return_latent=True,
        random_state=0,
    )
    errors = latent["errors"]
    assert errors.shape == (5000, 3, 2)
    for d in range(2):
        corr = np.corrcoef(errors[:, :, d], rowvar=False)
        off = corr[~np.eye(3, dtype=bool)]
        np.testing.assert_allclose(off, rho, atol=0.05)
        np.testing.assert_allclose(errors[:, :, d].std(axis=0), sds, rtol=0.05)
        np.testing.assert_allclose(errors[:, :, d].mean(axis=0), 0, atol=0.15)
    # Latent dimensions are independent, and errors are independent of z.
    assert abs(np.corrcoef(errors[:, 0, 0], errors[:, 0, 1])[0, 1]) < 0.05
    assert abs(np.corrcoef(errors[:, 1, 0], latent["z"][:, 0])[0, 1]) < 0.05


def test_multiview_blobs_views_see_z_through_their_own_error():
    X, _, views, latent = make_multiview_blobs(
        300,
        view_sizes=(3, 6),
        latent_dim=3,
        noise=0.0,
        view_error=(0.5, 1.5),
        error_correlation=0.3,
        return_latent=True,
        random_state=2,
    )
    z, errors = latent["z"], latent["errors"]
    cols = check_views(views, X.shape[1])
    for v in range(2):
        x_v = X[:, cols[v]]
        for seen, exact in ((z + errors[:, v], True), (z, False)):
            coef = np.linalg.lstsq(seen, x_v, rcond=None)[0]
            r2 = 1 - ((x_v - seen @ coef) ** 2).sum() / ((x_v - x_v.mean(0)) ** 2).sum()
            if exact:  # noiseless view: an exact linear map of z + e_v
                assert r2 > 1 - 1e-10
            else:  # z alone misses the view's error
                assert r2 < 0.99


@pytest.mark.parametrize("n_views", [2, 3, 4])
def test_multiview_blobs_error_correlation_psd_edges(n_views):
    edge = -1.0 / (n_views - 1)
    for rho, expected in ((1.0, "equal"), (edge, "sum")):
        *_, latent = make_multiview_blobs(
            500,
            view_sizes=(2,) * n_views,
            view_error=1.5,
            error_correlation=rho,
            return_latent=True,
            random_state=3,
        )
        errors = latent["errors"]
        assert np.isfinite(errors).all() and errors.std() > 1.0
        if expected == "equal":  # rho = 1: every view makes the same error
            np.testing.assert_allclose(errors - errors[:, :1], 0, atol=1e-10)
        else:  # rho = -1/(V-1): the errors sum to zero
            np.testing.assert_allclose(errors.sum(axis=1), 0, atol=1e-10)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"view_error": 1.0, "error_correlation": -0.6}, "error_correlation must be"),
        ({"view_error": 1.0, "error_correlation": 1.2}, "error_correlation"),
        ({"error_correlation": 0.3}, "needs a non-zero view_error"),
        ({"view_error": (0, 0, 0), "error_correlation": 0.3}, "non-zero view_error"),
        ({"view_error": (1.0, 1.0)}, "view_error has 2 values but there are 3"),
        ({"view_error": -0.5}, "view_error"),
        ({"view_error": (1.0, -0.5, 1.0)}, "view_error must be finite and non-neg"),
        ({"view_error": (1.0, np.nan, 1.0)}, "view_error must be finite"),
        ({"view_error": "big"}, "view_error"),
        ({"view_error": ("a", "b", "c")}, "view_error must be a float"),
        ({"return_latent": "yes"}, "return_latent"),
    ],
)
def test_multiview_blobs_view_error_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_multiview_blobs(10, view_sizes=(2, 2, 2), **kwargs)


def test_importing_datasets_loads_no_family_and_no_torch():
    """datasets sits below every family: importing it must not pull one in."""
    import subprocess
    import sys

    families = [
        "cluster",
        "linear_model",
        "model_selection",
        "multilabel",
        "network",
        "robust_optimization",
    ]
    code = (
        "import sys, sklearn_ext.datasets\n"
        "from sklearn_ext.datasets import make_shortest_path\n"
        "make_shortest_path(5, random_state=0)\n"
        f"bad = [m for m in sys.modules if m == 'torch' or m.split('.')[:2] in "
        f"[['sklearn_ext', f] for f in {families!r}]]\n"
        "print(sorted(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
