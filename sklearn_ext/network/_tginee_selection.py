"""Model selection on incomplete multilayer networks.

Scores that skip unobserved (NaN) entries of a multi-layer ``y`` (as metric
functions and as :func:`~sklearn.metrics.make_scorer` scorers), and
:class:`NodeKFold`, dyad-level folds whose every training fold holds every
node.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

import numpy as np
from sklearn.metrics import log_loss, make_scorer, r2_score, roc_auc_score
from sklearn.model_selection import BaseCrossValidator
from sklearn.utils import check_array, check_random_state

from sklearn_ext.network._nodes import check_node_ids, encode_nodes

__all__ = [
    "NodeKFold",
    "get_observed_scorer",
    "observed_accuracy_score",
    "observed_log_loss",
    "observed_r2_score",
    "observed_roc_auc_score",
]


def _observed_pairs(y_true, y_pred, sample_weight):
    """``y_true`` and ``y_pred`` as (n, L) float arrays, the mask, the weights."""
    Y = check_array(
        y_true,
        ensure_2d=False,
        dtype=np.float64,
        ensure_all_finite="allow-nan",
        input_name="y_true",
    )
    P = check_array(y_pred, ensure_2d=False, dtype=np.float64, input_name="y_pred")
    if Y.ndim == 1:
        Y = Y[:, None]
    if P.ndim == 1:
        P = P[:, None]
    if Y.ndim != 2 or Y.shape != P.shape:
        raise ValueError(
            "y_true and y_pred must have the same shape (n_dyads, n_layers) or "
            f"(n_dyads,); got {np.shape(y_true)} and {np.shape(y_pred)}."
        )
    seen = ~np.isnan(Y)
    if not seen.any():
        raise ValueError("y_true has no observed (non-NaN) entry to score.")
    w = None
    if sample_weight is not None:
        w = check_array(sample_weight, ensure_2d=False, input_name="sample_weight")
        if w.shape != (Y.shape[0],):
            raise ValueError(
                f"sample_weight must have shape ({Y.shape[0]},); got {w.shape}."
            )
    return Y, P, seen, w


def _check_average(average):
    if average not in ("macro", "micro", None):
        raise ValueError(f'average must be "macro", "micro" or None; got {average!r}.')


def _check_binary(Y, seen, name):
    values = Y[seen]
    if not np.isin(values, (0.0, 1.0)).all():
        found = np.setdiff1d(np.unique(values), [0.0, 1.0])[:5].tolist()
        raise ValueError(
            f"{name} needs binary edges (0 or 1) in y_true; found values {found}."
        )


def observed_roc_auc_score(y_true, y_score, *, sample_weight=None, average="macro"):
    """ROC AUC over the observed entries of a multi-layer binary ``y``.

    Each layer's AUC is computed on its observed (non-NaN) entries; a layer
    whose observed entries are all of one class has no AUC and is skipped.
    On a complete ``y`` the macro average equals scikit-learn's
    ``roc_auc_score(y_true, y_score)`` (its macro average over outputs).

    Parameters
    ----------
    y_true : array-like of shape (n_dyads, n_layers) or (n_dyads,)
        Binary edges, NaN where unobserved.
    y_score : array-like of the shape of ``y_true``
        Scores ranking the entries (edge probabilities or log-odds).
    sample_weight : array-like of shape (n_dyads,), default=None
        Weights of the dyads.
    average : {"macro", "micro"} or None, default="macro"
        "macro": mean of the layers' AUC; "micro": one AUC over all observed
        entries pooled; None: the layers' AUC (NaN for a skipped layer).

    Returns
    -------
    score : float or ndarray of shape (n_layers,)
        The AUC (macro or micro average), or each layer's.

    Raises
    ------
    ValueError
        If no layer has both classes among its observed entries, or an
        observed entry is not 0 or 1.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.network import observed_roc_auc_score
    >>> y = np.array([[1, 0], [0, np.nan], [1, 1], [0, 0]])
    >>> p = np.array([[0.9, 0.2], [0.1, 0.5], [0.6, 0.7], [0.3, 0.1]])
    >>> float(observed_roc_auc_score(y, p))
    1.0
    """
    _check_average(average)
    Y, P, seen, w = _observed_pairs(y_true, y_score, sample_weight)
    _check_binary(Y, seen, "observed_roc_auc_score")
    if average == "micro":
        if np.unique(Y[seen]).size < 2:
            raise ValueError("The observed entries of y_true are all of one class.")
        ww = None if w is None else np.broadcast_to(w[:, None], Y.shape)[seen]
        return float(roc_auc_score(Y[seen], P[seen], sample_weight=ww))
    scores = np.full(Y.shape[1], np.nan)
    for k in range(Y.shape[1]):
        s = seen[:, k]
        if np.unique(Y[s, k]).size == 2:
            scores[k] = roc_auc_score(
                Y[s, k], P[s, k], sample_weight=None if w is None else w[s]
            )
    if average is None:
        return scores
    if np.isnan(scores).all():
        raise ValueError(
            "No layer of y_true has both classes among its observed entries; "
            "ROC AUC is undefined."
        )
    return float(np.nanmean(scores))


def observed_log_loss(y_true, y_prob, *, sample_weight=None, eps=1e-15):
    """Mean binary log-loss over the observed entries of a multi-layer ``y``.

    Every observed (non-NaN) entry of every layer counts once (times its
    dyad's weight): on a complete one-layer ``y`` this is scikit-learn's
    ``log_loss``.

    Parameters
    ----------
    y_true : array-like of shape (n_dyads, n_layers) or (n_dyads,)
        Binary edges, NaN where unobserved.
    y_prob : array-like of the shape of ``y_true``
        Predicted edge probabilities (``TGINEE.predict`` for a binary link).
    sample_weight : array-like of shape (n_dyads,), default=None
        Weights of the dyads.
    eps : float, default=1e-15
        Probabilities are clipped to ``[eps, 1 - eps]``.

    Returns
    -------
    loss : float
        Mean negative log-likelihood per observed entry.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.network import observed_log_loss
    >>> y = np.array([[1, np.nan], [0, 1]])
    >>> p = np.array([[0.8, 0.5], [0.4, 0.9]])
    >>> round(observed_log_loss(y, p), 4)
    0.2798
    """
    Y, P, seen, w = _observed_pairs(y_true, y_prob, sample_weight)
    _check_binary(Y, seen, "observed_log_loss")
    if ((P < 0) | (P > 1)).any():
        raise ValueError(
            "observed_log_loss needs probabilities in [0, 1] in y_prob; pass "
            "predict's output, not decision_function's."
        )
    p = np.clip(P[seen], eps, 1 - eps)
    y = Y[seen]
    ww = None if w is None else np.broadcast_to(w[:, None], Y.shape)[seen]
    return float(log_loss(y, np.c_[1 - p, p], sample_weight=ww, labels=[0.0, 1.0]))


def observed_accuracy_score(y_true, y_pred, *, sample_weight=None, threshold=0.5):
    """Accuracy over the observed entries of a multi-layer binary ``y``.

    ``y_pred`` holds probabilities (or 0/1 predictions): an entry is
    predicted as an edge when it is at least ``threshold``. Every observed
    entry counts once (times its dyad's weight).

    Parameters
    ----------
    y_true : array-like of shape (n_dyads, n_layers) or (n_dyads,)
        Binary edges, NaN where unobserved.
    y_pred : array-like of the shape of ``y_true``
        Edge probabilities or 0/1 predictions.
    sample_weight : array-like of shape (n_dyads,), default=None
        Weights of the dyads.
    threshold : float, default=0.5
        Probability from which an entry is predicted as an edge.

    Returns
    -------
    accuracy : float
        Share of the observed entries predicted right.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.network import observed_accuracy_score
    >>> y = np.array([[1, np.nan], [0, 1]])
    >>> float(observed_accuracy_score(y, np.array([[0.8, 0.1], [0.6, 0.9]])))
    0.6666666666666666
    """
    Y, P, seen, w = _observed_pairs(y_true, y_pred, sample_weight)
    _check_binary(Y, seen, "observed_accuracy_score")
    hit = ((P >= threshold) == (Y == 1.0))[seen]
    if w is None:
        return float(hit.mean())
    ww = np.broadcast_to(w[:, None], Y.shape)[seen]
    return float((hit * ww).sum() / ww.sum())


def observed_r2_score(y_true, y_pred, *, sample_weight=None, average="macro"):
    """R^2 of each layer on its observed entries, averaged over the layers.

    A layer with fewer than two observed entries is skipped. On a complete
    ``y`` the macro average equals scikit-learn's ``r2_score`` with
    ``multioutput="uniform_average"``.

    Parameters
    ----------
    y_true : array-like of shape (n_dyads, n_layers) or (n_dyads,)
        Edge values, NaN where unobserved.
    y_pred : array-like of the shape of ``y_true``
        Predicted edge values.
    sample_weight : array-like of shape (n_dyads,), default=None
        Weights of the dyads.
    average : {"macro"} or None, default="macro"
        "macro": the mean of the layers' R^2; None: the layers' R^2.

    Returns
    -------
    score : float or ndarray of shape (n_layers,)
        The mean of the layers' R^2, or each layer's.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.network import observed_r2_score
    >>> y = np.array([[1.0, np.nan], [2.0, 1.0], [3.0, 3.0]])
    >>> float(observed_r2_score(y, np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 3.0]])))
    1.0
    """
    if average not in ("macro", None):
        raise ValueError(f'average must be "macro" or None; got {average!r}.')
    Y, P, seen, w = _observed_pairs(y_true, y_pred, sample_weight)
    scores = np.full(Y.shape[1], np.nan)
    for k in range(Y.shape[1]):
        s = seen[:, k]
        if s.sum() >= 2:
            scores[k] = r2_score(
                Y[s, k], P[s, k], sample_weight=None if w is None else w[s]
            )
    if average is None:
        return scores
    if np.isnan(scores).all():
        raise ValueError(
            "No layer of y_true has two observed entries; R^2 is undefined."
        )
    return float(np.nanmean(scores))


# Scorers: roc_auc ranks by decision_function (the linear predictor, for the
# binary links) or by predict; the others need predict's probabilities/means.
_SCORERS = {
    "roc_auc": make_scorer(
        observed_roc_auc_score, response_method=("decision_function", "predict")
    ),
    "neg_log_loss": make_scorer(
        observed_log_loss, greater_is_better=False, response_method="predict"
    ),
    "accuracy": make_scorer(observed_accuracy_score, response_method="predict"),
    "r2": make_scorer(observed_r2_score, response_method="predict"),
}


def get_observed_scorer(scoring):
    """A scorer that skips the unobserved (NaN) entries of a multi-layer ``y``.

    scikit-learn's string scorers (``scoring="roc_auc"``) reject NaN in
    ``y``, so that ``cross_val_score`` or ``GridSearchCV`` on an incomplete
    network scores every fold as NaN. Pass ``scoring=get_observed_scorer(
    "roc_auc")`` instead (or a dict of them for several metrics): the same
    names, the same signs ("neg_log_loss" is negated, greater is better), the
    unobserved entries skipped. Each is ``make_scorer`` of the metric
    function, so it also takes ``sample_weight``.

    Parameters
    ----------
    scoring : {"roc_auc", "neg_log_loss", "accuracy", "r2"}
        "roc_auc": :func:`observed_roc_auc_score` of ``decision_function``
        (``predict`` for an estimator without one); "neg_log_loss": minus
        :func:`observed_log_loss` of ``predict``; "accuracy":
        :func:`observed_accuracy_score` of ``predict``; "r2":
        :func:`observed_r2_score` of ``predict``.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import cross_val_score
    >>> from sklearn_ext.datasets import make_multilayer_network
    >>> from sklearn_ext.network import (
    ...     TGINEE, NodeKFold, get_observed_scorer, tensor_to_dyads)
    >>> A, C, _ = make_multilayer_network(40, 2, 2, random_state=0)
    >>> A[0, :5, :5] = np.nan  # unobserved entries
    >>> X, y = tensor_to_dyads(A, C)
    >>> scores = cross_val_score(
    ...     TGINEE(device="cpu", random_state=0), X, y,
    ...     scoring=get_observed_scorer("roc_auc"), cv=NodeKFold(3))
    >>> bool(np.isfinite(scores).all())
    True
    """
    if scoring not in _SCORERS:
        raise ValueError(f"scoring must be one of {sorted(_SCORERS)}; got {scoring!r}.")
    return _SCORERS[scoring]


class NodeKFold(BaseCrossValidator):
    """K-fold over dyads in which every training fold holds every node.

    Link prediction splits dyads (node pairs) between training and test. A
    split that puts all of a node's dyads into one test fold leaves that node
    out of the training fold: a model with node factors (such as
    :class:`~sklearn_ext.network.TGINEE`) has no factor for it. On dyads in
    node order (``tensor_to_dyads(A, shuffle=False)``), scikit-learn's
    default ``KFold`` does exactly that, since the first rows hold every
    dyad of node 0.

    ``NodeKFold`` deals the observed dyads (those with at least one non-NaN
    entry in ``y``) to the folds in turn (after a shuffle when
    ``shuffle=True``), then moves dyads between folds until every node has
    observed dyads in at least two folds, so that each training fold sees
    it. The test folds then partition the observed dyads, except the dyads
    that cannot be tested without leaving a node unseen: the only observed
    dyad of a node that has one (with ``n_splits >= 3`` these are the only
    exceptions; with ``n_splits=2`` a sparse network can add a few more).
    They stay in every training fold. Dyads without an observed entry are in
    every training fold and no test fold (there is nothing to score on them).

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2.
    dyad_columns : tuple of two int or str, default=(0, 1)
        Columns of ``X`` holding the dyad's node ids (positions, or names
        when ``X`` is a DataFrame), as in ``TGINEE(dyad_columns=...)``. A
        node counts as seen in a training fold whichever of the two columns
        holds it.
    shuffle : bool, default=False
        Shuffle the dyads before dealing them to the folds. Without it the
        folds are deterministic; dealing in turn already spreads each node's
        dyads over the folds, even on dyads in node order.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffle and the choice of dyads moved by the repair.

    See Also
    --------
    get_observed_scorer : Scorers that skip unobserved entries.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.network import NodeKFold
    >>> X = np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]])
    >>> for train, test in NodeKFold(3).split(X):
    ...     print(train, test)
    [1 2 4 5] [0 3]
    [0 2 3 5] [1 4]
    [0 1 3 4] [2 5]
    """

    def __init__(
        self, n_splits=5, *, dyad_columns=(0, 1), shuffle=False, random_state=None
    ):
        self.n_splits = n_splits
        self.dyad_columns = dyad_columns
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        """The number of folds, ``n_splits``.

        Parameters
        ----------
        X, y, groups : object
            Ignored; for the scikit-learn splitter API.

        Returns
        -------
        n_splits : int
            The number of folds.
        """
        return self.n_splits

    def split(self, X, y=None, groups=None):
        """Generate the indices of each fold's training and test dyads.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_dyads, n_features)
            Dyads, with the node ids in ``dyad_columns``.
        y : array-like of shape (n_dyads, n_layers) or (n_dyads,), default=None
            Edge values, NaN where unobserved; None counts every dyad as
            observed.
        groups : object
            Ignored.

        Yields
        ------
        train : ndarray
            Training dyads of the fold.
        test : ndarray
            Test dyads of the fold.
        """
        folds = self._assign(X, y)
        everything = np.arange(len(folds))
        for k in range(self.n_splits):
            test = np.flatnonzero(folds == k)
            yield np.setdiff1d(everything, test), test

    def _iter_test_indices(self, X=None, y=None, groups=None):
        folds = self._assign(X, y)
        for k in range(self.n_splits):
            yield np.flatnonzero(folds == k)

    def _node_ids(self, X):
        if not (
            isinstance(self.dyad_columns, (tuple, list)) and len(self.dyad_columns) == 2
        ):
            raise ValueError(
                f"dyad_columns must be two columns (i, j); got {self.dyad_columns!r}."
            )
        columns = getattr(X, "columns", None)
        positions = []
        for c in self.dyad_columns:
            if isinstance(c, str):
                if columns is None or c not in list(columns):
                    raise ValueError(
                        f"dyad_columns names the column {c!r}, which X does not have."
                    )
                positions.append(list(columns).index(c))
            elif isinstance(c, Integral) and not isinstance(c, bool):
                positions.append(int(c))
            else:
                raise TypeError(
                    "dyad_columns must hold column positions (int) or names (str); "
                    f"got {c!r}."
                )
        values = X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
        if values.ndim != 2:
            raise ValueError(f"X must be 2-D; got shape {values.shape}.")
        for p in positions:
            if not -values.shape[1] <= p < values.shape[1]:
                raise ValueError(
                    f"dyad_columns={p} is out of range for X with "
                    f"{values.shape[1]} columns."
                )
        return check_node_ids(values[:, positions])

    def _assign(self, X, y):
        """Each dyad's test fold: 0 .. n_splits - 1, or -1 (never tested)."""
        if not isinstance(self.n_splits, Integral) or self.n_splits < 2:
            raise ValueError(f"n_splits must be an int >= 2; got {self.n_splits!r}.")
        _, pairs = encode_nodes(self._node_ids(X))
        n = len(pairs)
        if y is None:
            observed = np.ones(n, dtype=bool)
        else:
            Y = check_array(
                y,
                ensure_2d=False,
                dtype=np.float64,
                ensure_all_finite="allow-nan",
                input_name="y",
            )
            if Y.shape[0] != n:
                raise ValueError(
                    f"X and y have different numbers of dyads: {n} and {Y.shape[0]}."
                )
            Y = Y.reshape(n, -1)
            observed = ~np.isnan(Y).all(1)
        rows = np.flatnonzero(observed)
        K = self.n_splits
        if len(rows) < K:
            raise ValueError(
                f"Cannot have n_splits={K} greater than the number of observed "
                f"dyads: {len(rows)}."
            )
        rng = check_random_state(self.random_state)
        if self.shuffle:
            rows = rng.permutation(rows)
        folds = np.full(n, -1)
        folds[rows] = np.arange(len(rows)) % K
        _repair(folds, pairs, observed, K, rng)
        return folds


def _repair(folds, pairs, observed, K, rng):
    """Move dyads until every node has observed dyads in two folds (in place).

    ``counts[v, k]`` is the number of node ``v``'s tested dyads in fold ``k``
    and ``fixed[v]`` its observed dyads in no test fold (in every training
    fold). Node ``v`` is missing from training fold ``k`` when all its
    observed dyads are tested in fold ``k``.
    """
    n_nodes = pairs.max() + 1 if len(pairs) else 0
    counts = np.zeros((n_nodes, K), dtype=np.int64)
    fixed = np.zeros(n_nodes, dtype=np.int64)
    tested = observed & (folds >= 0)
    for side in (0, 1):
        np.add.at(counts, (pairs[tested, side], folds[tested]), 1)
    by_node = [[] for _ in range(n_nodes)]
    for d in np.flatnonzero(observed):
        by_node[pairs[d, 0]].append(d)
        if pairs[d, 1] != pairs[d, 0]:
            by_node[pairs[d, 1]].append(d)

    def stranded(v):
        total = counts[v].sum()
        return fixed[v] == 0 and total > 0 and counts[v].max() == total

    def move(d, to):
        frm = folds[d]
        for v in set(pairs[d]):
            counts[v, frm] -= 1
            if to >= 0:
                counts[v, to] += 1
            else:
                fixed[v] += 1
        folds[d] = to

    for v in rng.permutation(n_nodes):
        if not stranded(v):
            continue
        dyads = by_node[v]
        if len(dyads) == 1:  # a single observed dyad: never tested
            move(dyads[0], -1)
            continue
        done = False
        for d in rng.permutation(dyads):
            (u,) = [x for x in pairs[d] if x != v] or [v]
            frm = folds[d]
            for to in rng.permutation(K):
                if to == frm:
                    continue
                # The move must not strand the dyad's other node u.
                counts_u = counts[u].copy()
                counts_u[frm] -= 1
                counts_u[to] += 1
                total = counts_u.sum()
                if fixed[u] == 0 and total > 0 and counts_u.max() == total:
                    continue
                move(d, to)
                done = True
                break
            if done:
                break
        if not done:  # every move strands a neighbour: keep one dyad in training
            move(dyads[0], -1)
