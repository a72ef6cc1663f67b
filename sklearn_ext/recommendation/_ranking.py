"""Full-ranking evaluation of recommenders: top-k lists, HR@k and NDCG@k.

One implementation, used by :meth:`GCIBRecommender.score`, ``recommend`` and
the benchmark's peers alike. Scores are computed for a block of users at a
time (``user_embeddings[block] @ item_embeddings.T``), so memory stays at one
block of ``batch_size`` users by the number of items, never a dense users x
items matrix.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.sparse as sp

__all__ = ["ranking_metrics", "top_k_items"]


def _mask_rows(scores, mask_rows):
    """Set ``scores[r, j] = -inf`` where the csr block ``mask_rows`` has an entry."""
    coo = mask_rows.tocoo()
    scores[coo.row, coo.col] = -np.inf
    return scores


def top_k_items(scores, k):
    """Indices of the ``k`` largest scores of each row, best first.

    Within the top k, equal scores are ordered by item index; which of several
    items tied with the k-th score enters the list is decided by numpy's
    ``argpartition`` (deterministic for given scores). Items whose score is
    ``-inf`` (excluded ones) come last.

    Parameters
    ----------
    scores : ndarray of shape (n_rows, n_items)
    k : int

    Returns
    -------
    ndarray of shape (n_rows, min(k, n_items))
    """
    n_items = scores.shape[1]
    k = min(k, n_items)
    if k == n_items:
        part = np.tile(np.arange(n_items), (scores.shape[0], 1))
    else:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -vals), axis=1)
    return np.take_along_axis(part, order, axis=1)


def ranking_metrics(
    user_embeddings,
    item_embeddings,
    test,
    *,
    seen=None,
    k=10,
    batch_size=1024,
):
    """HR@k and NDCG@k of dot-product scores on held-out interactions.

    Full ranking: every item is a candidate except the user's ``seen`` items
    that are not held out (the training interactions, "exclude seen"). Only
    users with at least one held-out item count. With one held-out item per
    user (leave-one-out), NDCG@k is ``1 / log2(rank + 2)`` when the item ranks
    in the top k (rank 0 is first) and 0 otherwise; with several, it is the
    DCG of the top k over the ideal DCG, with binary relevance.

    Parameters
    ----------
    user_embeddings : ndarray of shape (n_users, d)
    item_embeddings : ndarray of shape (n_items, d)
    test : sparse matrix of shape (n_users, n_items)
        Held-out interactions (entries > 0).
    seen : sparse matrix of shape (n_users, n_items), default=None
        Items excluded from each user's ranking (unless held out).
    k : int, default=10
    batch_size : int, default=1024
        Users scored at once.

    Returns
    -------
    dict
        ``{"hr": float, "ndcg": float, "n_users": int, "per_user_ndcg": ndarray,
        "per_user_hr": ndarray, "users": ndarray}`` (the per-user arrays cover
        the evaluated users, in order).
    """
    test = sp.csr_matrix(test)
    test.eliminate_zeros()
    users = np.flatnonzero(np.diff(test.indptr) > 0)
    hits, gains = [], []
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    item_t = np.ascontiguousarray(np.asarray(item_embeddings, dtype=np.float64).T)
    user_embeddings = np.asarray(user_embeddings, dtype=np.float64)
    for start in range(0, users.size, batch_size):
        block = users[start : start + batch_size]
        scores = user_embeddings[block] @ item_t
        held = test[block]
        if seen is not None:
            excluded = sp.csr_matrix(seen)[block].astype(bool)
            excluded = excluded > held.astype(bool)
            scores = _mask_rows(scores, excluded)
        top = top_k_items(scores, k)
        relevant = np.asarray(held[np.arange(len(block))[:, None], top].todense()) > 0
        n_rel = np.diff(held.indptr)
        dcg = relevant @ discounts[: top.shape[1]]
        ideal = np.cumsum(discounts)[np.minimum(n_rel, k) - 1]
        hits.append(relevant.any(axis=1).astype(float))
        gains.append(dcg / ideal)
    per_hr = np.concatenate(hits) if hits else np.zeros(0)
    per_ndcg = np.concatenate(gains) if gains else np.zeros(0)
    return {
        "hr": float(per_hr.mean()) if per_hr.size else float("nan"),
        "ndcg": float(per_ndcg.mean()) if per_ndcg.size else float("nan"),
        "n_users": int(users.size),
        "per_user_hr": per_hr,
        "per_user_ndcg": per_ndcg,
        "users": users,
    }
