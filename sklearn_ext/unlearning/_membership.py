"""Membership-inference audits of unlearning: did the model forget the rows?

Two attacks score each candidate row (forget rows, which the model was
trained on before unlearning, against held-out rows it never saw) and report
the area under the ROC curve of telling the two apart:

- :func:`lira_membership_auc`, the likelihood-ratio attack with shadow models
  (online LiRA, Carlini et al. 2022): calibrated per row, it has power
  against a model that memorises its training rows;
- :func:`membership_inference_auc`, a loss threshold: one global threshold
  on the loss, weak (near 0.5 even before unlearning on a model that
  generalises), kept as the simple reference.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

import numpy as np
from sklearn.base import clone
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_array, check_random_state, column_or_1d

from sklearn_ext.utils._torch import child_seeds

__all__ = ["lira_membership_auc", "membership_inference_auc"]

_TINY = 1e-300


def _true_class_proba(estimator, X, y):
    """Probabilities of each row's true class and of all the other classes.

    A class the model never saw (retrained without it) has probability 0.
    The rest is summed from the other columns, not taken as ``1 - p``, so that
    it keeps its precision when ``p`` is close to 1.
    """
    proba = np.asarray(estimator.predict_proba(X), dtype=np.float64)
    classes = estimator.classes_
    y = np.asarray(y)
    column = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1)
    seen = classes[column] == y
    rows = np.arange(len(y))
    p = np.where(seen, proba[rows, column], 0.0)
    others = proba.copy()
    others[rows[seen], column[seen]] = 0.0
    return p, others.sum(axis=1)


def _logit_confidence(estimator, X, y):
    """``log(p_y / sum of the other p)``: the confidence LiRA models as Gaussian."""
    p, rest = _true_class_proba(estimator, X, y)
    return np.log(np.maximum(p, _TINY)) - np.log(np.maximum(rest, _TINY))


def _check_rows(X, y, name, n_features=None):
    X = check_array(X, dtype=np.float64, ensure_min_samples=1)
    y = column_or_1d(y)
    if len(y) != len(X):
        raise ValueError(
            f"X_{name} has {len(X)} rows but y_{name} has {len(y)} labels."
        )
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"X_{name} has {X.shape[1]} features but X_forget has {n_features}."
        )
    return X, y


def membership_inference_auc(estimator, X_forget, y_forget, X_heldout, y_heldout):
    """AUC of a loss-threshold membership attack: forget rows against held-out rows.

    The attacker calls a row a member when the model's cross-entropy on it is
    low, with one threshold for all rows. 0.5 means the forget rows look like
    data the model never saw; a model that still remembers them scores above
    0.5. The attack is weak: on a model that generalises, training rows and
    held-out rows have similar losses, and it scores near 0.5 even before
    unlearning (use :func:`lira_membership_auc` for an attack with power).
    Forgetting a whole class makes the question ill-posed (held-out rows of
    that class are also unseen): use random subsets.

    Parameters
    ----------
    estimator : classifier
        Fitted, with ``predict_proba`` and ``classes_``.
    X_forget : array-like of shape (n_forget, n_features)
        The rows that were unlearned.
    y_forget : array-like of shape (n_forget,)
        Their labels.
    X_heldout : array-like of shape (n_heldout, n_features)
        Rows never trained on.
    y_heldout : array-like of shape (n_heldout,)
        Their labels.

    Returns
    -------
    auc : float
        Area under the ROC curve of the attack.

    See Also
    --------
    lira_membership_auc : The likelihood-ratio attack with shadow models.

    References
    ----------
    .. [1] S. Yeom, I. Giacomelli, M. Fredrikson and S. Jha, "Privacy Risk in
       Machine Learning: Analyzing the Connection to Overfitting", IEEE CSF
       2018.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_ext.unlearning import membership_inference_auc
    >>> X, y = load_digits(return_X_y=True)
    >>> model = LogisticRegression(max_iter=1000).fit(X[:900], y[:900])
    >>> auc = membership_inference_auc(model, X[:300], y[:300], X[900:], y[900:])
    >>> bool(0.5 < auc < 0.7)
    True
    """
    X_forget, y_forget = _check_rows(X_forget, y_forget, "forget")
    X_heldout, y_heldout = _check_rows(
        X_heldout, y_heldout, "heldout", X_forget.shape[1]
    )
    lf = -np.log(np.maximum(_true_class_proba(estimator, X_forget, y_forget)[0], 1e-12))
    lh = -np.log(
        np.maximum(_true_class_proba(estimator, X_heldout, y_heldout)[0], 1e-12)
    )
    member = np.r_[np.ones(len(lf)), np.zeros(len(lh))]
    return float(roc_auc_score(member, -np.r_[lf, lh]))


def lira_membership_auc(
    model,
    estimator,
    X_forget,
    y_forget,
    X_heldout,
    y_heldout,
    X_retain,
    y_retain,
    *,
    n_shadow=16,
    random_state=None,
):
    """AUC of the online likelihood-ratio membership attack (LiRA) with shadows.

    The attacker knows the training recipe (``estimator``), the retain rows
    and the candidate rows: the forget rows (members of the original
    training set) and held-out rows (never trained on). It trains
    ``n_shadow`` shadow models, each on the retain rows plus a random half of
    the candidates, so that every candidate is in exactly half of them. Per
    candidate, the logit-scaled confidence of its true class,
    ``log(p_y / (1 - p_y))``, is modelled as a Gaussian under the shadows
    that trained on it (IN) and under those that did not (OUT): per-row
    means, one pooled standard deviation for each side (the fixed-variance
    form, stable with few shadows). A target model's score of a row is the
    log-likelihood ratio of its confidence, IN against OUT; the AUC is that
    of forget rows against held-out rows. An AUC of ``0.5``: the forget rows
    look exactly like rows the model never saw (a model retrained without
    them scores ``0.5`` up to noise); a model that memorised them scores
    well above.

    Parameters
    ----------
    model : classifier or list of classifiers
        The fitted target model(s) to audit (e.g. the original, unlearned
        and retrained models: the shadows are trained once for all).
    estimator : classifier
        The unfitted training recipe of the target, cloned and fitted for
        each shadow (its ``random_state``, when it has one, is set per shadow
        from ``random_state``).
    X_forget : array-like of shape (n_forget, n_features)
        The rows that were unlearned (members of the original training set).
    y_forget : array-like of shape (n_forget,)
        Their labels.
    X_heldout : array-like of shape (n_heldout, n_features)
        Rows the target was never trained on.
    y_heldout : array-like of shape (n_heldout,)
        Their labels.
    X_retain : array-like of shape (n_retain, n_features)
        The rest of the target's training data; every shadow trains on it.
    y_retain : array-like of shape (n_retain,)
        Its labels.
    n_shadow : int, default=16
        Shadow models (even, at least 4); each costs one fit of ``estimator``.
    random_state : int, RandomState instance or None, default=None
        Seeds the split of the candidates among the shadows and the shadows'
        own seeds.

    Returns
    -------
    auc : float or list of float
        Area under the ROC curve of the attack, one per model when ``model``
        is a list.

    See Also
    --------
    membership_inference_auc : The loss-threshold attack (weak).

    Notes
    -----
    The attack has power when the recipe memorises its training rows (small
    training sets, wide networks, no weight decay, many epochs); a recipe
    that generalises well leaves every attack near 0.5 before and after
    unlearning, and then the figure says little about unlearning.

    References
    ----------
    .. [1] N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis and F. Tramer,
       "Membership Inference Attacks From First Principles", IEEE S&P 2022.

    Examples
    --------
    A network trained on the forget rows, and one retrained without them:

    >>> import numpy as np
    >>> from sklearn.base import clone
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_ext.unlearning import (
    ...     UnlearnableMLPClassifier, lira_membership_auc)
    >>> X, y = load_digits(return_X_y=True)
    >>> rows = np.random.default_rng(0).permutation(len(y))
    >>> f, h, r = rows[:100], rows[100:200], rows[200:400]
    >>> recipe = UnlearnableMLPClassifier((64,), alpha=0.0, max_iter=100,
    ...                                   random_state=0)
    >>> original = clone(recipe).fit(X[np.r_[r, f]], y[np.r_[r, f]])
    >>> retrained = clone(recipe).fit(X[r], y[r])
    >>> aucs = lira_membership_auc([original, retrained], recipe, X[f], y[f],
    ...                            X[h], y[h], X[r], y[r], n_shadow=8,
    ...                            random_state=0)
    >>> [round(a, 1) for a in aucs]
    [0.7, 0.5]
    """
    if not isinstance(n_shadow, Integral) or isinstance(n_shadow, bool):
        raise TypeError(f"n_shadow must be an int; got {type(n_shadow).__name__}.")
    if n_shadow < 4 or n_shadow % 2:
        raise ValueError(
            "n_shadow must be even and at least 4 (every candidate row is in "
            f"exactly half of the shadows); got {n_shadow}."
        )
    X_forget, y_forget = _check_rows(X_forget, y_forget, "forget")
    d = X_forget.shape[1]
    X_heldout, y_heldout = _check_rows(X_heldout, y_heldout, "heldout", d)
    X_retain, y_retain = _check_rows(X_retain, y_retain, "retain", d)
    models = list(model) if isinstance(model, (list, tuple)) else [model]
    for m in models:
        if not (hasattr(m, "predict_proba") and hasattr(m, "classes_")):
            raise TypeError(
                f"model must be a fitted classifier with predict_proba and "
                f"classes_; got {type(m).__name__}."
            )
    Xc = np.vstack([X_forget, X_heldout])
    yc = np.concatenate([y_forget, y_heldout])
    member = np.r_[np.ones(len(X_forget)), np.zeros(len(X_heldout))]
    rng = check_random_state(random_state)
    # Each column: a random half of the shadows holds that candidate.
    order = rng.uniform(size=(n_shadow, len(Xc))).argsort(axis=0)
    inside = order < n_shadow // 2
    seeds = child_seeds(rng, n_shadow)
    phi = np.empty((n_shadow, len(Xc)))
    for s in range(n_shadow):
        shadow = clone(estimator)
        if "random_state" in shadow.get_params():
            shadow.set_params(random_state=seeds[s])
        shadow.fit(
            np.vstack([X_retain, Xc[inside[s]]]),
            np.concatenate([y_retain, yc[inside[s]]]),
        )
        phi[s] = _logit_confidence(shadow, Xc, yc)
    half = n_shadow // 2
    mu_in = np.where(inside, phi, 0.0).sum(axis=0) / half
    mu_out = np.where(inside, 0.0, phi).sum(axis=0) / half
    resid_in = (phi - mu_in)[inside]
    resid_out = (phi - mu_out)[~inside]
    # Pooled over rows, with the degrees of freedom the per-row means used.
    dof = max(len(resid_in) - len(Xc), 1)
    sd_in = max(np.sqrt((resid_in**2).sum() / dof), 1e-6)
    sd_out = max(np.sqrt((resid_out**2).sum() / dof), 1e-6)

    def log_ratio(v):
        return (
            -0.5 * ((v - mu_in) / sd_in) ** 2
            + 0.5 * ((v - mu_out) / sd_out) ** 2
            - np.log(sd_in / sd_out)
        )

    aucs = [
        float(roc_auc_score(member, log_ratio(_logit_confidence(m, Xc, yc))))
        for m in models
    ]
    return aucs if isinstance(model, (list, tuple)) else aucs[0]
