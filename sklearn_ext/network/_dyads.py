"""Conversion between multilayer adjacency tensors and dyad-level samples."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral
from types import SimpleNamespace

import numpy as np
from sklearn.utils import check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, validate_params
from sklearn_ext.utils._validation import column_index

__all__ = ["dyads_to_tensor", "tensor_to_dyads"]


def _as_float_array(array, name):
    try:
        return np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array ({exc}).") from None


def _symmetric(array, axes):
    """Whether ``array`` equals its transpose over ``axes``, NaN equal to NaN."""
    return np.array_equal(array, np.swapaxes(array, *axes), equal_nan=True)


@validate_params(
    {
        "A": ["array-like"],
        "covariates": ["array-like", None],
        "directed": ["boolean", None],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def tensor_to_dyads(A, covariates=None, *, directed=None, shuffle=True, random_state=0):
    """Turn a multilayer adjacency tensor into one sample per dyad.

    A multilayer network has the same ``n_nodes`` nodes in each of its
    ``n_layers`` layers (relationship types). A dyad ``(i, j)``, ``i != j``, is
    a sample; its ``n_layers`` edge values ``A[:, i, j]`` are its (correlated)
    responses and the dyad covariates ``covariates[i, j]`` its features. The
    dyads are all ordered pairs ``i != j`` of a directed network and the pairs
    ``i < j`` of an undirected one; the diagonal (self-loops) is never
    included. A dyad whose value is NaN (unobserved) in every layer carries
    nothing and is dropped.

    The rows come in a random order by default. In row-major order the first
    rows hold every dyad of node 0, so a cross-validation that splits rows in
    order (scikit-learn's default ``KFold``) would test on nodes that its
    training folds never saw, whose factors are unknown; shuffled rows let
    ``cross_val_score(TGINEE(...), X, y)`` work with the default ``cv``.

    Parameters
    ----------
    A : array-like of shape (n_layers, n_nodes, n_nodes)
        Edge values of each layer; NaN marks an unobserved entry. Infinity is
        not allowed off the diagonal, which is ignored.
    covariates : array-like of shape (n_nodes, n_nodes, n_covariates) or \
            (n_nodes, n_nodes), default=None
        Dyad covariates ``x_ij``; a 2-D array is one covariate. None means no
        covariate.
    directed : bool or None, default=None
        Whether the network is directed. None detects it: the network is
        undirected if and only if every layer of ``A`` and every covariate is
        symmetric (NaN counting as equal to NaN). ``directed=False`` with an
        asymmetric ``A`` or ``covariates`` is an error.
    shuffle : bool, default=True
        Return the dyads in a random order; False keeps row-major order
        (``(0, 1), (0, 2), ...``).
    random_state : int, RandomState instance or None, default=0
        Seeds the order when ``shuffle`` is True; the default fixed seed makes
        the conversion deterministic.

    Returns
    -------
    X : ndarray of shape (n_dyads, 2 + n_covariates)
        One row per kept dyad, float64: the node indices ``i`` and ``j`` (floats
        holding integers) in the first two columns, then the covariates
        ``x_ij``.
    y : ndarray of shape (n_dyads, n_layers)
        Edge values of the kept dyads, float64, NaN where unobserved: the
        target of :class:`~sklearn_ext.network.TGINEE`.

    See Also
    --------
    dyads_to_tensor : The inverse conversion.

    Notes
    -----
    ``dyads_to_tensor(X, y, n_nodes, directed=directed)`` gives ``A`` back, with
    NaN on the diagonal, for the ``directed`` that was used (or detected).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.network import tensor_to_dyads
    >>> A = np.array([[[np.nan, 1, 0], [1, np.nan, 1], [0, 1, np.nan]]])
    >>> X, y = tensor_to_dyads(A, shuffle=False)
    >>> X
    array([[0., 1.],
           [0., 2.],
           [1., 2.]])
    >>> y.ravel()
    array([1., 0., 1.])
    """
    A = _as_float_array(A, "A")
    if A.ndim != 3:
        raise ValueError(
            "A must be a 3-D array of shape (n_layers, n_nodes, n_nodes); got an "
            f"array with ndim={A.ndim} and shape {A.shape}."
        )
    n_layers, n_nodes, n_cols = A.shape
    if n_nodes != n_cols:
        raise ValueError(
            "A must be square in its last two axes, of shape (n_layers, n_nodes, "
            f"n_nodes); got shape {A.shape}."
        )
    if n_layers == 0:
        raise ValueError(f"A must have at least one layer; got shape {A.shape}.")

    if covariates is None:
        covariates = np.empty((n_nodes, n_nodes, 0))
    else:
        covariates = _as_float_array(covariates, "covariates")
        if covariates.ndim == 2:
            covariates = covariates[:, :, None]
        if covariates.ndim != 3 or covariates.shape[:2] != (n_nodes, n_nodes):
            raise ValueError(
                "covariates must have shape (n_nodes, n_nodes, n_covariates) or "
                f"(n_nodes, n_nodes) with n_nodes={n_nodes} as in A; got shape "
                f"{np.shape(covariates)}."
            )

    if directed is None or not directed:
        symmetric_A = _symmetric(A, (1, 2))
        symmetric_cov = _symmetric(covariates, (0, 1))
        if directed is None:
            directed = not (symmetric_A and symmetric_cov)
        elif not symmetric_A:
            raise ValueError(
                "directed=False but A is not symmetric (A[l, i, j] != A[l, j, i] "
                "for some l, i, j); pass directed=True or directed=None."
            )
        elif not symmetric_cov:
            raise ValueError(
                "directed=False but covariates are not symmetric (covariates[i, j] "
                "!= covariates[j, i] for some i, j); pass directed=True or "
                "directed=None."
            )

    if directed:
        rows, cols = np.nonzero(~np.eye(n_nodes, dtype=bool))
    else:
        rows, cols = np.triu_indices(n_nodes, k=1)
    Y = A[:, rows, cols].T
    if np.isinf(Y).any():
        raise ValueError("A contains infinity; mark unobserved entries with NaN.")
    keep = ~np.isnan(Y).all(axis=1)
    rows, cols, Y = rows[keep], cols[keep], Y[keep]
    if shuffle:
        order = check_random_state(random_state).permutation(len(rows))
        rows, cols, Y = rows[order], cols[order], Y[order]
    X = np.column_stack(
        [rows.astype(np.float64), cols.astype(np.float64), covariates[rows, cols]]
    )
    return X, np.ascontiguousarray(Y)


def _node_indices(values, name):
    if not np.isfinite(values).all():
        raise ValueError(f"the {name} column of X holds NaN or infinity.")
    if (values < 0).any():
        raise ValueError(f"the {name} column of X holds negative node indices.")
    if (values != np.round(values)).any():
        raise ValueError(f"the {name} column of X holds non-integer node indices.")
    return values.astype(np.int64)


def _named_columns(X, dyad_columns):
    """``dyad_columns`` with column names of a DataFrame ``X`` made positions."""
    columns = tuple(dyad_columns)
    if not any(isinstance(c, str) for c in columns):
        return columns
    names = getattr(X, "columns", None)
    # column_index reads the names where an estimator keeps them.
    holder = SimpleNamespace(
        feature_names_in_=None if names is None else np.asarray(names, object)
    )
    n_columns = np.shape(X)[1] if np.ndim(X) == 2 else 0
    return tuple(
        column_index(holder, c, n_columns, param="dyad_columns")
        if isinstance(c, str)
        else c
        for c in columns
    )


def _check_columns(columns, n_columns, dyad_columns):
    if (
        len(columns) != 2
        or not all(isinstance(c, Integral) for c in columns)
        or not all(-n_columns <= c < n_columns for c in columns)
        or columns[0] % n_columns == columns[1] % n_columns
    ):
        raise ValueError(
            "dyad_columns must be two distinct column indices of X, which has "
            f"{n_columns} columns; got {dyad_columns!r}."
        )


@validate_params(
    {
        "X": ["array-like"],
        "y": ["array-like"],
        "n_nodes": [Interval(Integral, 0, None, closed="left"), None],
        "dyad_columns": [tuple, list],
        "directed": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def dyads_to_tensor(X, y, n_nodes=None, *, dyad_columns=(0, 1), directed=False):
    """Assemble dyad-level samples into a multilayer adjacency tensor.

    The inverse of :func:`tensor_to_dyads`: row ``k`` of ``y`` goes to
    ``A[:, i, j]`` with ``i, j`` the node indices in row ``k`` of ``X``, and for
    an undirected network to ``A[:, j, i]`` as well. Entries no dyad gives, and
    the diagonal, are NaN.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_dyads, n_features)
        Dyad samples; the columns ``dyad_columns`` hold the node indices
        (non-negative integers, possibly stored as floats: the positions of
        the nodes in the tensor). Other columns are ignored.
    y : array-like of shape (n_dyads, n_layers) or (n_dyads,)
        Edge values of each dyad in each layer; a 1-D array is one layer.
    n_nodes : int, default=None
        Number of nodes; by default the largest node index plus one.
    dyad_columns : tuple of two int or str, default=(0, 1)
        Columns of ``X`` that hold the node indices ``i`` and ``j``: positions,
        or column names when ``X`` is a DataFrame.
    directed : bool, default=False
        Whether the network is directed. If False, ``(i, j)`` and ``(j, i)`` are
        the same dyad and both entries of ``A`` are filled.

    Returns
    -------
    A : ndarray of shape (n_layers, n_nodes, n_nodes)
        Edge values, float64, NaN where no dyad was given and on the diagonal.

    See Also
    --------
    tensor_to_dyads : The forward conversion.

    Notes
    -----
    A dyad may be given more than once only with the same values (NaN equal to
    NaN); a self-loop ``i == j`` is an error.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.network import dyads_to_tensor
    >>> X = np.array([[0, 1], [1, 2]])
    >>> y = np.array([[1.0], [0.0]])
    >>> dyads_to_tensor(X, y, n_nodes=3)
    array([[[nan,  1., nan],
            [ 1., nan,  0.],
            [nan,  0., nan]]])
    """
    columns = _named_columns(X, dyad_columns)
    X = _as_float_array(X, "X")
    Y = _as_float_array(y, "y")
    if X.ndim != 2:
        raise ValueError(
            f"X must be a 2-D array of shape (n_dyads, n_features); got ndim={X.ndim}."
        )
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2:
        raise ValueError(
            f"y must be of shape (n_dyads, n_layers) or (n_dyads,); got ndim={Y.ndim}."
        )
    if X.shape[0] != Y.shape[0]:
        raise ValueError(
            f"X and y must have the same number of rows (dyads); got {X.shape[0]} "
            f"and {Y.shape[0]}."
        )
    if Y.shape[1] == 0:
        raise ValueError("y must have at least one layer (column).")
    _check_columns(columns, X.shape[1], dyad_columns)
    rows = _node_indices(X[:, columns[0]], "first dyad")
    cols = _node_indices(X[:, columns[1]], "second dyad")
    if (rows == cols).any():
        raise ValueError("X holds a self-loop dyad (i == j); dyads need i != j.")
    largest = int(max(rows.max(initial=-1), cols.max(initial=-1)))
    if n_nodes is None:
        n_nodes = largest + 1
    elif largest >= n_nodes:
        raise ValueError(
            f"X holds node index {largest}, which needs n_nodes > {largest}; got "
            f"n_nodes={n_nodes}."
        )

    if directed:
        key = rows * n_nodes + cols
    else:
        key = np.minimum(rows, cols) * n_nodes + np.maximum(rows, cols)
    order = np.argsort(key, kind="stable")
    repeated = key[order][1:] == key[order][:-1]
    if repeated.any():
        first, second = Y[order][:-1][repeated], Y[order][1:][repeated]
        same = (first == second) | (np.isnan(first) & np.isnan(second))
        if not same.all():
            bad = order[1:][repeated][~same.all(axis=1)][0]
            raise ValueError(
                f"dyad ({rows[bad]}, {cols[bad]}) is given more than once with "
                "different values."
            )

    A = np.full((Y.shape[1], n_nodes, n_nodes), np.nan)
    A[:, rows, cols] = Y.T
    if not directed:
        A[:, cols, rows] = Y.T
    return A
