"""LateInteractionIndex: candidate search, amortised add, persistence, bad input."""

import pickle

import numpy as np
import pytest

import sklearn_ext.retrieval._late_interaction as li
from sklearn_ext.retrieval import CrossQCompressor, LateInteractionIndex

_CUDA = __import__("torch").cuda.is_available()


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _planted(n_docs=2000, dim=32, seed=0):
    """Documents of 20-40 tokens around their topic's words (40 docs a topic)."""
    rng = np.random.default_rng(seed)
    n_topics = n_docs // 40
    words = _unit(
        _unit(rng.normal(size=(n_topics, 1, dim)))
        + 0.9 * _unit(rng.normal(size=(n_topics, 24, dim)))
    )
    common = _unit(rng.normal(size=(64, dim)))
    lengths = rng.integers(20, 41, size=n_docs)
    topic = rng.integers(n_topics, size=n_docs)
    doc_of = np.repeat(np.arange(n_docs), lengths)
    n = len(doc_of)
    base = np.where(
        (rng.random(n) < 0.3)[:, None],
        common[rng.integers(64, size=n)],
        words[topic[doc_of], rng.integers(24, size=n)],
    )
    tokens = _unit(base + 0.35 / np.sqrt(dim) * rng.normal(size=(n, dim)))
    return doc_of, tokens.astype(np.float32)


def _queries(doc_of, tokens, n_queries=40, n_tok=12, seed=1):
    """Noisy copies of tokens of one document per query (query id in column 0)."""
    rng = np.random.default_rng(seed)
    rows, qid = [], []
    for q, d in enumerate(rng.choice(doc_of.max() + 1, n_queries, replace=False)):
        own = tokens[doc_of == d]
        pick = own[rng.choice(len(own), n_tok, replace=False)]
        rows.append(
            _unit(pick + 0.5 / np.sqrt(tokens.shape[1]) * rng.normal(size=pick.shape))
        )
        qid += [q] * n_tok
    return np.column_stack([qid, np.concatenate(rows)])


@pytest.fixture(scope="module")
def planted():
    doc_of, tokens = _planted()
    X = np.column_stack([doc_of, tokens])
    cq = CrossQCompressor(
        4, n_epochs=0, beam_width=1, random_state=0, device="cpu"
    ).fit(X[::3])
    index = LateInteractionIndex(cq, device="cpu").add(X)
    return X, cq, index, _queries(doc_of, tokens)


def _recall(a, b):
    return np.mean([len(set(x) & set(y)) / len(y) for x, y in zip(a, b)])


def test_candidate_search_keeps_the_exhaustive_top10_scoring_few(planted):
    X, _, index, Q = planted
    scores, ids = index.search(Q, k=10)
    assert scores.shape == ids.shape == (40, 10) and scores.dtype == np.float32
    assert np.all(np.diff(scores, axis=1) <= 0)
    index.n_probe = None
    try:
        exact_scores, exact = index.search(Q, k=10)
    finally:
        index.n_probe = 16
    assert _recall(ids, exact) >= 0.98
    counts = index.candidate_counts(Q)
    n_docs = len(index.doc_ids_)
    assert np.all(counts[:, 1] <= 256) and counts[:, 1].max() < n_docs / 5
    assert np.all(counts[:, 1] <= counts[:, 0])
    # A found document's score is its exact MaxSim over the decoded tokens.
    qids, dense = index.scores(Q)
    np.testing.assert_array_equal(qids, np.arange(40))
    pos = np.searchsorted(index.doc_ids_, ids)
    np.testing.assert_allclose(
        scores, np.take_along_axis(dense, pos, 1), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(exact_scores, -np.sort(-dense, axis=1)[:, :10], 1e-5)


def test_the_approximate_score_picks_the_candidates_that_matter(planted):
    # Ablation of the approximate stage: the n_candidates documents of best
    # approximate score against as many drawn at random from the probed ones.
    import torch

    _, _, index, Q = planted
    _, dense = index.scores(Q)
    exact_top = np.argsort(-dense, axis=1)[:, :10]
    ctx = index._torch()
    rng = np.random.default_rng(0)
    ours, drawn = [], []
    index.n_candidates = 40
    try:
        for q in range(40):
            Qq = torch.from_numpy(np.ascontiguousarray(Q[Q[:, 0] == q, 1:], np.float32))
            probed, kept = index._candidates(ctx, Qq, 10)
            ours.append(np.isin(exact_top[q], kept).mean())
            drawn.append(np.isin(exact_top[q], rng.choice(probed, len(kept))).mean())
    finally:
        index.n_candidates = "auto"
    assert np.mean(ours) >= 0.9 and np.mean(drawn) < np.mean(ours) - 0.3


def test_small_or_sparse_indexes_still_fill_the_top_k(planted):
    X, cq, index, Q = planted
    # An index of at most n_candidates documents is scored whole.
    small = LateInteractionIndex(cq, device="cpu").add(X[X[:, 0] < 100])
    small_exact = LateInteractionIndex(cq, n_probe=None, device="cpu")
    small_exact.add(X[X[:, 0] < 100])
    np.testing.assert_array_equal(small.search(Q)[1], small_exact.search(Q)[1])
    # Cells holding too few documents: the probe widens until they suffice.
    index.n_probe, index.n_candidates = 1, 300
    try:
        counts = index.candidate_counts(Q)
        assert np.all(counts[:, 0] >= 300) and np.all(counts[:, 1] == 300)
    finally:
        index.n_probe, index.n_candidates = 16, "auto"


def test_add_in_pieces_equals_one_build(planted):
    X, cq, whole, Q = planted
    ids = X[:, 0]
    # Pieces of unequal sizes, out of id order, rows shuffled within a piece.
    rng = np.random.default_rng(0)
    parts = LateInteractionIndex(cq, device="cpu")
    for lo, hi in ((1500, 2000), (0, 7), (7, 900), (900, 1500)):
        piece = X[(ids >= lo) & (ids < hi)]
        parts.add(piece[rng.permutation(len(piece))])
    assert len(parts._lists) > 1  # several runs of inverted lists, merged lazily
    for n_probe in (16, None):
        whole.n_probe = parts.n_probe = n_probe
        s1, i1 = whole.search(Q, k=10)
        s2, i2 = parts.search(Q, k=10)
        np.testing.assert_array_equal(i2, i1)
        np.testing.assert_array_equal(s2, s1)
    whole.n_probe = parts.n_probe = 16
    np.testing.assert_array_equal(parts.candidate_counts(Q), whole.candidate_counts(Q))
    assert parts.stored_bytes() - whole.stored_bytes() == sum(
        off.nbytes for off, _ in parts._lists[1:]
    )
    with pytest.raises(ValueError, match="already in the index"):
        parts.add(X[ids == 3])
    again = pickle.loads(pickle.dumps(parts))  # pickles too, compressor included
    np.testing.assert_array_equal(again.search(Q[:24])[1], parts.search(Q[:24])[1])


def test_capacity_doubles():
    grow = li._Growable(np.int64)
    reallocations = 0
    for i in range(1000):
        before = grow.data
        grow.extend(np.array([i]))
        reallocations += grow.data is not before
    np.testing.assert_array_equal(grow.view, np.arange(1000))
    assert reallocations <= 5


def test_save_load_round_trip(planted, tmp_path):
    X, cq, index, Q = planted
    path = tmp_path / "index.bin"
    index.save(path)
    assert path.exists()  # written as named
    loaded = LateInteractionIndex.load(path, device="cpu")
    for n_probe in (16, None):
        index.n_probe = loaded.n_probe = n_probe
        a, b = index.search(Q, k=10), loaded.search(Q, k=10)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    index.n_probe = loaded.n_probe = 16
    assert loaded.stored_bytes() == index.stored_bytes() - sum(
        off.nbytes for off, _ in index._lists[1:]
    )
    # Without its compressor the index searches and takes codes, not tokens.
    new = np.column_stack([np.full(30, 10**6), X[:30, 1:]])
    with pytest.raises(ValueError, match="loaded without its compressor"):
        loaded.add(new)
    loaded.add_codes(cq.encode(new), new[:, 0].astype(np.int64))
    with_cq = LateInteractionIndex.load(path, cq, device="cpu").add(new)
    np.testing.assert_array_equal(
        with_cq.search(new[:, 1:])[1], loaded.search(new[:, 1:])[1]
    )
    assert with_cq.search(new[:, 1:], k=1)[1][0, 0] == 10**6
    # Another format version, another file, another compressor: clear errors.
    with np.load(path) as f:
        data = dict(f)
    data["format_version"] = np.array(99)
    np.savez(tmp_path / "v99.npz", **data)
    with pytest.raises(ValueError, match="format version 99.*reads format version 1"):
        LateInteractionIndex.load(tmp_path / "v99.npz")
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not a LateInteractionIndex file"):
        LateInteractionIndex.load(tmp_path / "other.npz")
    other = CrossQCompressor(4, n_epochs=0, beam_width=1, random_state=1, device="cpu")
    with pytest.raises(ValueError, match="codebooks differ"):
        LateInteractionIndex.load(path, other.fit(X[::7]))


def test_float32_index_round_trip_and_exhaustive(tmp_path):
    doc_of, tokens = _planted(n_docs=200)
    X = np.column_stack([doc_of * 3 - 100, tokens])  # any integer ids
    index = LateInteractionIndex(device="cpu").add(X)
    index.save(tmp_path / "f.npz")
    loaded = LateInteractionIndex.load(tmp_path / "f.npz", device="cpu")
    Q = _queries(doc_of, tokens, n_queries=5)
    np.testing.assert_array_equal(loaded.search(Q)[1], index.search(Q)[1])
    assert loaded.search(Q, k=1)[1][0, 0] % 3 == 2  # an id of the collection
    # k above the number of documents: faiss's padding, -inf and id -1.
    scores, ids = index.search(Q[Q[:, 0] == 0], k=205)
    assert np.all(ids[0, 200:] == -1) and np.all(np.isinf(scores[0, 200:]))
    assert np.all(np.isfinite(scores[0, :200]))


def test_one_query_without_an_id_column(planted):
    _, _, index, Q = planted
    both = index.search(Q, k=5)
    for q in (0, 7):
        alone = index.search(Q[Q[:, 0] == q, 1:], k=5)
        assert alone[0].shape == (1, 5)
        np.testing.assert_array_equal(alone[1][0], both[1][q])
        np.testing.assert_allclose(alone[0][0], both[0][q], rtol=1e-6)
    qids, dense = index.scores(Q[Q[:, 0] == 0, 1:])
    assert qids is None and dense.shape == (1, len(index.doc_ids_))


def test_blocked_scoring_equals_one_block(planted, monkeypatch):
    _, _, index, Q = planted
    ref = index.search(Q[:48], k=10), index.scores(Q[:48])[1]
    monkeypatch.setattr(li, "_BLOCK_FLOATS", 500)  # blocks of ~40 tokens
    small = index.search(Q[:48], k=10), index.scores(Q[:48])[1]
    np.testing.assert_array_equal(small[0][1], ref[0][1])
    np.testing.assert_allclose(small[0][0], ref[0][0], rtol=1e-6)
    np.testing.assert_allclose(small[1], ref[1], rtol=1e-6)


def test_bad_input_gets_clear_errors(planted):
    X, cq, index, Q = planted
    before = (X.copy(), Q.copy())
    with pytest.raises(ValueError, match="index is empty"):
        LateInteractionIndex(cq).search(Q)
    with pytest.raises(ValueError, match=r"Q has 20 columns; the index holds 32-dim"):
        index.search(Q[:, :20])
    with pytest.raises(ValueError, match="X has 20 embedding dimensions; the index"):
        index.add(np.column_stack([np.full(4, 9999), X[:4, 1:21]]))
    with pytest.raises(
        ValueError,
        match=r"codes must have shape \(n_tokens, 4\).*"
        r"4-byte codes",
    ):
        index.add_codes(np.zeros((5, 3), dtype=np.uint8), np.full(5, 9999))
    with pytest.raises(ValueError, match=r"integers in \[0, 255\]"):
        index.add_codes(np.full((5, 4), 256), np.full(5, 9999))
    with pytest.raises(ValueError, match="one id per code row"):
        index.add_codes(np.zeros((5, 4), dtype=np.uint8), np.full(4, 9999))
    wider = CrossQCompressor(2, n_epochs=0, beam_width=1, device="cpu").fit(X[::9])
    mixed = LateInteractionIndex(cq, device="cpu").add(X[:100])
    mixed.compressor = wider
    with pytest.raises(ValueError, match="codes of another width"):
        mixed.add(X[X[:, 0] == 1999])
    with pytest.raises(ValueError, match="no codebooks"):
        LateInteractionIndex(device="cpu").add(X[:50]).add_codes(
            np.zeros((5, 4), dtype=np.uint8), np.full(5, 9999)
        )
    with pytest.raises(ValueError, match="k must be a positive int"):
        index.search(Q, k=0)
    index.n_probe = 0
    try:
        with pytest.raises(ValueError, match="n_probe must be a positive int or None"):
            index.search(Q)
    finally:
        index.n_probe = 16
    with pytest.raises(ValueError, match="coarse_bytes must be 1 or 2"):
        LateInteractionIndex(cq, coarse_bytes=3).add(X[:50])
    np.testing.assert_array_equal(X, before[0])
    np.testing.assert_array_equal(Q, before[1])


@pytest.mark.skipif(_CUDA, reason="checks the error of a machine without CUDA")
def test_a_missing_device_is_named(planted):
    X, cq, _, Q = planted
    index = LateInteractionIndex(cq, device="cuda").add(X[:50])
    with pytest.raises(ValueError, match="'device' parameter is 'cuda', but CUDA"):
        index.search(Q)


@pytest.mark.skipif(not _CUDA, reason="needs a CUDA device")
def test_gpu_search_equals_cpu(planted):
    X, cq, index, Q = planted
    gpu = LateInteractionIndex(cq, device="cuda").add(X[X[:, 0] < 1000])
    gpu.add(X[X[:, 0] >= 1000])  # the device copy grows with the index
    for n_probe in (16, None):
        index.n_probe = gpu.n_probe = n_probe
        a, b = index.search(Q, k=10), gpu.search(Q, k=10)
        assert _recall(b[1], a[1]) >= 0.99
        np.testing.assert_allclose(b[0], a[0], rtol=1e-4, atol=1e-4)
    index.n_probe = 16
