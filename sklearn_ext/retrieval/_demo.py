"""The ``python -m sklearn_ext demo`` demo of the retrieval family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

SECONDS = {
    "CrossQCompressor": 7,
}


def demo_CrossQCompressor():
    """numpy/scipy docstring retrieval, 40 documents, 2 B/token.

    The first 40 documents of the docstring set, cut to their first 128 word
    pieces and embedded with all-MiniLM-L6-v2 (needs the ``text`` extra);
    the even-numbered queries
    train CrossQ's ranking losses, the odd-numbered ones are scored:
    known-item MRR@10 by exact MaxSim over the decoded tokens. The baseline
    is the plain scikit-learn way to a 2-byte code: a product quantiser, one
    256-centroid KMeans per half of the dimensions. (2 bytes rather than 4
    keep ``make demo`` within its minute: the 4-byte fit takes longer.)
    """
    from sklearn.cluster import KMeans

    from sklearn_ext.datasets import encode_tokens, load_docstring_retrieval
    from sklearn_ext.retrieval import CrossQCompressor, LateInteractionIndex

    n = 40
    data = load_docstring_retrieval()
    # 128 word pieces a document (the model takes 256) halve the tokens to
    # embed, compress and quantise, to keep the demo short.
    emb, ids = encode_tokens(data.documents[:n], max_length=128)
    q_emb, q_ids = encode_tokens(data.queries[:n], kind="query")
    X = np.column_stack([ids, emb])
    train, test = q_ids % 2 == 0, q_ids % 2 == 1
    model = CrossQCompressor(2, random_state=0).fit(
        X, queries=np.column_stack([q_ids[train], q_emb[train]])
    )
    Q = np.column_stack([q_ids[test], q_emb[test]])

    def mrr(index):
        qids, scores = index.scores(Q)
        top = index.doc_ids_[np.argsort(-scores, axis=1)[:, :10]]
        hit = top == qids[:, None]
        return float(np.where(hit.any(1), 1 / (hit.argmax(1) + 1), 0).mean())

    parts = np.array_split(np.arange(emb.shape[1]), 2)
    decoded = np.empty_like(emb)
    for cols in parts:
        km = KMeans(256, n_init=1, max_iter=20, random_state=0).fit(emb[:, cols])
        decoded[:, cols] = km.cluster_centers_[km.labels_]
    baseline = LateInteractionIndex().add(np.column_stack([ids, decoded]))
    return {
        "data": f"docstring retrieval, {n} documents (128 word pieces), 2 bytes/token",
        "metric": "MRR@10",
        "score": mrr(LateInteractionIndex(model).add(X)),
        "baseline": "KMeans product quantiser (2 x 256 centroids)",
        "baseline_score": mrr(baseline),
        "greater_is_better": True,
    }
