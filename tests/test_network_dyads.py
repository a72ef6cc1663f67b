"""Conversion between multilayer adjacency tensors and dyad samples."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sklearn_ext.network._dyads import dyads_to_tensor, tensor_to_dyads


def _random_tensor(n_layers, n_nodes, n_covariates, directed, seed, nan_rate=0.3):
    rng = np.random.RandomState(seed)
    A = rng.binomial(3, 0.4, size=(n_layers, n_nodes, n_nodes)).astype(float)
    A[rng.random_sample(A.shape) < nan_rate] = np.nan
    C = rng.normal(size=(n_nodes, n_nodes, n_covariates))
    if not directed:
        upper = np.triu(np.ones((n_nodes, n_nodes), dtype=bool), k=1)
        A = np.where(upper, A, A.transpose(0, 2, 1))
        C = np.where(upper[:, :, None], C, C.transpose(1, 0, 2))
    A[:, np.arange(n_nodes), np.arange(n_nodes)] = np.nan
    return A, C


@pytest.mark.parametrize("directed", [False, True])
def test_round_trip_with_nan_and_covariates(directed):
    A, C = _random_tensor(3, 7, 2, directed, seed=0)
    X, Y = tensor_to_dyads(A, C, directed=directed, shuffle=False)
    n_pairs = 7 * 6 if directed else 7 * 6 // 2
    assert X.dtype == np.float64 and Y.dtype == np.float64
    assert X.shape[1] == 4 and Y.shape[1] == 3 and X.shape[0] == Y.shape[0]
    assert 0 < X.shape[0] <= n_pairs
    assert not np.isnan(Y).all(axis=1).any()
    i, j = X[:, 0].astype(int), X[:, 1].astype(int)
    np.testing.assert_array_equal(X[:, 2:], C[i, j])
    np.testing.assert_array_equal(Y, A[:, i, j].T)
    back = dyads_to_tensor(X, Y, n_nodes=7, directed=directed)
    np.testing.assert_array_equal(back, A)
    # Auto-detection finds the same directedness here.
    X_auto, Y_auto = tensor_to_dyads(A, C, shuffle=False)
    np.testing.assert_array_equal(X_auto, X)
    np.testing.assert_array_equal(Y_auto, Y)


def test_undirected_dyads_are_upper_pairs_in_row_major_order():
    A = np.zeros((2, 4, 4))
    X, Y = tensor_to_dyads(A, shuffle=False)
    np.testing.assert_array_equal(X, [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]])
    assert Y.shape == (6, 2)
    X, _ = tensor_to_dyads(A, directed=True, shuffle=False)
    assert X.shape == (12, 2)
    assert not (X[:, 0] == X[:, 1]).any()
    assert list(map(tuple, X[:3].astype(int))) == [(0, 1), (0, 2), (0, 3)]


def test_node_indices_are_integer_valued_floats():
    A, C = _random_tensor(2, 9, 1, True, seed=1, nan_rate=0.0)
    X, _ = tensor_to_dyads(A, C, shuffle=False)
    assert X.dtype == np.float64
    np.testing.assert_array_equal(X[:, :2], np.round(X[:, :2]))
    assert X[:, :2].min() == 0 and X[:, :2].max() == 8


def test_diagonal_is_ignored():
    A = np.zeros((1, 3, 3))
    A[0, [0, 1, 2], [0, 1, 2]] = [5.0, np.inf, np.nan]
    X, Y = tensor_to_dyads(A, shuffle=False)
    assert X.shape == (3, 2) and (Y == 0).all()
    back = dyads_to_tensor(X, Y)
    assert np.isnan(np.diagonal(back, axis1=1, axis2=2)).all()


def test_directedness_detection():
    A = np.zeros((2, 3, 3))
    A[1, 0, 2] = A[1, 2, 0] = np.nan  # NaN on both sides: still symmetric
    X, _ = tensor_to_dyads(A, shuffle=False)
    assert X.shape[0] == 3
    A[1, 0, 2] = 1.0  # NaN on one side only: asymmetric
    X, _ = tensor_to_dyads(A, shuffle=False)
    assert X.shape[0] == 6
    # Symmetric A, asymmetric covariates: directed.
    A = np.zeros((1, 3, 3))
    C = np.arange(9.0).reshape(3, 3)
    X, _ = tensor_to_dyads(A, C, shuffle=False)
    assert X.shape == (6, 3)
    X, _ = tensor_to_dyads(A, C + C.T, shuffle=False)
    assert X.shape == (3, 3)


def test_two_dimensional_covariates_are_one_covariate():
    A, C = _random_tensor(2, 5, 1, False, seed=2)
    X2, Y2 = tensor_to_dyads(A, C[:, :, 0], shuffle=False)
    X3, Y3 = tensor_to_dyads(A, C, shuffle=False)
    np.testing.assert_array_equal(X2, X3)
    np.testing.assert_array_equal(Y2, Y3)


def test_all_nan_dyads_are_dropped():
    A = np.full((2, 4, 4), np.nan)
    A[0, 0, 1] = A[0, 1, 0] = 1.0
    A[1, 2, 3] = A[1, 3, 2] = 0.0
    A[1, 0, 3] = A[1, 3, 0] = np.nan
    X, Y = tensor_to_dyads(A, directed=False, shuffle=False)
    np.testing.assert_array_equal(X, [[0, 1], [2, 3]])
    np.testing.assert_array_equal(Y, [[1.0, np.nan], [np.nan, 0.0]])
    np.testing.assert_array_equal(dyads_to_tensor(X, Y), A)
    # Nothing observed at all: no dyad.
    X, Y = tensor_to_dyads(
        np.full((3, 4, 4), np.nan), np.ones((4, 4, 2)), shuffle=False
    )
    assert X.shape == (0, 4) and Y.shape == (0, 3)


def test_dyads_to_tensor_options():
    X = np.array([[0.5, 2, 0], [-1.0, 1, 3]])
    Y = np.array([4.0, 5.0])
    A = dyads_to_tensor(X, Y, dyad_columns=(1, 2), directed=True)
    assert A.shape == (1, 4, 4)
    assert A[0, 2, 0] == 4.0 and A[0, 1, 3] == 5.0
    assert np.isnan(A).sum() == 14
    A = dyads_to_tensor(X, Y, n_nodes=6, dyad_columns=[1, 2])
    assert A.shape == (1, 6, 6) and A[0, 0, 2] == 4.0 and A[0, 3, 1] == 5.0
    # A dyad repeated with the same values (both orders, undirected) is fine.
    X = np.array([[0, 1], [1, 0], [0, 2]])
    Y = np.array([[1.0, np.nan], [1.0, np.nan], [0.0, 2.0]])
    A = dyads_to_tensor(X, Y)
    assert A[0, 1, 0] == 1.0 and np.isnan(A[1, 0, 1]) and A[1, 2, 0] == 2.0
    # No dyad at all.
    assert dyads_to_tensor(np.empty((0, 2)), np.empty((0, 3))).shape == (3, 0, 0)


@pytest.mark.parametrize(
    "A, covariates, directed, match",
    [
        (np.zeros((3, 3)), None, None, "3-D array"),
        (np.zeros((1, 3, 3, 1)), None, None, "3-D array"),
        (np.zeros((2, 3, 4)), None, None, "square"),
        (np.zeros((0, 3, 3)), None, None, "at least one layer"),
        (np.full((1, 3, 3), -np.inf), None, None, "infinity"),
        (np.zeros((1, 3, 3)), np.zeros((3, 4)), None, "covariates must have shape"),
        (np.zeros((1, 3, 3)), np.zeros((2, 2, 1)), None, "covariates must have"),
        (np.zeros((1, 3, 3)), np.zeros((3, 3, 1, 1)), None, "covariates must have"),
        (np.zeros((1, 3, 3)), np.zeros(3), None, "covariates must have shape"),
        (np.triu(np.ones((1, 3, 3))), None, False, "A is not symmetric"),
        (np.zeros((1, 3, 3)), np.eye(3, k=1), False, "covariates are not symmetric"),
        ([[["a", "b"], ["c", "d"]]], None, None, "A must be a numeric array"),
        (np.zeros((1, 3, 3)), None, "yes", "directed"),
    ],
)
def test_tensor_to_dyads_bad_inputs(A, covariates, directed, match):
    with pytest.raises(ValueError, match=match):
        tensor_to_dyads(A, covariates, directed=directed, shuffle=False)


@pytest.mark.parametrize(
    "X, Y, kwargs, match",
    [
        ([[0, -1]], [[1.0]], {}, "negative node indices"),
        ([[0, 1.5]], [[1.0]], {}, "non-integer node indices"),
        ([[np.nan, 1]], [[1.0]], {}, "NaN or infinity"),
        ([[0, 0]], [[1.0]], {}, "self-loop"),
        ([[0, 1], [1, 0]], [[1.0], [0.0]], {}, r"dyad \(1, 0\) is given more"),
        ([[0, 1], [0, 1]], [[1.0], [np.nan]], {"directed": True}, "more than once"),
        ([[0, 1], [0, 2]], [[1.0]], {}, "same number of rows"),
        ([0, 1], [1.0], {}, "X must be a 2-D array"),
        ([[0, 1]], [[[1.0]]], {}, "y must be of shape"),
        ([[0, 1]], np.empty((1, 0)), {}, "at least one layer"),
        ([[0, 3]], [1.0], {"n_nodes": 3}, "needs n_nodes > 3"),
        ([[0, 1]], [1.0], {"dyad_columns": (0, 2)}, "dyad_columns must be two"),
        ([[0, 1]], [1.0], {"dyad_columns": (1, 1)}, "dyad_columns must be two"),
        ([[0, 1]], [1.0], {"dyad_columns": (0,)}, "dyad_columns must be two"),
        ([[0, 1]], [1.0], {"dyad_columns": (0, 1.0)}, "dyad_columns must be two"),
        ([[0, 1]], [1.0], {"n_nodes": -1}, "n_nodes"),
        ([["a", 1]], [1.0], {}, "X must be a numeric array"),
    ],
)
def test_dyads_to_tensor_bad_inputs(X, Y, kwargs, match):
    with pytest.raises(ValueError, match=match):
        dyads_to_tensor(X, Y, **kwargs)


@st.composite
def _tensors(draw):
    n_layers = draw(st.integers(1, 3))
    n_nodes = draw(st.integers(2, 6))
    n_covariates = draw(st.integers(0, 2))
    directed = draw(st.booleans())
    values = st.sampled_from([np.nan, 0.0, 1.0, 2.5, -3.0])
    A = draw(hnp.arrays(np.float64, (n_layers, n_nodes, n_nodes), elements=values))
    C = draw(
        hnp.arrays(
            np.float64,
            (n_nodes, n_nodes, n_covariates),
            elements=st.floats(-5, 5, allow_nan=False),
        )
    )
    if not directed:
        upper = np.triu(np.ones((n_nodes, n_nodes), dtype=bool), k=1)
        A = np.where(upper, A, A.transpose(0, 2, 1))
        C = np.where(upper[:, :, None], C, C.transpose(1, 0, 2))
    A[:, np.arange(n_nodes), np.arange(n_nodes)] = np.nan
    return A, C, directed


@settings(max_examples=60, deadline=None)
@given(_tensors(), st.booleans())
def test_round_trip_property(tensor, detect):
    A, C, directed = tensor
    if detect:
        symmetric = np.array_equal(
            A, A.transpose(0, 2, 1), equal_nan=True
        ) and np.array_equal(C, C.transpose(1, 0, 2))
        directed = not symmetric
    X, Y = tensor_to_dyads(A, C, directed=None if detect else directed, shuffle=False)
    n_nodes = A.shape[1]
    n_pairs = n_nodes * (n_nodes - 1) // (1 if directed else 2)
    n_kept = n_pairs - int(
        np.isnan(A).all(axis=0)[~np.eye(n_nodes, dtype=bool)].sum()
        // (1 if directed else 2)
    )
    assert X.shape == (n_kept, 2 + C.shape[2]) and Y.shape == (n_kept, A.shape[0])
    i, j = X[:, 0].astype(int), X[:, 1].astype(int)
    assert (i != j).all() and (directed or (i < j).all())
    np.testing.assert_array_equal(X[:, 2:], C[i, j])
    back = dyads_to_tensor(X, Y, n_nodes=n_nodes, directed=directed)
    np.testing.assert_array_equal(back, A)


def test_dyads_to_tensor_takes_dataframe_column_names():
    pd = pytest.importorskip("pandas")
    A, C = _random_tensor(2, 6, 1, False, seed=3)
    X, y = tensor_to_dyads(A, C, shuffle=False)
    frame = pd.DataFrame(X[:, [2, 0, 1]], columns=["weight", "src", "dst"])
    back = dyads_to_tensor(frame, y, n_nodes=6, dyad_columns=("src", "dst"))
    np.testing.assert_array_equal(back, A)
    # A name and a position mix.
    back = dyads_to_tensor(frame, y, n_nodes=6, dyad_columns=("src", 2))
    np.testing.assert_array_equal(back, A)
    with pytest.raises(ValueError, match="names the column 'source'"):
        dyads_to_tensor(frame, y, dyad_columns=("source", "dst"))
    with pytest.raises(ValueError, match="X has no column names"):
        dyads_to_tensor(X, y, dyad_columns=("src", "dst"))


def test_rows_are_shuffled_by_default_and_the_default_cv_works():
    from sklearn.model_selection import cross_val_score

    from sklearn_ext.datasets import make_multilayer_network
    from sklearn_ext.network import TGINEE

    A, C, _ = make_multilayer_network(40, 3, 2, random_state=0)
    X, Y = tensor_to_dyads(A, C, random_state=0)
    X0, Y0 = tensor_to_dyads(A, C, shuffle=False)
    order = np.lexsort((X[:, 1], X[:, 0]))
    np.testing.assert_array_equal(X[order], X0)
    np.testing.assert_array_equal(Y[order], Y0)
    assert not np.array_equal(X, X0)
    # Rows in node order: the first fold holds every dyad of node 0, which
    # its training folds never saw: predicted from covariates and intercepts
    # alone (a zero factor), with a warning that points to NodeKFold.
    partial = TGINEE(2, dyad_columns=(0, 1), device="cpu").fit(X0[200:], Y0[200:])
    with pytest.warns(UserWarning, match=r"not seen during fit.*NodeKFold"):
        unseen = partial.predict(X0[:5])
    assert np.isfinite(unseen).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        in_order = cross_val_score(TGINEE(2, dyad_columns=(0, 1), device="cpu"), X0, Y0)
    assert np.isfinite(in_order).all()
    # Shuffled rows: the default KFold works.
    scores = cross_val_score(TGINEE(2, dyad_columns=(0, 1), device="cpu"), X, Y)
    assert np.isfinite(scores).all()
