"""Fingerprints of the transfer family's benchmarks (see the package docstring)."""

from ._common import concat as _concat


def theseus():
    """``bench_theseus``: every alignment, on torch and on scikit-learn MLPs.

    Two small MLPs of the benchmark's kind (``UnlearnableMLPClassifier``,
    hidden 16-16 and 24-24, few epochs) trained on a subset of digits, the
    narrow one fine-tuned on noisy digits; its task vector moved by each
    ``align`` of the benchmark (and ``whiten=0.5``), the maps and the moved
    model's probabilities; the same with scikit-learn ``MLPClassifier``\\ s
    (the breast-cancer part's path).
    """
    import copy
    import warnings

    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    from sklearn_ext.transfer import TaskVectorTransporter, task_vector
    from sklearn_ext.unlearning import UnlearnableMLPClassifier

    X, y = load_digits(return_X_y=True)
    X, y = X[:300], y[:300]
    S = X + np.random.default_rng(0).normal(0.0, 4.0, X.shape)
    source = UnlearnableMLPClassifier((16, 16), max_iter=20, random_state=0)
    target = UnlearnableMLPClassifier((24, 24), max_iter=20, random_state=1)
    source.fit(X, y)
    target.fit(X, y)
    tuned = copy.deepcopy(source).set_params(warm_start=True, max_iter=5).fit(S, y)
    tau = task_vector(tuned, source)
    out = []
    for params in (
        {},
        {"whiten": 0.5},
        {"align": "lstsq", "ridge": 0.1},
        {"align": "hungarian"},
        {"align": "truncate"},
        {"align": "random"},
    ):
        tr = TaskVectorTransporter(alpha=1.5, random_state=0, **params)
        update = tr.fit(S[:64], source_base=source, target_base=target).transform(tau)
        out += [
            *(np.ravel(m)[::7] for m in tr.maps_),
            tr.apply(target, update).predict_proba(S[:20]),
        ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        small = MLPClassifier((8, 8), max_iter=30, random_state=0).fit(X, y)
        wide = MLPClassifier((12, 12), max_iter=30, random_state=1).fit(X, y)
        small_ft = copy.deepcopy(small)
        for _ in range(3):
            small_ft.partial_fit(S, y)
    tr = TaskVectorTransporter().fit(S[:64], source_base=small, target_base=wide)
    moved = tr.apply(wide, tr.transform(task_vector(small_ft, small)))
    out += [*(np.ravel(m)[::7] for m in tr.maps_), moved.predict_proba(S[:20])]
    return _concat(*out)


FINGERPRINTS = {"theseus": theseus}
