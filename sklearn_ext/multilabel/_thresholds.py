"""Per-label decision thresholds chosen on a validation fold, and that fold."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

__all__ = ["f1_thresholds", "validation_split"]


def f1_thresholds(y_true, proba, *, default=0.5):
    """Choose per-label probability thresholds that maximise F1 on held-out data.

    For each label the samples are sorted by decreasing probability; predicting
    the top ``k`` gives F1 ``2 TP_k / (k + P)``, and the threshold is put
    halfway between the ``k``-th and the next probability for the best ``k``.
    ``k`` is searched up to twice the label's positives ``P``: with a handful of
    validation positives, one ranked far down would otherwise set a threshold
    that predicts the label for a large share of new samples (its F1 on the
    fold is tiny either way). A label without positives in ``y_true``, or
    without any among its top ``2 P``, keeps ``default``.

    Parameters
    ----------
    y_true : ndarray of shape (n_samples, n_labels)
        Binary indicator matrix of the validation samples.
    proba : ndarray of shape (n_samples, n_labels)
        Predicted probabilities of the same samples.
    default : float, default=0.5
        Threshold of a label without validation positives.

    Returns
    -------
    thresholds : ndarray of shape (n_labels,)
        A label is predicted when its probability exceeds its threshold.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.multilabel import f1_thresholds
    >>> y = np.array([[1, 0], [1, 0], [0, 0], [0, 1]])
    >>> p = np.array([[0.4, 0.1], [0.3, 0.2], [0.1, 0.3], [0.2, 0.9]])
    >>> f1_thresholds(y, p)  # label 0: the top two; label 1: the top one
    array([0.25, 0.6 ])
    """
    y_true = np.asarray(y_true)
    proba = np.asarray(proba, dtype=np.float64)
    n_samples, n_labels = proba.shape
    thresholds = np.full(n_labels, float(default))
    k = np.arange(1, n_samples + 1)
    for label in range(n_labels):
        positives = y_true[:, label].sum()
        if positives == 0:
            continue
        order = np.argsort(-proba[:, label], kind="stable")
        p = proba[order, label]
        f1 = 2 * np.cumsum(y_true[order, label]) / (k + positives)
        # Only cut between distinct probabilities, within the top 2 P.
        f1[:-1][p[:-1] == p[1:]] = -1
        f1[int(2 * positives) :] = -1
        best = int(np.argmax(f1))
        if f1[best] <= 0:
            continue
        below = p[best + 1] if best + 1 < n_samples else 0.0
        thresholds[label] = (p[best] + below) / 2
    return thresholds


def validation_split(T, fraction, *, stratify, random_state):
    """Split the rows of an indicator matrix into a training and a validation part.

    Parameters
    ----------
    T : ndarray of shape (n_samples, n_labels)
        Binary indicator matrix.
    fraction : float
        Share of the rows in the validation part.
    stratify : {"iterative", "none"}, keyword-only
        "iterative": iterative stratification over the labels (Sechidis et al.,
        2011; Szymanski and Kajdanowicz, 2017), from the
        ``iterative-stratification`` package, which puts each rare label's
        positives in both parts in proportion; "none": a uniformly random split.
    random_state : int or None, keyword-only
        Seed of the split; None draws a different one each call.

    Returns
    -------
    train, valid : ndarray of int
        Sorted row indices of the two parts.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.multilabel import validation_split
    >>> rng = np.random.RandomState(0)
    >>> y = (rng.rand(200, 3) < [0.5, 0.1, 0.05]).astype(int)
    >>> train, valid = validation_split(y, 0.2, stratify="iterative", random_state=0)
    >>> len(train), len(valid)
    (160, 40)
    >>> y[valid].sum(0), y.sum(0)  # each label's positives split about 1 : 4
    (array([22,  5,  2]), array([111,  24,   9]))
    """
    n_samples = len(T)
    if stratify == "iterative":
        from iterstrat.ml_stratifiers import MultilabelStratifiedShuffleSplit

        splitter = MultilabelStratifiedShuffleSplit(
            n_splits=1, test_size=fraction, random_state=random_state
        )
        train, valid = next(splitter.split(np.zeros((n_samples, 1)), T))
        return np.sort(train), np.sort(valid)
    rng = np.random.RandomState(random_state)
    order = rng.permutation(n_samples)
    n_valid = max(1, int(round(fraction * n_samples)))
    return np.sort(order[n_valid:]), np.sort(order[:n_valid])
