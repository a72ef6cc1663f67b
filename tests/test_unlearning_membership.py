"""Membership-inference audits: LiRA with shadow models, the loss threshold."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits

from sklearn_ext.unlearning import (
    UnlearnableMLPClassifier,
    lira_membership_auc,
    membership_inference_auc,
)


@pytest.fixture(scope="module")
def digits():
    return load_digits(return_X_y=True)


def _split(n, seed):
    rows = np.random.default_rng(seed).permutation(n)
    return rows[:100], rows[100:200], rows[200:400]  # forget, held out, retain


def _recipe(seed):
    # Small data, no weight decay: a network that memorises its rows.
    return UnlearnableMLPClassifier(
        (64,), alpha=0.0, max_iter=100, device="cpu", random_state=seed
    )


def test_lira_separates_members_and_not_a_model_that_never_saw_them(digits):
    X, y = digits
    aucs = []
    for seed in range(3):
        f, h, r = _split(len(y), seed)
        recipe = _recipe(seed)
        original = clone(recipe).fit(X[np.r_[r, f]], y[np.r_[r, f]])
        retrained = clone(recipe).fit(X[r], y[r])
        aucs.append(
            lira_membership_auc(
                [original, retrained],
                recipe,
                X[f],
                y[f],
                X[h],
                y[h],
                X[r],
                y[r],
                n_shadow=8,
                random_state=seed,
            )
        )
    aucs = np.array(aucs)
    # Trained on the forget rows: clearly told apart from held-out rows.
    assert aucs[:, 0].min() > 0.62 and aucs[:, 0].mean() > 0.65
    # Never trained on them: chance (0.5 up to the noise of 100 + 100 rows).
    assert abs(aucs[:, 1].mean() - 0.5) < 0.07
    # The loss threshold, on the same rows, has less power than LiRA.
    f, h, r = _split(len(y), 0)
    original = clone(_recipe(0)).fit(X[np.r_[r, f]], y[np.r_[r, f]])
    weak = membership_inference_auc(original, X[f], y[f], X[h], y[h])
    assert 0.5 < weak < aucs[0, 0]


def test_lira_is_reproducible(digits):
    X, y = digits
    f, h, r = _split(len(y), 0)
    recipe = _recipe(0)
    model = clone(recipe).fit(X[np.r_[r, f]], y[np.r_[r, f]])
    args = (model, recipe, X[f], y[f], X[h], y[h], X[r], y[r])
    first = lira_membership_auc(*args, n_shadow=4, random_state=3)
    assert lira_membership_auc(*args, n_shadow=4, random_state=3) == first


@pytest.mark.parametrize(
    "change, error, match",
    [
        ({"n_shadow": 5}, ValueError, "even and at least 4"),
        ({"n_shadow": 2}, ValueError, "even and at least 4"),
        ({"n_shadow": 4.0}, TypeError, "n_shadow must be an int"),
        ({"X_heldout": np.ones((3, 10))}, ValueError, "X_heldout has 10 features"),
        ({"y_retain": np.zeros(3)}, ValueError, "rows but y_retain has 3 labels"),
        ({"model": "not a model"}, TypeError, "fitted classifier"),
    ],
)
def test_lira_bad_input_is_named(digits, change, error, match):
    X, y = digits
    recipe = _recipe(0)
    model = clone(recipe).set_params(max_iter=2).fit(X[:50], y[:50])
    args = {
        "model": model,
        "estimator": recipe,
        "X_forget": X[:20],
        "y_forget": y[:20],
        "X_heldout": X[50:70],
        "y_heldout": y[50:70],
        "X_retain": X[20:50],
        "y_retain": y[20:50],
        "n_shadow": 4,
    }
    args.update(change)
    if "X_heldout" in change:
        args["y_heldout"] = np.zeros(3)
    with pytest.raises(error, match=match):
        lira_membership_auc(**args)
