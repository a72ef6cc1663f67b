"""The ``python -m sklearn_ext demo`` demos of the network family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np

SECONDS = {
    "ConnectomeVectorizer": 1,
    "MuHLClassifier": 5,
    "TGINEE": 4,
}


def demo_ConnectomeVectorizer():
    """32 mouse connectomes (4 genotypes), log1p weights.

    Genotype from the vectorised matrices, against the same logistic
    regression on the flattened full matrices.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    from sklearn_ext.datasets import load_mice_connectomes
    from sklearn_ext.network import ConnectomeVectorizer

    graphs, y = load_mice_connectomes(return_X_y=True)
    graphs = np.log1p(graphs)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    ours = make_pipeline(
        ConnectomeVectorizer(), StandardScaler(), LogisticRegression(max_iter=2000)
    )
    flat = make_pipeline(
        FunctionTransformer(lambda g: g.reshape(len(g), -1)),
        StandardScaler(),
        LogisticRegression(max_iter=2000),
    )
    return {
        "data": "load_mice_connectomes (32 mice, 4 genotypes, log1p weights)",
        "metric": "4-fold CV accuracy, logistic regression",
        "score": cross_val_score(ours, graphs, y, cv=cv).mean(),
        "baseline": "the same on the flattened full matrices",
        "baseline_score": cross_val_score(flat, graphs, y, cv=cv).mean(),
        "greater_is_better": True,
    }


def demo_MuHLClassifier():
    """Cohorts from mouse connectomes with a higher-order effect.

    300 subjects of 60 regions, 12 signal frames per region; only patients
    have frames where three far-apart regions activate together (each
    region, and each pair, is as active in controls). The baseline is
    logistic regression on the standardised rows with ``C`` chosen by
    cross-validation (on node signals alone, or on functional connectivity,
    it sits at chance too: see the user guide).
    """
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import GroupShuffleSplit
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ext.datasets import make_brain_cohort
    from sklearn_ext.network import MuHLClassifier

    data = make_brain_cohort(300, n_nodes=60, random_state=0)
    train, test = next(
        GroupShuffleSplit(1, test_size=0.3, random_state=0).split(
            data.data, data.target, data.groups
        )
    )
    X, y = data.data, data.target
    model = MuHLClassifier(n_node_features=data.n_node_features, random_state=0)
    model.fit(X[train], y[train])
    base = make_pipeline(StandardScaler(), LogisticRegressionCV(max_iter=2000))
    with warnings.catch_warnings():
        # scikit-learn >= 1.8 announces new LogisticRegressionCV defaults;
        # the demo's baseline is the same either way.
        warnings.simplefilter("ignore", FutureWarning)
        base.fit(X[train], y[train])
    return {
        "data": "make_brain_cohort(300 subjects, 60 regions, joint co-activation)",
        "metric": "held-out accuracy",
        "score": model.score(X[test], y[test]),
        "baseline": "StandardScaler + LogisticRegressionCV on the rows",
        "baseline_score": base.score(X[test], y[test]),
        "greater_is_better": True,
    }


def demo_TGINEE():
    """4-layer network with correlated layers, held-out links.

    The baseline is the two-stage version of the model in plain scikit-learn:
    a rank-2 ``TruncatedSVD`` of the centred training adjacency gives each
    dyad its two spectral link scores ``(u_i s_r v_jr)_r``, and a
    ``LogisticRegression`` per layer fits the edges on them and the
    covariates. T-GINEE estimates the factors and the layers jointly, with
    the link and the layers' correlation.
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    from sklearn_ext.datasets import make_multilayer_network
    from sklearn_ext.network import TGINEE, tensor_to_dyads

    A, C, _ = make_multilayer_network(200, 4, 2, layer_correlation=0.6, random_state=0)
    X, y = tensor_to_dyads(A, C)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=0)
    n_nodes, n_layers = A.shape[1], A.shape[0]

    def auc(P):
        return float(
            np.mean([roc_auc_score(y_te[:, k], P[:, k]) for k in range(n_layers)])
        )

    model = TGINEE(2, dyad_columns=(0, 1), random_state=0).fit(X_tr, y_tr)
    ours = auc(model.predict(X_te))

    i, j = X_tr[:, 0].astype(int), X_tr[:, 1].astype(int)
    adjacency = np.zeros((n_nodes, n_nodes))
    adjacency[i, j] = adjacency[j, i] = y_tr.mean(1) - y_tr.mean()
    svd = TruncatedSVD(2, random_state=0).fit(adjacency)
    left, right = svd.transform(adjacency), svd.components_.T

    def features(X):
        a, b = X[:, 0].astype(int), X[:, 1].astype(int)
        return np.hstack([X[:, 2:], left[a] * right[b]])

    F_tr, F_te = features(X_tr), features(X_te)
    P = np.column_stack(
        [
            LogisticRegression().fit(F_tr, y_tr[:, k]).predict_proba(F_te)[:, 1]
            for k in range(n_layers)
        ]
    )
    return {
        "data": "make_multilayer_network(200 nodes, 4 layers, rho=0.6)",
        "metric": "held-out link AUC",
        "score": ours,
        "baseline": (
            "LogisticRegression per layer on the covariates and rank-2 "
            "TruncatedSVD link scores of the training adjacency"
        ),
        "baseline_score": auc(P),
        "greater_is_better": True,
    }
