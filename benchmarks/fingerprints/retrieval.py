"""Fingerprints of the retrieval family's benchmarks (see the package docstring)."""

from ._common import concat as _concat


def crossq():
    """``bench_crossq``: CrossQ at its defaults (4 bytes per token).

    Random unit token embeddings of 40 documents with training queries, as
    the benchmark passes them (document id in column 0; ``queries=`` with the
    query id in column 0); the stored codes (``encode``), the decoded tokens
    (``decode``), and the exact and compressed MaxSim scores of held-out
    queries, computed here as the benchmark's own scorer computes them (the
    quality part scores every method with it, not with an index); and the
    benchmark's data: the size of the docstring set and the token embeddings
    ``encode_tokens`` gives two of its documents and one query.
    """
    import numpy as np

    from sklearn_ext.datasets import encode_tokens, load_docstring_retrieval
    from sklearn_ext.retrieval import CrossQCompressor

    rng = np.random.RandomState(0)
    dim, n_docs = 24, 40
    doc_ids = np.repeat(np.arange(n_docs), rng.randint(8, 20, size=n_docs))
    centres = rng.normal(size=(n_docs, dim))
    tokens = centres[doc_ids] + 0.7 * rng.normal(size=(len(doc_ids), dim))
    tokens /= np.linalg.norm(tokens, axis=1, keepdims=True)
    X = np.column_stack([doc_ids, tokens])

    def queries(ids):
        q_ids = np.repeat(ids, 4)
        q = centres[q_ids] + 0.9 * rng.normal(size=(len(q_ids), dim))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        return np.column_stack([q_ids, q])

    def maxsim(doc_tokens, Q):
        sims = Q[:, 1:].astype(np.float32) @ doc_tokens.astype(np.float32).T
        best = np.stack([sims[:, doc_ids == d].max(1) for d in range(n_docs)], 1)
        return np.stack([best[Q[:, 0] == q].sum(0) for q in np.unique(Q[:, 0])])

    Q_train, Q_eval = queries(np.arange(0, n_docs, 2)), queries(np.arange(1, 21, 2))
    out = []
    for params in ({}, {"ranking_loss": None}):
        cq = CrossQCompressor(4, random_state=0, device="cpu", **params).fit(
            X, queries=Q_train
        )
        codes = cq.encode(X)
        decoded = cq.decode(codes)
        out += [codes[:40], decoded[:20], maxsim(decoded, Q_eval)]
        out.append(cq.index_bytes(len(X), n_docs))
    out.append(maxsim(tokens, Q_eval))
    # The benchmark's data: the docstring set and its token encoder.
    data = load_docstring_retrieval()
    docs, doc_ids = encode_tokens(data.documents[:2], kind="document")
    query, _ = encode_tokens(data.queries[:1], kind="query")
    out += [len(data.documents), len(data.queries), docs[:, :8], doc_ids, query[:, :8]]
    return _concat(*out)


FINGERPRINTS = {
    "crossq": crossq,
}
