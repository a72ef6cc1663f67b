"""The ``python -m sklearn_ext demo`` demos of the unlearning family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

SECONDS = {
    "HAMUUnlearner": 2,
    "UnlearnableMLPClassifier": 3,
}


def _digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0)


def _tuned_svc():
    """The strongest plain scikit-learn classifier we found for digits.

    An RBF ``SVC`` with ``C`` and ``gamma`` chosen by 5-fold grid search;
    k-nearest neighbours, a cross-validated logistic regression and gradient
    boosting all score lower on the held-out digits.
    """
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    return GridSearchCV(SVC(), {"C": [1, 10, 100], "gamma": ["scale", 1e-3, 3e-4]})


def demo_UnlearnableMLPClassifier():
    """load_digits, 30% held out.

    Against an RBF SVC tuned by grid search (see ``_tuned_svc``).
    """
    from sklearn_ext.unlearning import UnlearnableMLPClassifier

    X, Xt, y, yt = _digits()
    return {
        "data": "load_digits, 30% held out",
        "metric": "accuracy",
        "score": UnlearnableMLPClassifier(random_state=0).fit(X, y).score(Xt, yt),
        "baseline": "SVC (RBF), C and gamma by 5-fold GridSearchCV",
        "baseline_score": _tuned_svc().fit(X, y).score(Xt, yt),
        "greater_is_better": True,
    }


def demo_HAMUUnlearner():
    """load_digits, forget every 3 of the training rows.

    Retraining from scratch without the forgotten rows is what unlearning
    approximates; the baseline retrains the strongest plain classifier for
    digits (see ``_tuned_svc``) on the rows kept.
    """
    from sklearn_ext.unlearning import HAMUUnlearner, UnlearnableMLPClassifier

    X, Xt, y, yt = _digits()
    forget, kept = y == 3, yt != 3
    u = HAMUUnlearner(
        UnlearnableMLPClassifier(random_state=0),
        target_forget_accuracy=0.0,
        max_steps=400,
        random_state=0,
    ).fit(X, y)
    u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    retrained = _tuned_svc().fit(X[~forget], y[~forget])
    return {
        "data": (
            "load_digits: forget every 3 of the training rows (forget "
            f"accuracy after unlearning {u.score(X[forget], y[forget]):.2f})"
        ),
        "metric": "test accuracy on the other digits",
        "score": u.score(Xt[kept], yt[kept]),
        "baseline": "SVC (RBF, C and gamma by 5-fold GridSearchCV) retrained "
        "without the 3s",
        "baseline_score": retrained.score(Xt[kept], yt[kept]),
        "greater_is_better": True,
    }
