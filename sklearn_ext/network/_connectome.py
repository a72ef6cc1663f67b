"""Brain networks as rows: the layout's widths and node features, the vectorizer.

The vectorisation of symmetric matrices itself (nilearn's layout) is shared with
the datasets, in :mod:`sklearn_ext.utils._connectivity`.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from sklearn_ext.utils._connectivity import (
    matrices_to_vec,
    tril_mask,
    vec_to_matrices,
)
from sklearn_ext.utils._sklearn_compat import (
    HasMethods,
    Interval,
    StrOptions,
    _fit_context,
)

__all__ = [
    "ConnectomeVectorizer",
    "connectome_width",
    "infer_n_nodes",
    "split_connectome",
]


def connectome_width(n_nodes, n_node_features=0, discard_diagonal=True):
    """Number of columns of one row: connectivity, then node features."""
    n_edges = n_nodes * (n_nodes - 1) // 2 + (0 if discard_diagonal else n_nodes)
    return n_edges + n_nodes * n_node_features


def infer_n_nodes(n_features, n_node_features=0, discard_diagonal=True):
    """The node count whose layout has ``n_features`` columns, or None.

    Solves ``n (n - 1) / 2 + n f = n_features`` (``n (n + 1) / 2`` when the
    diagonal is kept) for a whole number of nodes ``n >= 2``.
    """
    # n^2 + (2 f -/+ 1) n - 2 w = 0, positive root.
    b = 2 * n_node_features + (-1 if discard_diagonal else 1)
    root = (-b + math.sqrt(b * b + 8 * n_features)) / 2
    for n in (math.floor(root), math.ceil(root)):
        if (
            n >= 2
            and connectome_width(n, n_node_features, discard_diagonal) == n_features
        ):
            return int(n)
    return None


def layout_mismatch(n_features, n_node_features=0, discard_diagonal=True):
    """Say why ``n_features`` columns fit no layout, and which widths would.

    Parameters
    ----------
    n_features : int
        Columns of the rows, fitting no node count.
    n_node_features : int, default=0
    discard_diagonal : bool, default=True

    Returns
    -------
    str
        The layout's rule and the nearest widths below and above that fit,
        each with its node count.
    """
    f = n_node_features

    def width(m):
        return connectome_width(m, f, discard_diagonal)

    above = 2  # the smallest node count wider than n_features
    while width(above) <= n_features:
        above += 1
    fits = [m for m in (above - 1, above) if m >= 2]
    nearest = " or ".join(
        f"{width(m)} column{'s' * (width(m) > 1)} ({m} nodes)" for m in fits
    )
    n_diag = "n (n - 1) / 2" if discard_diagonal else "n (n + 1) / 2"
    return (
        f"X has {n_features} columns, which fits no network: a row holds "
        f"{n_diag} connectivity values plus n * n_node_features (= n * {f}) node "
        f"features for some n >= 2 nodes (discard_diagonal={discard_diagonal}). "
        f"The nearest widths that fit are {nearest}."
    )


def split_connectome(X, n_nodes, n_node_features=0, discard_diagonal=True):
    """Split rows of the layout into matrices and node features.

    Parameters
    ----------
    X : ndarray of shape (n_subjects, n_features)
        Rows of vectorised connectivity followed by node features.
    n_nodes, n_node_features : int
    discard_diagonal : bool

    Returns
    -------
    matrices : ndarray of shape (n_subjects, n_nodes, n_nodes)
    node_features : ndarray of shape (n_subjects, n_nodes, n_node_features)
        Node-major: node 0's features first.
    """
    n_edges = connectome_width(n_nodes, 0, discard_diagonal)
    width = connectome_width(n_nodes, n_node_features, discard_diagonal)
    if np.ndim(X) != 2 or X.shape[1] != width:
        raise ValueError(
            f"Rows of {n_nodes} nodes with {n_node_features} feature(s) each "
            f"(discard_diagonal={discard_diagonal}) have {width} columns; got X "
            f"of shape {np.shape(X)}."
        )
    matrices = vec_to_matrices(X[:, :n_edges], n_nodes, discard_diagonal)
    features = np.asarray(X[:, n_edges:], dtype=np.float64).reshape(
        X.shape[0], n_nodes, n_node_features
    )
    return matrices, features


def _as_subject_list(X, what):
    """A list of 2-D float arrays, one per subject, finite; clear errors."""
    if isinstance(X, np.ndarray) and X.ndim == 3:
        subjects = list(X)
    elif isinstance(X, (list, tuple)):
        subjects = [np.asarray(x) for x in X]
    else:
        shape = getattr(X, "shape", None)
        raise ValueError(
            f"ConnectomeVectorizer expects {what}: a 3-D array of shape "
            "(n_subjects, ., .) or a list of 2-D arrays; got "
            + (
                f"an array of shape {shape}."
                if shape is not None
                else f"{type(X).__name__}."
            )
        )
    if not subjects:
        raise ValueError(
            "ConnectomeVectorizer got no subject (an empty input, 0 samples)."
        )
    out = []
    for k, x in enumerate(subjects):
        if x.ndim != 2:
            raise ValueError(
                f"Subject {k} has an array of {x.ndim} dimensions; each subject "
                f"must be one 2-D array ({what})."
            )
        if x.size == 0:
            raise ValueError(
                f"Subject {k} has an empty array of shape {x.shape}; each subject "
                f"must be one non-empty 2-D array ({what})."
            )
        if x.dtype.kind not in "biuf":
            raise ValueError(
                f"Subject {k} has an array of dtype {x.dtype}; numeric values are "
                "expected."
            )
        x = x.astype(np.float64)
        if not np.isfinite(x).all():
            raise ValueError(
                f"Subject {k} has NaN or infinite values; connectivity must be finite."
            )
        out.append(x)
    return out


def _nilearn_connectome(kind):
    """nilearn.connectome, or an ImportError naming what needs it."""
    try:
        from nilearn import connectome
    except ImportError as exc:  # pragma: no cover - nilearn is a test dependency
        raise ImportError(
            f"ConnectomeVectorizer(kind={kind!r}) estimates connectivity from time "
            "series with nilearn's ConnectivityMeasure; install nilearn "
            "(`pip install nilearn`, or the `network` extra of sklearn_ext). "
            "kind='matrices' (matrices already estimated) needs no nilearn."
        ) from exc
    return connectome


_SERIES_KINDS = (
    "correlation",
    "covariance",
    "partial correlation",
    "tangent",
    "precision",
)


class ConnectomeVectorizer(TransformerMixin, BaseEstimator):
    """Turn brain networks or regional time series into rows of connectivity.

    Each subject becomes one row holding the lower triangle of its symmetric
    connectivity matrix, row by row: the layout of nilearn's
    ``ConnectivityMeasure(vectorize=True)`` and the input of
    :class:`MuHLClassifier`. Input is either the matrices themselves
    (``kind="matrices"``: a 3-D array of shape (n_subjects, n_nodes,
    n_nodes), or a list of square arrays) or one time series per subject
    (a list of arrays of shape (n_timepoints, n_nodes), lengths may differ;
    or a 3-D array), from which nilearn's
    :class:`~nilearn.connectome.ConnectivityMeasure` estimates the
    connectivity of the given ``kind`` (nilearn is then required).

    Parameters
    ----------
    kind : {"matrices", "correlation", "covariance", "partial correlation", \
            "tangent", "precision"}, default="matrices"
        What the input holds and, for time series, which connectivity
        nilearn estimates. ``"tangent"`` learns the group mean of the
        training subjects' covariances in ``fit`` (so fit it inside the
        cross-validation folds, e.g. in a Pipeline).
    discard_diagonal : bool, default=True
        Leave out the diagonal (``n (n - 1) / 2`` columns). When kept
        (``n (n + 1) / 2`` columns) it is divided by sqrt(2), as nilearn does.
    cov_estimator : estimator or None, default=None
        The scikit-learn covariance estimator fitted on each subject's time
        series; None is nilearn's default,
        ``LedoitWolf(store_precision=False)``. Unused for
        ``kind="matrices"``.
    standardize : bool or "zscore_sample", default="zscore_sample"
        How nilearn standardises each time series before the estimation
        (``"zscore_sample"``: by the sample standard deviation, what
        nilearn's default ``True`` becomes in nilearn 0.14); unused for
        ``kind="matrices"``.
    symmetry_tol : float, default=1e-8
        Largest ``|M - M.T|`` allowed, relative to ``max |M|``, for
        ``kind="matrices"``; an asymmetric matrix raises a ValueError.

    Attributes
    ----------
    n_nodes_ : int
        Nodes of the networks seen in ``fit``; ``transform`` requires the same.
    n_features_out_ : int
        Columns of the output.
    mean_ : ndarray of shape (n_nodes, n_nodes)
        Time-series kinds only: the fitting subjects' mean connectivity, as
        nilearn's ``ConnectivityMeasure.mean_`` (for ``kind="tangent"`` the
        geometric mean of their covariances, the point of tangency).
    whitening_ : ndarray of shape (n_nodes, n_nodes) or None
        Time-series kinds only: ``mean_ ** -1/2`` for ``kind="tangent"``,
        None otherwise. The fitted state is kept as these arrays, not as a
        nilearn object, so that a saved vectorizer holds only arrays (skops
        loads it trusting sklearn_ext's types alone); ``transform`` rebuilds
        nilearn's estimator from them.

    See Also
    --------
    MuHLClassifier : Multi-scale hypergraph classifier of these rows.

    Notes
    -----
    Except for ``kind="tangent"``, the vectorizer learns nothing but the
    node count, so ``fit_transform`` on all subjects leaks nothing across
    cross-validation folds. Input arrays are not modified. A 2-D array is
    not accepted: it is ambiguous between one subject's time series and rows
    already vectorised (which need no vectorizer). Before nilearn sees them,
    the inputs are checked here (finite numbers, one parcellation, at least
    2 time points, no constant region for the normalised kinds), so that a
    mistake gets a ValueError naming the subject.

    References
    ----------
    .. [1] Sim, J., Hwang, S., Baek, S., Wu, G. and Kim, W. H. "Learning
       Multi-Scale Hypergraph for High-Order Brain Connectivity Analysis",
       ICML 2026.
    .. [2] Varoquaux, G., Baronnet, F., Kleinschmidt, A., Fillard, P. and
       Thirion, B. "Detection of brain functional-connectivity difference in
       post-stroke patients using group-level covariance modeling", MICCAI
       2010 (the tangent space of nilearn's ConnectivityMeasure).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.network import ConnectomeVectorizer
    >>> A = np.array([[[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]]])
    >>> ConnectomeVectorizer().fit_transform(A)
    array([[1., 2., 3.]])
    """

    _parameter_constraints: dict = {
        "kind": [StrOptions({"matrices", *_SERIES_KINDS})],
        "discard_diagonal": ["boolean"],
        "cov_estimator": [None, HasMethods(["fit"])],
        "standardize": ["boolean", StrOptions({"zscore_sample"})],
        "symmetry_tol": [Interval(Real, 0, None, closed="left")],
    }

    _paper = (
        "Learning Multi-Scale Hypergraph for High-Order Brain Connectivity "
        "Analysis (MuHL), ICML 2026"
    )
    _bench_name = "muhl"
    _no_sample_weight = (
        "the vectorizer learns nothing from the subjects but their node count "
        "(and, for kind='tangent', nilearn's unweighted group mean), so there "
        "is nothing to weigh"
    )

    def __init__(
        self,
        kind="matrices",
        *,
        discard_diagonal=True,
        cov_estimator=None,
        standardize="zscore_sample",
        symmetry_tol=1e-8,
    ):
        self.kind = kind
        self.discard_diagonal = discard_diagonal
        self.cov_estimator = cov_estimator
        self.standardize = standardize
        self.symmetry_tol = symmetry_tol

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.three_d_array = True
        tags.requires_fit = True
        return tags

    def _matrices(self, X):
        """The (n_subjects, n_nodes, n_nodes) matrices of X, checked."""
        subjects = _as_subject_list(X, "square connectivity matrices")
        for k, m in enumerate(subjects):
            if m.shape[0] != m.shape[1]:
                raise ValueError(
                    f"Subject {k} has a matrix of shape {m.shape}; "
                    "kind='matrices' expects square (n_nodes, n_nodes) "
                    "matrices. For time series set kind='correlation' (or "
                    "'covariance', 'partial correlation', 'tangent', 'precision')."
                )
            scale = max(np.abs(m).max(), np.finfo(float).tiny)
            gap = np.abs(m - m.T).max() / scale
            if gap > self.symmetry_tol:
                raise ValueError(
                    f"Subject {k} has an asymmetric matrix (max |M - M.T| / "
                    f"max |M| = {gap:.3g} > symmetry_tol={self.symmetry_tol}); "
                    "connectivity matrices must be symmetric (symmetrise "
                    "directed networks, e.g. (M + M.T) / 2, first)."
                )
        sizes = {m.shape[0] for m in subjects}
        if len(sizes) > 1:
            raise ValueError(
                f"The matrices have different node counts {sorted(sizes)}; all "
                "subjects must share one parcellation."
            )
        return np.stack([(m + m.T) / 2 for m in subjects])

    def _series(self, X):
        """The subjects' time series, checked, as a list of 2-D arrays."""
        subjects = _as_subject_list(X, "time series of shape (n_timepoints, n_nodes)")
        sizes = {x.shape[1] for x in subjects}
        if len(sizes) > 1:
            raise ValueError(
                f"The time series have different region counts {sorted(sizes)}; all "
                "subjects must share one parcellation."
            )
        for k, x in enumerate(subjects):
            if x.shape[0] < 2:
                raise ValueError(
                    f"Subject {k} has {x.shape[0]} time point(s); at least 2 are "
                    "needed to estimate a connectivity matrix."
                )
            constant = np.ptp(x, axis=0) == 0
            if constant.any() and (self.kind != "covariance" or self.standardize):
                raise ValueError(
                    f"Subject {k}: region {int(np.flatnonzero(constant)[0])} has a "
                    f"constant time series, so its {self.kind} is undefined (and "
                    "it cannot be standardised)."
                )
        return subjects

    def _measure(self):
        from sklearn.covariance import LedoitWolf

        connectome = _nilearn_connectome(self.kind)
        estimator = (
            LedoitWolf(store_precision=False)
            if self.cov_estimator is None
            else clone(self.cov_estimator)
        )
        return connectome.ConnectivityMeasure(
            cov_estimator=estimator,
            kind=self.kind,
            vectorize=True,
            discard_diagonal=self.discard_diagonal,
            standardize=self.standardize,
        )

    def _estimate(self, subjects, fitting):
        message = (
            f"nilearn could not estimate kind={self.kind!r} connectivity: a "
            "covariance is singular (fewer time points than regions?), so it has "
            "no inverse; pass a regularised cov_estimator such as "
            "sklearn.covariance.LedoitWolf() (the default)."
        )
        try:
            with (
                np.errstate(invalid="ignore", divide="ignore"),
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("ignore", RuntimeWarning)
                measure = self._measure()
                if fitting:
                    out = measure.fit_transform(subjects)
                    self.mean_ = measure.mean_
                    self.whitening_ = getattr(measure, "whitening_", None)
                else:
                    # nilearn's fitted state: the covariance estimator (refit
                    # on every subject) and the group mean and whitening.
                    measure.cov_estimator_ = clone(measure.cov_estimator)
                    measure.mean_, measure.whitening_ = self.mean_, self.whitening_
                    measure.n_features_in_ = self.n_nodes_
                    out = measure.transform(subjects)
        except np.linalg.LinAlgError as exc:
            raise ValueError(message) from exc
        if not np.isfinite(out).all():
            raise ValueError(message)
        return out

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the networks and record their node count.

        Parameters
        ----------
        X : ndarray of shape (n_subjects, n_nodes, n_nodes) or list of ndarray
            Connectivity matrices (``kind="matrices"``) or one time series of
            shape (n_timepoints, n_nodes) per subject.
        y : None
            Ignored.

        Returns
        -------
        self : ConnectomeVectorizer
            Fitted transformer.
        """
        self._fit_transform(X)
        return self

    def _fit_transform(self, X):
        if self.kind == "matrices":
            matrices = self._matrices(X)
            n_nodes = matrices.shape[-1]
        else:
            subjects = self._series(X)
            n_nodes = subjects[0].shape[1]
            if self.kind == "tangent" and len(subjects) < 2:
                raise ValueError(
                    "kind='tangent' measures each subject's deviation from the "
                    "group mean, so fit needs at least 2 subjects; got "
                    f"{len(subjects)}."
                )
        if n_nodes < 2:
            raise ValueError(
                f"The networks have {n_nodes} node; at least 2 are needed for a "
                "connection."
            )
        self.n_nodes_ = n_nodes
        self.n_features_out_ = connectome_width(n_nodes, 0, self.discard_diagonal)
        if self.kind == "matrices":
            return matrices_to_vec(matrices, self.discard_diagonal)
        return self._estimate(subjects, fitting=True)

    def fit_transform(self, X, y=None):
        """Fit and vectorise X in one pass.

        Parameters
        ----------
        X : ndarray of shape (n_subjects, n_nodes, n_nodes) or list of ndarray
            See :meth:`fit`.
        y : None
            Ignored.

        Returns
        -------
        X_vec : ndarray of shape (n_subjects, n_features_out)
            One row per subject.
        """
        self._validate_params()
        return self._fit_transform(X)

    def transform(self, X):
        """Vectorise the networks of X.

        Parameters
        ----------
        X : ndarray of shape (n_subjects, n_nodes, n_nodes) or list of ndarray
            See :meth:`fit`; the node count must be the fitted one.

        Returns
        -------
        X_vec : ndarray of shape (n_subjects, n_features_out)
            One row per subject.
        """
        check_is_fitted(self)
        data = self._matrices(X) if self.kind == "matrices" else self._series(X)
        n_nodes = data[0].shape[-1]
        if n_nodes != self.n_nodes_:
            raise ValueError(
                f"X has networks of {n_nodes} nodes, but "
                f"ConnectomeVectorizer was fitted on {self.n_nodes_}."
            )
        if self.kind == "matrices":
            return matrices_to_vec(data, self.discard_diagonal)
        return self._estimate(data, fitting=False)

    def get_feature_names_out(self, input_features=None):
        """Get the names of the output columns: ``"edge_i_j"`` (``i >= j``).

        Parameters
        ----------
        input_features : None
            Ignored (the input has no columns).

        Returns
        -------
        names : ndarray of str
            One per output column.
        """
        check_is_fitted(self)
        rows, cols = np.nonzero(tril_mask(self.n_nodes_, self.discard_diagonal))
        return np.array([f"edge_{i}_{j}" for i, j in zip(rows, cols)], dtype=object)

    # ------------------------------------------------------------ harness

    @classmethod
    def _get_test_params(cls):
        return [{}, {"kind": "correlation", "discard_diagonal": False}]

    def _make_test_data(self, n_samples, random_state):
        """Networks of 6 regions (or their time series); y marks a strong edge."""
        rng = np.random.RandomState(random_state)
        y = np.arange(n_samples) % 2
        if self.kind == "matrices":
            A = rng.rand(n_samples, 6, 6)
            A = (A + A.transpose(0, 2, 1)) / 2
            A[y == 1, 0, 1] = A[y == 1, 1, 0] = 2.0
            return A, y
        series = rng.normal(size=(n_samples, 50, 6))
        series[y == 1, :, 1] += series[y == 1, :, 0]
        return series, y
