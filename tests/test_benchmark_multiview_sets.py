"""The benchmarks' multi-view sets from bundled data, and their baselines."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _multiview_sets import (  # noqa: E402
    BASELINES,
    baseline_scores,
    masked,
    multiview_sets,
)

from sklearn_ext.utils import check_views  # noqa: E402

SETS = multiview_sets()


def test_at_least_three_sets():
    assert len(SETS) >= 3
    assert {"digits-halves", "digits-features", "breast-cancer", "wine"} <= set(SETS)


@pytest.mark.parametrize("name", sorted(SETS))
def test_set_layout(name):
    X, y, views, description = SETS[name]
    assert isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 2
    assert all(isinstance(v, int) and v > 0 for v in views)
    assert len(views) >= 2
    assert sum(views) == X.shape[1]
    assert np.isfinite(X).all()
    assert y.shape == (X.shape[0],)
    assert len(np.unique(y)) >= 2
    assert isinstance(description, str) and description
    # No view is a copy of another, and no view is constant.
    blocks = [X[:, c] for c in check_views(views, X.shape[1])]
    for i, a in enumerate(blocks):
        assert a.std(axis=0).max() > 0
        for b in blocks[i + 1 :]:
            assert a.shape != b.shape or not np.allclose(a, b)


def test_digit_halves_are_the_image_halves():
    from sklearn.datasets import load_digits

    X, _, views, _ = SETS["digits-halves"]
    images = load_digits().images
    assert views == [32, 32]
    np.testing.assert_array_equal(X[:, :32], images[:, :, :4].reshape(-1, 32))
    np.testing.assert_array_equal(X[:, 32:], images[:, :, 4:].reshape(-1, 32))
    assert not np.array_equal(X[:, :32], X[:, 32:])


def test_digit_features_views():
    from sklearn.datasets import load_digits

    X, _, views, _ = SETS["digits-features"]
    images = load_digits().images
    assert views == [64, 16, 16]
    np.testing.assert_array_equal(X[:, :64], images.reshape(-1, 64))
    np.testing.assert_allclose(X[:, 64:72], images.sum(axis=2))
    np.testing.assert_allclose(X[:, 72:80], images.sum(axis=1))
    hog = X[:, 80:]
    assert (hog >= 0).all()
    np.testing.assert_allclose(np.linalg.norm(hog, axis=1), 1.0)


@pytest.mark.parametrize("name", sorted(SETS))
def test_masking_blanks_whole_views_and_keeps_one(name):
    X, _, views, _ = SETS[name]
    cols = check_views(views, X.shape[1])
    assert not np.isnan(masked(X, views, 0.0, 0)).any()
    Xm = masked(X, views, 0.4, 0)
    missing = np.column_stack([np.isnan(Xm[:, c]).all(axis=1) for c in cols])
    partly = np.column_stack([np.isnan(Xm[:, c]).any(axis=1) for c in cols])
    np.testing.assert_array_equal(missing, partly)  # whole blocks only
    assert (~missing).any(axis=1).all()  # each sample keeps a view
    assert missing.any(axis=1).sum() == round(0.4 * X.shape[0])
    observed = ~np.isnan(Xm)
    np.testing.assert_array_equal(Xm[observed], X[observed])


@pytest.mark.parametrize("name", ["wine", "iris"])
@pytest.mark.parametrize("rate", [0.0, 0.4])
def test_baseline_scores(name, rate):
    X, y, views, _ = SETS[name]
    scores = baseline_scores(X, y, views, missing_rate=rate, random_state=0)
    expected = 0 if rate == 0 else round(rate * X.shape[0])
    assert scores["n_incomplete"] == expected
    for b in BASELINES:
        assert 0.0 <= scores[b]["acc"] <= 1.0
        assert -1.0 <= scores[b]["ari"] <= 1.0
        assert scores[b]["seconds"] >= 0
        # Well above the chance level of 3 balanced-ish classes.
        assert scores[b]["acc"] > 0.5


def test_baseline_scores_is_reproducible():
    X, y, views, _ = SETS["wine"]
    a = baseline_scores(X, y, views, missing_rate=0.4, random_state=1)
    b = baseline_scores(X, y, views, missing_rate=0.4, random_state=1)
    for name in BASELINES:
        assert a[name]["acc"] == b[name]["acc"]
        assert a[name]["ari"] == b[name]["ari"]


def test_new_sets_are_other_cuts_of_the_bundled_data():
    from _multiview_sets import EARLIER_SETS  # noqa: E402
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

    new = set(SETS) - set(EARLIER_SETS)
    assert len(new) >= 5
    images = load_digits().images
    X, _, views, _ = SETS["digits-rows"]
    np.testing.assert_array_equal(X[:, :32], images[:, :4, :].reshape(-1, 32))
    np.testing.assert_array_equal(X[:, 32:], images[:, 4:, :].reshape(-1, 32))
    X, _, views, _ = SETS["digits-checker"]
    flat = images.reshape(-1, 64)
    # Every pixel once; the first view holds pixel (0, 0), the second (0, 1).
    np.testing.assert_array_equal(np.sort(X, axis=1), np.sort(flat, axis=1))
    np.testing.assert_array_equal(X[:, 0], flat[:, 0])
    np.testing.assert_array_equal(X[:, 32], flat[:, 1])
    data = load_breast_cancer()
    X, y, views, _ = SETS["breast-cancer-kinds"]
    assert views == [9, 12, 9]
    names = list(data.feature_names)
    np.testing.assert_array_equal(X[:, 0], data.data[:, names.index("mean radius")])
    np.testing.assert_array_equal(
        np.sort(X, axis=1), np.sort(data.data, axis=1)
    )  # the same 30 measurements, regrouped
    X, _, views, _ = SETS["wine-halves"]
    np.testing.assert_array_equal(X, load_wine().data)
    assert views == [7, 6]
    X, _, views, _ = SETS["iris-features"]
    np.testing.assert_array_equal(X, load_iris().data)
    assert views == [1, 1, 1, 1]
