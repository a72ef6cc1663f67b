"""Fingerprints of the network family's benchmarks (see the package docstring)."""

import numpy as np

from ._common import concat as _concat


def tginee():
    """T-GINEE under each working covariance, logit and identity links.

    A small correlated network with scattered unobserved entries: the
    benchmark's paths (Bernoulli stage, GEE rounds with the masked inverse,
    the factors' GEE step, the sandwich), on dyads in row-major order so that
    the data do not depend on ``tensor_to_dyads``'s ordering.
    """
    from sklearn_ext.datasets import make_multilayer_network
    from sklearn_ext.network import TGINEE, tensor_to_dyads

    out = []
    for link in ("logit", "identity"):
        A, C, _ = make_multilayer_network(
            30, 3, 2, link=link, layer_correlation=0.6, random_state=0
        )
        X, Y = tensor_to_dyads(A, C)
        order = np.lexsort((X[:, 1], X[:, 0]))
        X, Y = X[order], Y[order].copy()
        Y[np.random.RandomState(0).rand(*Y.shape) < 0.2] = np.nan
        keep = ~np.isnan(Y).all(1)
        X, Y = X[keep], Y[keep]
        covariances = ("independence", "exchangeable", "unstructured")
        for cov in covariances if link == "logit" else ("exchangeable",):
            model = TGINEE(
                2,
                dyad_columns=(0, 1),
                link=link,
                working_covariance=cov,
                random_state=0,
            ).fit(X, Y)
            out += [model.predict(X[:40]), model.coef_, model.bse_]
    return _concat(*out)


def muhl():
    """MuHL and its two ablations on a small cohort; the connectome layout."""
    from sklearn_ext.datasets import load_mice_connectomes, make_brain_cohort
    from sklearn_ext.network import ConnectomeVectorizer, MuHLClassifier

    data = make_brain_cohort(40, n_nodes=24, n_visits=2, random_state=0)
    out = [data.data[:4], data.target]
    for params in ({}, {"hypergraph": "knn"}, {"hypergraph": "none"}):
        model = MuHLClassifier(
            n_node_features=1, max_iter=4, random_state=0, **params
        ).fit(data.data, data.target)
        out += [model.predict_proba(data.data[:20]), model.node_importance_]
    graphs, y = load_mice_connectomes(return_X_y=True)
    rows = ConnectomeVectorizer().fit_transform(graphs[:2])
    out += [rows[:, :200], rows.sum(1), np.unique(y, return_inverse=True)[1]]
    return _concat(*out)


FINGERPRINTS = {
    "tginee": tginee,
    "muhl": muhl,
}
