"""ConnectomeVectorizer and the vectorised-connectivity layout."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.covariance import EmpiricalCovariance, LedoitWolf
from sklearn.pipeline import make_pipeline

from sklearn_ext.network import ConnectomeVectorizer, MuHLClassifier
from sklearn_ext.network._connectome import (
    connectome_width,
    infer_n_nodes,
    split_connectome,
)
from sklearn_ext.utils._connectivity import matrices_to_vec, vec_to_matrices


def _symmetric(n_subjects, n, seed=0):
    A = np.random.RandomState(seed).normal(size=(n_subjects, n, n))
    return (A + A.transpose(0, 2, 1)) / 2


@pytest.mark.parametrize("discard_diagonal", [True, False])
def test_layout_is_nilearns(discard_diagonal):
    connectome = pytest.importorskip("nilearn.connectome")
    A = _symmetric(4, 7)
    expected = connectome.sym_matrix_to_vec(A, discard_diagonal=discard_diagonal)
    vec = ConnectomeVectorizer(discard_diagonal=discard_diagonal).fit_transform(A)
    np.testing.assert_allclose(vec, expected)
    if not discard_diagonal:
        np.testing.assert_allclose(
            vec_to_matrices(vec, 7, False), connectome.vec_to_sym_matrix(expected)
        )


KINDS = ["correlation", "covariance", "partial correlation", "tangent", "precision"]


def _series(seed=0, lengths=(60, 80, 70), n=5):
    rng = np.random.RandomState(seed)
    # Lengths differ between subjects; regions are correlated.
    return [rng.normal(size=(t, n)) @ rng.normal(size=(n, n)) for t in lengths]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("discard_diagonal", [True, False])
def test_time_series_equal_nilearns_connectivity_measure(kind, discard_diagonal):
    connectome = pytest.importorskip("nilearn.connectome")
    train, test = _series(0), _series(1, lengths=(50, 40))
    # nilearn's defaults: Ledoit-Wolf covariance, standardised series.
    theirs = connectome.ConnectivityMeasure(
        kind=kind,
        vectorize=True,
        discard_diagonal=discard_diagonal,
        standardize="zscore_sample",
    )
    ours = ConnectomeVectorizer(kind, discard_diagonal=discard_diagonal)
    np.testing.assert_allclose(
        ours.fit_transform(train), theirs.fit_transform(train), atol=1e-12
    )
    # transform uses what fit learned (the tangent space's group mean).
    np.testing.assert_allclose(ours.transform(test), theirs.transform(test), atol=1e-12)
    assert ours.transform(test).shape[1] == ours.n_features_out_


def test_cov_estimator_and_standardize_reach_nilearn():
    connectome = pytest.importorskip("nilearn.connectome")
    series = _series(2)
    theirs = connectome.ConnectivityMeasure(
        cov_estimator=EmpiricalCovariance(),
        kind="covariance",
        vectorize=True,
        discard_diagonal=True,
        standardize=False,
    ).fit_transform(series)
    ours = ConnectomeVectorizer(
        "covariance", cov_estimator=EmpiricalCovariance(), standardize=False
    )
    np.testing.assert_allclose(ours.fit_transform(series), theirs, atol=1e-10)
    # The empirical covariance itself, by hand.
    centred = series[0] - series[0].mean(axis=0)
    cov = centred.T @ centred / len(centred)
    rows, cols = np.tril_indices(5, -1)
    np.testing.assert_allclose(ours.transform(series[:1])[0], cov[rows, cols])


def test_ledoit_wolf_is_the_default():
    rng = np.random.RandomState(0)
    series = [rng.normal(size=(8, 6)) for _ in range(3)]
    plain = ConnectomeVectorizer("correlation", cov_estimator=EmpiricalCovariance())
    plain = plain.fit_transform(series)
    shrunk = ConnectomeVectorizer("correlation").fit_transform(series)
    explicit = ConnectomeVectorizer("correlation", cov_estimator=LedoitWolf())
    np.testing.assert_allclose(shrunk, explicit.fit_transform(series))
    # Shrinkage pulls correlations towards zero.
    assert np.abs(shrunk).sum() < np.abs(plain).sum()


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 80),
    f=st.integers(0, 4),
    discard=st.booleans(),
    extra=st.integers(1, 5),
)
def test_node_count_is_inferred_from_the_width(n, f, discard, extra):
    width = connectome_width(n, f, discard)
    assert infer_n_nodes(width, f, discard) == n
    # A width between two layouts fits none.
    if connectome_width(n + 1, f, discard) - width > extra:
        assert infer_n_nodes(width + extra, f, discard) is None


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 12), f=st.integers(0, 3), discard=st.booleans())
def test_split_inverts_the_layout(n, f, discard):
    rng = np.random.RandomState(n * 7 + f)
    A = _symmetric(3, n, seed=n)
    if discard:
        A[:, np.arange(n), np.arange(n)] = 0.0
    feats = rng.normal(size=(3, n, f))
    X = np.hstack([matrices_to_vec(A, discard), feats.reshape(3, -1)])
    matrices, features = split_connectome(X, n, f, discard)
    np.testing.assert_allclose(matrices, A)
    np.testing.assert_allclose(features, feats)


def test_pipeline_from_matrices_to_muhl():
    rng = np.random.RandomState(0)
    A = rng.rand(40, 6, 6)
    A = (A + A.transpose(0, 2, 1)) / 2
    y = np.repeat([0, 1], 20)
    A[y == 1, 1, 4] = A[y == 1, 4, 1] = 2.0
    pipe = make_pipeline(
        ConnectomeVectorizer(),
        # 40 subjects: no validation part held out for early stopping.
        MuHLClassifier(max_iter=40, early_stopping=False, random_state=0),
    )
    assert pipe.fit(A, y).score(A, y) > 0.9
    assert pipe[-1].n_nodes_ == 6 and pipe[-1].layout_ == "connectome"


def test_inputs_are_not_modified_and_names_follow_the_layout():
    A = _symmetric(2, 4)
    before = A.copy()
    vec = ConnectomeVectorizer().fit(A)
    vec.transform(A)
    np.testing.assert_array_equal(A, before)
    assert list(vec.get_feature_names_out()) == [
        "edge_1_0",
        "edge_2_0",
        "edge_2_1",
        "edge_3_0",
        "edge_3_1",
        "edge_3_2",
    ]


def test_bad_networks_get_clear_errors():
    A = _symmetric(3, 5)
    asym = A.copy()
    asym[1, 0, 2] += 1.0
    with pytest.raises(ValueError, match="Subject 1 has an asymmetric matrix"):
        ConnectomeVectorizer().fit(asym)
    with_nan = A.copy()
    with_nan[2, 1, 1] = np.nan
    with pytest.raises(ValueError, match="Subject 2 has NaN"):
        ConnectomeVectorizer().fit(with_nan)
    with pytest.raises(ValueError, match="square"):
        ConnectomeVectorizer().fit(A[:, :, :4])
    with pytest.raises(ValueError, match="different node counts"):
        ConnectomeVectorizer().fit([A[0], A[1, :4, :4]])
    with pytest.raises(ValueError, match="fitted on 5"):
        ConnectomeVectorizer().fit(A).transform(A[:, :4, :4])
    with pytest.raises(ValueError, match="3-D array"):
        ConnectomeVectorizer().fit(A[0])
    with pytest.raises(ValueError, match="at least 2 are needed"):
        ConnectomeVectorizer().fit(np.ones((2, 1, 1)))
    with pytest.raises(ValueError, match=r"Subject 0 has an empty array of shape"):
        ConnectomeVectorizer().fit(np.ones((2, 0, 0)))


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda: vec_to_matrices(np.zeros((2, 7)), 5),
            r"5 nodes \(discard_diagonal=True\) hold 10 connectivity values; "
            r"got shape \(2, 7\)",
        ),
        (
            lambda: split_connectome(np.zeros((2, 14)), 5, 1),
            r"5 nodes with 1 feature\(s\) each .* have 15 columns; got X of "
            r"shape \(2, 14\)",
        ),
        (lambda: split_connectome(np.zeros(15), 5, 1), r"got X of shape \(15,\)"),
    ],
)
def test_rows_of_the_wrong_width_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_time_series_get_clear_errors():
    rng = np.random.RandomState(0)
    with pytest.raises(ValueError, match="1 time point"):
        ConnectomeVectorizer("correlation").fit([rng.normal(size=(1, 4))])
    flat = rng.normal(size=(30, 4))
    flat[:, 2] = 1.0
    with pytest.raises(ValueError, match="region 2 has a constant time series"):
        ConnectomeVectorizer("correlation").fit([flat])
    short = rng.normal(size=(3, 6))
    with pytest.raises(ValueError, match="singular"):
        ConnectomeVectorizer(
            "partial correlation", cov_estimator=EmpiricalCovariance()
        ).fit([short])
    # Ledoit-Wolf (the default) regularises it.
    assert np.isfinite(ConnectomeVectorizer("precision").fit_transform([short])).all()
    with pytest.raises(ValueError, match="different region counts"):
        ConnectomeVectorizer("covariance").fit([flat, rng.normal(size=(30, 5))])
    with pytest.raises(ValueError, match="fit needs at least 2 subjects; got 1"):
        ConnectomeVectorizer("tangent").fit([rng.normal(size=(30, 4))])
    good = [rng.normal(size=(30, 4)) for _ in range(2)]
    with pytest.raises(ValueError, match="fitted on 4"):
        ConnectomeVectorizer("tangent").fit(good).transform([rng.normal(size=(30, 5))])
    series = [rng.normal(size=(30, 4)) for _ in range(2)]
    before = series[0].copy()
    ConnectomeVectorizer("tangent").fit_transform(series)
    np.testing.assert_array_equal(series[0], before)
