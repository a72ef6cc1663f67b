"""The ``python -m sklearn_ext demo`` demo of the recommendation family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.sparse as sp

SECONDS = {
    "GCIBRecommender": 7,
}

RANKS = (8, 16, 32, 64)


def demo_GCIBRecommender():
    """Generated view/cart/buy data, 500 users, 30% noise.

    Leave-one-out NDCG@10 on ``make_multibehavior`` (500 users, 400 items,
    30% noise on the auxiliary behaviours). The baseline is PureSVD in plain
    scikit-learn: a ``TruncatedSVD`` of the whole user x (items x behaviours)
    matrix, whose reconstruction of the buy block ranks the items; its rank
    (8 to 64) is chosen as a practitioner would, on a validation purchase
    held out of each user's training purchases.
    """
    from sklearn_ext.datasets import make_multibehavior
    from sklearn_ext.recommendation import GCIBRecommender

    data = make_multibehavior(500, 400, noise_rate=0.3, random_state=0)
    model = GCIBRecommender(behaviors=data.behaviors, random_state=0).fit(data.data)
    rank = _validated_rank(data.data, data.n_items)
    return {
        "data": "make_multibehavior(500 users, 400 items, noise 0.3)",
        "metric": "leave-one-out NDCG@10",
        "score": model.score(data.test),
        "baseline": f"TruncatedSVD of the whole matrix (PureSVD), rank {rank} "
        f"of {RANKS} chosen on validation purchases",
        "baseline_score": _pure_svd_ndcg(data.data, data.n_items, data.test, rank),
        "greater_is_better": True,
    }


def _pure_svd_ndcg(matrix, n_items, test, rank):
    """NDCG@10 on ``test`` of a rank-``rank`` PureSVD of ``matrix``."""
    from sklearn.decomposition import TruncatedSVD

    from sklearn_ext.recommendation._ranking import ranking_metrics

    svd = TruncatedSVD(rank, random_state=0).fit(matrix)
    users = svd.transform(matrix)
    items = svd.components_[:, -n_items:].T
    return ranking_metrics(users, items, test, seen=matrix[:, -n_items:])["ndcg"]


def _validated_rank(matrix, n_items):
    """The rank of ``RANKS`` whose PureSVD best ranks a held-out training buy.

    One purchase of each user with at least two is moved from the buy block
    (the last ``n_items`` columns) to a validation set; the test purchases
    are never looked at.
    """
    matrix = sp.csr_matrix(matrix, copy=True)
    buys = matrix[:, -n_items:].tocsr()
    rng = np.random.default_rng(0)
    rows, cols = [], []
    for user in range(buys.shape[0]):
        items = buys.indices[buys.indptr[user] : buys.indptr[user + 1]]
        if len(items) >= 2:
            rows.append(user)
            cols.append(rng.choice(items))
    held = sp.csr_matrix(
        (np.ones(len(rows)), (rows, cols)), shape=buys.shape, dtype=matrix.dtype
    )
    offset = matrix.shape[1] - n_items
    train = matrix.tolil()
    for user, item in zip(rows, cols):
        train[user, offset + item] = 0
    train = train.tocsr()
    train.eliminate_zeros()
    scores = {r: _pure_svd_ndcg(train, n_items, held, r) for r in RANKS}
    return max(scores, key=scores.get)
