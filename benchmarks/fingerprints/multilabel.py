"""Fingerprints of the multilabel family's benchmarks (see the package docstring)."""

import numpy as np

from ._common import concat as _concat


def nbcg():
    """NBCG and its ablations on small long-tailed data; the threshold tuning.

    The benchmark's defaults (threshold ``"auto"``: the iterative split,
    early stopping and per-label F1 thresholds) for a few epochs, with the
    ablations ``mask="none"``, ``coalitions="random"`` and ``objective="sum"``;
    the split and thresholds its peers are tuned with; the BibTeX loader.
    """
    from sklearn_ext.datasets import load_bibtex, make_longtail_multilabel
    from sklearn_ext.multilabel import NBCGClassifier, f1_thresholds
    from sklearn_ext.multilabel._thresholds import validation_split

    X, Y, X_test, Y_test = make_longtail_multilabel(
        600, n_features=40, n_labels=12, signal=2.0, n_test=100, random_state=0
    )
    out = [X[:2], X.sum(0), Y.sum(0), Y_test.sum(0)]
    for params in (
        {},
        {"mask": "none"},
        {"coalitions": "random"},
        {"objective": "sum"},
    ):
        model = NBCGClassifier(max_iter=4, random_state=0, **params).fit(X, Y)
        proba = model.predict_proba(X_test)
        out += [proba[:5], proba.sum(0), model.thresholds_, model.label_graph_]
    train, valid = validation_split(Y, 0.2, stratify="iterative", random_state=0)
    proba = np.random.RandomState(0).rand(len(valid), Y.shape[1])
    out += [np.sort(valid), f1_thresholds(Y[valid], proba)]
    X_bib, Y_bib = load_bibtex(subset="test", return_X_y=True)
    rows = np.asarray(X_bib.sum(1)).ravel()
    out += [rows[:50], rows.sum(), np.asarray(Y_bib.sum(0)).ravel()]
    return _concat(*out)


FINGERPRINTS = {
    "nbcg": nbcg,
}
