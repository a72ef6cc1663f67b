"""Fingerprints of the retrieval family's benchmarks (see the package docstring)."""

from ._common import concat as _concat


def crossq():
    """``bench_crossq``: CrossQ at its defaults (4 bytes per token) and the index.

    Random unit token embeddings of 40 documents with training queries, as
    the benchmark passes them (document id in column 0; ``queries=`` with the
    query id in column 0); the codes, the decoded tokens, and the exact and
    compressed MaxSim scores of held-out queries by ``LateInteractionIndex``;
    and the benchmark's data: the size of the docstring set and the token
    embeddings ``encode_tokens`` gives two of its documents and one query.
    """
    import numpy as np

    from sklearn_ext.datasets import encode_tokens, load_docstring_retrieval
    from sklearn_ext.retrieval import CrossQCompressor, LateInteractionIndex

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

    Q_train, Q_eval = queries(np.arange(0, n_docs, 2)), queries(np.arange(1, 21, 2))
    out = []
    for params in ({}, {"ranking_loss": None}):
        cq = CrossQCompressor(4, random_state=0, device="cpu", **params).fit(
            X, queries=Q_train
        )
        codes = cq.transform(X)
        index = LateInteractionIndex(cq).add(X)
        _, scores = index.scores(Q_eval)
        out += [codes[:40], cq.inverse_transform(codes[:20]), scores]
        out.append(index.stored_bytes())
    _, exact = LateInteractionIndex().add(X).scores(Q_eval)
    out.append(exact)
    # The benchmark's data: the docstring set and its token encoder.
    data = load_docstring_retrieval()
    docs, doc_ids = encode_tokens(data.documents[:2], kind="document")
    query, _ = encode_tokens(data.queries[:1], kind="query")
    out += [len(data.documents), len(data.queries), docs[:, :8], doc_ids, query[:, :8]]
    return _concat(*out)


FINGERPRINTS = {
    "crossq": crossq,
}
