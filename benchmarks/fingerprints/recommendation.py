"""Fingerprints of the recommendation benchmarks (see the package docstring)."""

from ._common import concat as _concat


def gcib():
    """``bench_gcib``: GCIB at its defaults and two ablations, scored as the benchmark.

    Small generated view/cart/buy data with flagged noise; a few epochs of the
    default configuration (mask, contrast, bottleneck), of ``auxiliary="all"``
    and of ``beta=0``, each scored by the package's ranking function against
    the held-out purchases.
    """
    from sklearn_ext.datasets import make_multibehavior
    from sklearn_ext.recommendation import GCIBRecommender
    from sklearn_ext.recommendation._ranking import ranking_metrics

    data = make_multibehavior(120, 90, noise_rate=0.3, random_state=0)
    out = []
    for params in ({}, {"auxiliary": "all"}, {"beta": 0.0}):
        model = GCIBRecommender(
            behaviors=data.behaviors,
            max_iter=3,
            device="cpu",
            random_state=0,
            **params,
        ).fit(data.data)
        result = ranking_metrics(
            model.user_embeddings_, model.item_embeddings_, data.test, seen=model.seen_
        )
        out += [
            result["hr"],
            result["ndcg"],
            model.user_embeddings_[:10],
            model.item_embeddings_[:10],
            model.edge_keep_prob_.data[:50],
        ]
    return _concat(*out)


FINGERPRINTS = {
    "gcib": gcib,
}
