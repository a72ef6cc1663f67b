"""Fingerprints of the unlearning family's benchmarks (see the package docstring)."""

from ._common import concat as _concat

_HISTORY = ("forget_loss", "retain_loss", "batch_forget_rise", "required_rise")


def hamu():
    """``bench_hamu``: HAMU and its baselines on the MLP, the convex model, the attacks.

    A subset of scikit-learn's digits: the benchmark's MLP (one hidden layer
    of 64, fewer epochs) fitted through ``HAMUUnlearner``, then a random
    tenth forgotten by HAMU (verified steps, and first order alone),
    gradient ascent and NegGrad+ at a matched forget accuracy; a class
    forgotten from logistic regression with full batches (the guarantee and
    hardness parts); ``forget_retain_similarity``, the loss-threshold attack
    and LiRA with four shadows.
    """
    import copy

    import numpy as np
    from sklearn.datasets import load_digits

    from sklearn_ext.unlearning import (
        HAMUUnlearner,
        UnlearnableMLPClassifier,
        forget_retain_similarity,
        lira_membership_auc,
        membership_inference_auc,
    )

    X, y = load_digits(return_X_y=True)
    X, y, Xt, yt = X[:400], y[:400], X[400:500], y[400:500]
    forget = np.random.default_rng(0).random(len(y)) < 0.1
    base = UnlearnableMLPClassifier((64,), max_iter=30, random_state=0)
    fitted = HAMUUnlearner(base, max_steps=400, batch_size=256, random_state=0)
    fitted.fit(X, y)
    out = [fitted.predict_proba(Xt)]
    for method, step, retries in (
        ("hamu", 0.2, 3),
        ("hamu", 0.2, 0),
        ("gradient_ascent", 0.05, 3),
        ("neggrad_plus", 0.05, 3),
    ):
        u = copy.deepcopy(fitted).set_params(
            method=method,
            step_size=step,
            max_steps=15,
            max_step_retries=retries,
            target_forget_accuracy=0.9,
            stop_on_infeasible=False,
        )
        u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
        out += [
            u.predict_proba(Xt),
            *(u.history_.get(key, []) for key in _HISTORY),
            membership_inference_auc(u, X[forget], y[forget], Xt, yt),
        ]
    cls = y == y[0]
    convex = HAMUUnlearner(
        UnlearnableMLPClassifier((), random_state=0),
        step_size=0.05,
        max_steps=10,
        batch_size=10_000,
        stop_on_infeasible=False,
        random_state=0,
    ).fit(X, y)
    out.append(
        forget_retain_similarity(convex.estimator_, X[cls], y[cls], X[~cls], y[~cls])
    )
    convex.unlearn(X[cls], y[cls], X[~cls], y[~cls])
    out += [convex.cosine_, convex.hardness_]
    out += [convex.history_.get(key, []) for key in _HISTORY]
    out.append(
        lira_membership_auc(
            [fitted],
            UnlearnableMLPClassifier((16,), max_iter=10, random_state=0),
            X[forget],
            y[forget],
            Xt[:40],
            yt[:40],
            X[~forget],
            y[~forget],
            n_shadow=4,
            random_state=0,
        )
    )
    return _concat(*out)


FINGERPRINTS = {"hamu": hamu}
