"""Fingerprint of the torch backend's benchmark (see the package docstring)."""

import sys
from pathlib import Path

from ._common import concat


def backend():
    """The reference estimator of ``tests/toy_estimators.py`` on a small fit."""
    from sklearn.datasets import make_regression

    import sklearn_ext

    tests = str(Path(sklearn_ext.__file__).resolve().parents[1] / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from toy_estimators import ToyTorchRegressor

    X, y = make_regression(300, 8, noise=1.0, random_state=0)
    model = ToyTorchRegressor(
        16, max_iter=5, tol=0.0, n_iter_no_change=10, device="cpu", random_state=0
    ).fit(X, y)
    return concat(model.predict(X[:50]), model.n_iter_)


FINGERPRINTS = {"backend": backend}
