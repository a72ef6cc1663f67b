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
    "GCIBRecommender": 4,
}

RANKS = (8, 16, 32, 64)
L2_REGS = (30.0, 100.0, 300.0, 1000.0)


def demo_GCIBRecommender():
    """Generated view/cart/buy data, 300 users, 30% noise.

    Leave-one-out NDCG@10 on ``make_multibehavior`` (300 users, 400 items,
    30% noise on the auxiliary behaviours), GCIB at its defaults. The
    baseline is the stronger of two plain closed forms, each tuned as a
    practitioner would on a validation purchase held out of each user's
    training purchases: EASE on the merged matrix (every behaviour as one
    interaction; its ridge penalty among 30 to 1000) and PureSVD, a
    ``TruncatedSVD`` of the whole user x (items x behaviours) matrix whose
    reconstruction of the buy block ranks the items (its rank among 8 to
    64). The test purchases are never looked at to choose.
    """
    from sklearn_ext.datasets import make_multibehavior
    from sklearn_ext.recommendation import GCIBRecommender

    data = make_multibehavior(300, 400, noise_rate=0.3, random_state=0)
    model = GCIBRecommender(behaviors=data.behaviors, random_state=0).fit(data.data)
    train, held = _validation_split(data.data, data.n_items)
    candidates = [("EASE", lam) for lam in L2_REGS] + [("PureSVD", r) for r in RANKS]
    valid = {c: _ndcg(train, data.n_items, held, *c) for c in candidates}
    name, value = max(valid, key=valid.get)
    knob = "ridge penalty" if name == "EASE" else "rank"
    return {
        "data": "make_multibehavior(300 users, 400 items, noise 0.3)",
        "metric": "leave-one-out NDCG@10",
        "score": model.score(data.test),
        "baseline": f"{name} ({knob} {value:g}), the best of EASE on the merged "
        "matrix and PureSVD of the whole matrix, each tuned on validation "
        "purchases",
        "baseline_score": _ndcg(data.data, data.n_items, data.test, name, value),
        "greater_is_better": True,
    }


def _ndcg(matrix, n_items, test, name, value):
    """NDCG@10 on ``test`` of EASE (merged) or PureSVD fitted on ``matrix``."""
    from sklearn.decomposition import TruncatedSVD

    from sklearn_ext.recommendation._ease import ease_weights
    from sklearn_ext.recommendation._ranking import ranking_metrics

    matrix = sp.csr_matrix(matrix)
    buys = matrix[:, -n_items:]
    if name == "EASE":
        merged = matrix[:, :n_items]
        for b in range(1, matrix.shape[1] // n_items):
            merged = merged + matrix[:, b * n_items : (b + 1) * n_items]
        merged = sp.csr_matrix(merged)
        merged.data[:] = 1.0
        users, items = merged.toarray(), ease_weights(merged, value).T
    else:
        svd = TruncatedSVD(int(value), random_state=0).fit(matrix)
        users, items = svd.transform(matrix), svd.components_[:, -n_items:].T
    return ranking_metrics(users, items, test, seen=buys)["ndcg"]


def _validation_split(matrix, n_items):
    """``matrix`` with one buy of each user with two or more moved out.

    The buy block is the last ``n_items`` columns; returns the training
    matrix and the held-out buys.
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
    return train, held
