"""The ``python -m sklearn_ext demo`` demo of the multi-label family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

SECONDS = {
    "NBCGClassifier": 4,
}


def demo_NBCGClassifier():
    """Long-tailed labels with a shortcut, shifted test split.

    The baseline is a strong plain scikit-learn model for this data:
    one-vs-rest L1 logistic regression with ``class_weight="balanced"``
    (liblinear, ``C=0.3``). Each label's signal lives in 5 of the 200
    features, which an L1 model finds and NBCG does not, so the baseline
    wins here (the user guide's benchmark section has the figures).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier

    from sklearn_ext.datasets import make_longtail_multilabel
    from sklearn_ext.multilabel import NBCGClassifier

    X, y, X_test, y_test, info = make_longtail_multilabel(
        n_samples=2500,
        n_features=200,
        signal=2.0,
        n_test=4000,
        return_structure=True,
        random_state=0,
    )
    tail = info.tail

    def tail_f1(model):
        with warnings.catch_warnings():
            # By design of the generator, many rows have no label.
            warnings.filterwarnings("ignore", "[0-9]+ of [0-9]+ rows of y have")
            pred = model.fit(X, y).predict(X_test)
        return f1_score(
            y_test[:, tail], pred[:, tail], average="macro", zero_division=0
        )

    baseline = OneVsRestClassifier(
        LogisticRegression(
            C=0.3, l1_ratio=1.0, solver="liblinear", class_weight="balanced"
        )
    )
    return {
        "data": "make_longtail_multilabel, shifted test split",
        "metric": "tail-label macro-F1",
        "score": tail_f1(NBCGClassifier(random_state=0)),
        "baseline": "one-vs-rest L1 logistic regression, class_weight='balanced'",
        "baseline_score": tail_f1(baseline),
        "greater_is_better": True,
    }
