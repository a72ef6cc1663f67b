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
