"""LateInteractionIndex at scale: candidate search against exhaustive MaxSim.

``bench_crossq.py --part index`` calls :func:`part_index`. Synthetic
late-interaction collections with planted topics (generated here, chunk by
chunk): each document has 30 to 100 tokens of 64 dimensions, most of them
noisy copies of its topic's words, the rest common words shared by every
topic; a query is 20 tokens of one document, each perturbed by noise. CrossQ
(4 bytes per token, no ranking epochs, beam 1) is fitted on a 50,000-token
sample and encodes the collection, added to the index in pieces of 20,000
documents.

Measured at 100,000 documents (3 collection seeds) and at the largest size
:data:`SIZES` names (1 collection, 3 query seeds): recall@10 of candidate
search against exhaustive search over the same codes, the documents scored
exactly and the documents reached by the inverted lists (as fractions of the
collection), the bytes of the index, and queries per second (one query at a
time) of candidate search, exhaustive search over the codes, exhaustive numpy
MaxSim over the float32 tokens, and faiss IndexFlatIP over the float32 tokens
(ColBERT's first engine: each query token's nearest document tokens make the
candidates, then exact MaxSim over their float32 tokens; its ``k'`` tuned on
a development collection to the same recall target). The index's defaults
were chosen by :func:`develop` on seeds 100+, never on these seeds.
"""

import time

import numpy as np
from _common import paired_interval, write_results

from sklearn_ext._claims import Claim, Ledger

DIM = 64
QUERY_TOKENS = 20
CHUNK_DOCS = 20_000
FIT_SAMPLE = 50_000
# (documents, collection seeds, query seeds, evaluation queries per seed)
SIZES = ((100_000, (0, 1, 2), (0,), 50), (200_000, (0,), (0, 1, 2), 40))
N_TIMED = 20  # queries timed one at a time (10 for the exhaustive searches)
FAISS_K_TOKENS = (32, 64, 128, 256, 512, 1024)
TARGET_RECALL = 0.98
COLUMNS = ["size", "method", "recall10", "scored", "reached", "index_mb", "qps"]


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


class Collection:
    """A planted-topic collection, generated chunk by chunk from its seed.

    Topics: ``n_docs // 50`` topic centres, each with 32 words drawn around
    its centre; 256 common words shared by all topics. A document has a
    topic and 30 to 100 tokens: with probability 0.3 a common word, else one
    of its topic's words, plus Gaussian noise (norm about 0.35), normalised.
    """

    def __init__(self, n_docs, seed, dim=DIM):
        self.n_docs, self.dim, self.seed = n_docs, dim, seed
        rng = np.random.default_rng([seed, 0])
        n_topics = max(1, n_docs // 50)
        centres = _unit(rng.normal(size=(n_topics, 1, dim)))
        self.words = _unit(
            centres + 0.9 * _unit(rng.normal(size=(n_topics, 32, dim)))
        ).astype(np.float32)
        self.common = _unit(rng.normal(size=(256, dim))).astype(np.float32)
        self.lengths = rng.integers(30, 101, size=n_docs)
        self.topic = rng.integers(n_topics, size=n_docs)
        self.offsets = np.r_[0, np.cumsum(self.lengths)]

    @property
    def n_tokens(self):
        return int(self.offsets[-1])

    def chunks(self):
        """Yield (document ids, float32 tokens) of ``CHUNK_DOCS`` documents."""
        for c in range(-(-self.n_docs // CHUNK_DOCS)):
            yield self.chunk(c)

    def chunk(self, c):
        """(document ids, float32 tokens) of chunk ``c``, from its own seed."""
        rng = np.random.default_rng([self.seed, 1, c])
        docs = np.arange(c * CHUNK_DOCS, min((c + 1) * CHUNK_DOCS, self.n_docs))
        doc_of = np.repeat(docs, self.lengths[docs])
        n = len(doc_of)
        common = rng.random(n) < 0.3
        base = np.where(
            common[:, None],
            self.common[rng.integers(256, size=n)],
            self.words[self.topic[doc_of], rng.integers(32, size=n)],
        )
        noise = rng.normal(size=(n, self.dim)).astype(np.float32)
        tokens = _unit(base + (0.35 / np.sqrt(self.dim)) * noise)
        return doc_of, tokens.astype(np.float32)

    def queries(self, n_queries, seed, tokens_of):
        """(query ids, tokens): ``QUERY_TOKENS`` noisy tokens of a document.

        ``tokens_of(doc)`` returns a document's float32 tokens.
        """
        rng = np.random.default_rng([self.seed, 2, seed])
        docs = rng.choice(self.n_docs, n_queries, replace=False)
        own_of = {d: tokens_of(d) for d in np.sort(docs)}  # chunk by chunk
        rows, qid = [], []
        for q, d in enumerate(docs):
            own = own_of[d]
            pick = own[rng.choice(len(own), QUERY_TOKENS, replace=False)]
            noise = rng.normal(size=pick.shape).astype(np.float32)
            rows.append(_unit(pick + (0.5 / np.sqrt(self.dim)) * noise))
            qid += [q] * QUERY_TOKENS
        return np.asarray(qid), np.concatenate(rows).astype(np.float32)


def numpy_maxsim_topk(tokens, offsets, q, k=10, block=1 << 16):
    """Exhaustive MaxSim of one query over float32 tokens, in numpy: top k.

    The package's former exhaustive path: blocks of whole documents, one
    matrix product per block, a segmented maximum by ``np.maximum.reduceat``.
    """
    n_docs = len(offsets) - 1
    scores = np.empty(n_docs, dtype=np.float32)
    d0 = 0
    while d0 < n_docs:
        d1 = max(d0 + 1, int(np.searchsorted(offsets, offsets[d0] + block)) - 1)
        d1 = min(d1, n_docs)
        lo, hi = offsets[d0], offsets[d1]
        sims = q @ tokens[lo:hi].T
        scores[d0:d1] = np.maximum.reduceat(sims, offsets[d0:d1] - lo, axis=1).sum(0)
        d0 = d1
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def faiss_flat_maxsim(flat, tokens, offsets, doc_of, q, k_tokens, k=10):
    """ColBERT (v1) over faiss IndexFlatIP: token neighbours, then exact MaxSim."""
    _, ids = flat.search(q, k_tokens)
    cand = np.unique(doc_of[ids.ravel()])
    lo, hi = offsets[cand], offsets[cand + 1]
    lens = hi - lo
    rows = np.repeat(lo - (np.cumsum(lens) - lens), lens) + np.arange(lens.sum())
    sims = q @ tokens[rows].T
    starts = np.r_[0, np.cumsum(lens)[:-1]]
    scores = np.maximum.reduceat(sims, starts, axis=1).sum(0)
    order = np.argsort(-scores, kind="stable")[:k]
    return cand[order], len(cand)


def _slicer(floats, offsets):
    """``tokens_of(doc)`` over float32 tokens and their document offsets."""
    return lambda d: floats[offsets[d] : offsets[d + 1]]


def recall_at(approx_ids, exact_ids, k=10):
    """Per query: the share of the exact top k found in the approximate top k."""
    return np.array(
        [len(set(a[:k]) & set(e[:k])) / k for a, e in zip(approx_ids, exact_ids)]
    )


def build(
    collection, *, n_probe=16, n_candidates="auto", coarse_bytes=2, keep_float=False
):
    """Fit CrossQ on a token sample and add the collection in pieces.

    Returns the index, the fit and add seconds, and (``keep_float``) the
    float32 tokens and their document offsets (for the float32 peers).
    """
    from sklearn_ext.retrieval import CrossQCompressor, LateInteractionIndex

    first_ids, first = next(collection.chunks())
    rng = np.random.default_rng([collection.seed, 3])
    sample = rng.choice(len(first), min(FIT_SAMPLE, len(first)), replace=False)
    sample.sort()
    t = time.perf_counter()
    cq = CrossQCompressor(
        4, n_epochs=0, beam_width=1, random_state=collection.seed, device="cpu"
    ).fit(np.column_stack([first_ids[sample], first[sample]]))
    fit_s = time.perf_counter() - t
    index = LateInteractionIndex(
        cq,
        n_probe=n_probe,
        n_candidates=n_candidates,
        coarse_bytes=coarse_bytes,
        device="cpu",
    )
    floats = []
    t = time.perf_counter()
    for ids, tokens in collection.chunks():
        index.add(np.column_stack([ids.astype(np.float64), tokens]))
        if keep_float:
            floats.append(tokens)
    add_s = time.perf_counter() - t
    return index, fit_s, add_s, (np.concatenate(floats) if keep_float else None)


def _query_tokens_of(collection):
    """A document's float32 tokens, regenerated from its chunk (queries only)."""
    cache = {}

    def tokens_of(d):
        c = d // CHUNK_DOCS
        if c not in cache:
            cache.clear()
            cache[c] = collection.chunk(c)
        ids, tokens = cache[c]
        return tokens[ids == d]

    return tokens_of


def develop(sizes=(20_000, 50_000, 100_000), seeds=(100, 101), n_queries=40):
    """Recall and candidates of index settings on development collections.

    Seeds 100+ only; prints a line per setting. This is how the defaults of
    ``LateInteractionIndex`` were chosen.
    """
    grid = [
        (coarse, n_probe, n_cand)
        for coarse in (1, 2)
        for n_probe in (1, 2, 4, 8, 16)
        for n_cand in (64, 128, 256, 512, 1024, 2048, None)
    ]
    for n_docs in sizes:
        for seed in seeds:
            col = Collection(n_docs, seed)
            index, _, _, floats = build(col, keep_float=True)
            qid, qtok = col.queries(n_queries, 0, _slicer(floats, col.offsets))
            Q = np.column_stack([qid, qtok])
            index.n_probe = None
            _, exact = index.search(Q, k=10)
            for coarse, n_probe, n_cand in grid:
                index.coarse_bytes = coarse
                index._coarse = coarse  # a development shortcut: rebuild the lists
                index._lists = None
                index.n_probe, index.n_candidates = n_probe, n_cand
                t = time.perf_counter()
                _, ids = index.search(Q, k=10)
                qs = len(np.unique(qid)) / (time.perf_counter() - t)
                counts = index.candidate_counts(Q) / n_docs
                rec = recall_at(ids, exact).mean()
                print(
                    f"n={n_docs} seed={seed} coarse={coarse} n_probe={n_probe} "
                    f"n_candidates={n_cand}: recall@10 {rec:.3f} probed "
                    f"{counts[:, 0].mean():.4f} scored {counts[:, 1].mean():.4f} "
                    f"q/s {qs:.1f}",
                    flush=True,
                )


def _t_interval(values):
    """``mean [lo, hi]``: a 95% t interval over seeds, three decimals."""
    mean, lo, hi = paired_interval(values, np.zeros(len(values)))
    if len(values) < 2:
        return f"{mean:.3f}"
    return f"{mean:.3f} [{lo:.3f}, {min(hi, 1.0):.3f}]"


def _qps(run, queries):
    t = time.perf_counter()
    out = [run(q) for q in queries]
    return len(queries) / (time.perf_counter() - t), out


def _faiss_peer(tokens, offsets, dev, timed, dim):
    """faiss IndexFlatIP + exact MaxSim: ``k'`` tuned on development queries.

    ``dev`` and ``timed``: lists of (query tokens, exhaustive float32 top 10).
    Returns (k', recall on ``timed``, mean candidates, queries/s, bytes).
    """
    import faiss

    flat = faiss.IndexFlatIP(dim)
    flat.add(tokens)
    doc_of = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    chosen = FAISS_K_TOKENS[-1]
    for k_tokens in FAISS_K_TOKENS:  # the smallest k' that meets the target
        rec = np.mean(
            [
                recall_at(
                    [faiss_flat_maxsim(flat, tokens, offsets, doc_of, q, k_tokens)[0]],
                    [e],
                )[0]
                for q, e in dev
            ]
        )
        if rec >= TARGET_RECALL:
            chosen = k_tokens
            break
    qps, out = _qps(
        lambda q: faiss_flat_maxsim(flat, tokens, offsets, doc_of, q, chosen),
        [q for q, _ in timed],
    )
    rec = recall_at([ids for ids, _ in out], [e for _, e in timed])
    n_bytes = flat.ntotal * dim * 4 + offsets.nbytes
    return chosen, rec.mean(), np.mean([n for _, n in out]), qps, n_bytes


def part_index(sizes=SIZES, write=True, log=print):
    """Candidate search against exhaustive MaxSim and faiss flat (see above).

    Parameters
    ----------
    sizes : tuple of (n_docs, collection seeds, query seeds, queries per seed)
    write : bool
        Write ``results/crossq_index`` (from ``bench_crossq.py --part index``).
    log : callable
        Progress lines.

    Returns
    -------
    rows : list of dict
    """
    rows, notes = [], []
    start = time.perf_counter()
    for n_docs, col_seeds, query_seeds, n_queries in sizes:
        size = f"{n_docs:,} documents"
        recall, scored, reached, no_approx = [], [], [], []
        for c, col_seed in enumerate(col_seeds):
            col = Collection(n_docs, col_seed)
            index, fit_s, add_s, floats = build(col, keep_float=(c == 0))
            tokens_of = (
                _slicer(floats, col.offsets)
                if floats is not None
                else _query_tokens_of(col)
            )
            log(f"{size}, seed {col_seed}: CrossQ fit {fit_s:.0f} s, add {add_s:.0f} s")
            for qs in query_seeds:
                qid, qtok = col.queries(n_queries, qs, tokens_of)
                Q = np.column_stack([qid, qtok])
                index.n_probe = None
                _, exact = index.search(Q, k=10)
                index.n_probe = 16
                _, ids = index.search(Q, k=10)
                counts = index.candidate_counts(Q) / n_docs
                recall.append(recall_at(ids, exact).mean())
                scored.append(counts[:, 1].mean())
                reached.append(counts[:, 0].mean())
                # Ablation: no approximate stage (every probed document scored).
                index.n_candidates = None
                _, ids_all = index.search(Q[: 10 * QUERY_TOKENS], k=10)
                index.n_candidates = "auto"
                no_approx.append(recall_at(ids_all, exact[:10]).mean())
                log(
                    f"  query seed {qs}: recall@10 {recall[-1]:.3f}, scored "
                    f"{scored[-1]:.4f}, reached {reached[-1]:.4f}"
                )
            if c == 0:
                timed = _timing(col, index, floats, tokens_of, size, log)
                del floats
        rows.append(
            {
                "size": size,
                "method": "candidate search (defaults)",
                "recall10": _t_interval(recall),
                "scored": float(np.mean(scored)),
                "reached": float(np.mean(reached)),
                "index_mb": timed["ours_bytes"] / 1e6,
                "qps": timed["ours_qps"],
            }
        )
        rows.append(
            {
                "size": size,
                "method": "ablation: n_candidates=None (no approximate stage)",
                "recall10": _t_interval(no_approx),
                "scored": float(np.mean(reached)),
                "reached": float(np.mean(reached)),
                "index_mb": timed["ours_bytes"] / 1e6,
                "qps": timed["all_qps"],
            }
        )
        rows.append(
            {
                "size": size,
                "method": "exhaustive over the codes (n_probe=None)",
                "recall10": "1.000",
                "scored": 1.0,
                "reached": 1.0,
                "index_mb": timed["codes_bytes"] / 1e6,
                "qps": timed["exhaustive_qps"],
            }
        )
        rows.append(
            {
                "size": size,
                "method": "exhaustive numpy MaxSim, float32",
                "recall10": "1.000",
                "scored": 1.0,
                "reached": 1.0,
                "index_mb": timed["float_bytes"] / 1e6,
                "qps": timed["numpy_qps"],
            }
        )
        rows.append(
            {
                "size": size,
                "method": "faiss IndexFlatIP + MaxSim, float32",
                "recall10": f"{timed['faiss_recall']:.3f}",
                "scored": float(timed["faiss_scored"] / n_docs),
                "reached": 1.0,
                "index_mb": timed["faiss_bytes"] / 1e6,
                "qps": timed["faiss_qps"],
            }
        )
        notes.append(
            f"- {size} ({timed['n_tokens']:,} tokens): candidate search "
            f"{timed['ours_qps'] / timed['numpy_qps']:.0f}x the queries/s of "
            "exhaustive numpy MaxSim and "
            f"{timed['ours_qps'] / timed['faiss_qps']:.0f}x faiss flat's; index "
            f"{timed['ours_bytes'] / timed['float_bytes']:.3f} of the float32 "
            f"tokens' bytes; faiss's k' (token neighbours per query token) "
            f"{timed['k_tokens']}."
        )
    notes.append(f"Whole part {time.perf_counter() - start:.0f} s.")
    if write:
        write_results(
            "crossq_index",
            rows,
            COLUMNS,
            title="LateInteractionIndex: candidate search against exhaustive MaxSim",
            notes=NOTES_HEAD + "\n".join(notes),
        )
    return rows


NOTES_HEAD = (
    "recall10: the share of the exhaustive top 10 (over the same codes; for "
    "faiss, over the float32 tokens) that the search returns, mean over "
    "collection and query seeds with a 95% t interval. scored: documents "
    "whose exact MaxSim is computed, reached: documents met in the probed "
    "inverted lists (approximate score only), both as fractions of the "
    "collection. qps: one query at a time, one thread, loaded or idle as the "
    "run says. index_mb: codes, codebooks, offsets and inverted lists "
    "(float32: tokens and offsets).\n"
)


def _timing(col, index, floats, tokens_of, size, log):
    """Queries per second of each method and the bytes each stores."""
    out = {"n_tokens": col.n_tokens}
    qid, qtok = col.queries(N_TIMED, 50, tokens_of)
    queries = [qtok[qid == q] for q in range(N_TIMED)]
    out["ours_qps"], _ = _qps(lambda q: index.search(q, k=10), queries)
    out["ours_bytes"] = index.stored_bytes()
    index.n_candidates = None
    out["all_qps"], _ = _qps(lambda q: index.search(q, k=10), queries[:10])
    index.n_candidates, index.n_probe = "auto", None
    out["exhaustive_qps"], _ = _qps(lambda q: index.search(q, k=10), queries[:10])
    index.n_probe = 16
    out["codes_bytes"] = index.compressor.index_bytes(col.n_tokens, col.n_docs)
    out["numpy_qps"], exact = _qps(
        lambda q: numpy_maxsim_topk(floats, col.offsets, q), queries[:10]
    )
    out["float_bytes"] = floats.nbytes + col.offsets.nbytes
    dev_id, dev_tok = col.queries(20, 100, tokens_of)
    dev = [
        (
            dev_tok[dev_id == q],
            numpy_maxsim_topk(floats, col.offsets, dev_tok[dev_id == q]),
        )
        for q in range(20)
    ]
    timed = list(zip(queries[:10], exact))
    (
        out["k_tokens"],
        out["faiss_recall"],
        out["faiss_scored"],
        out["faiss_qps"],
        out["faiss_bytes"],
    ) = _faiss_peer(floats, col.offsets, dev, timed, col.dim)
    log(f"{size} timing: " + ", ".join(f"{k} {v:.4g}" for k, v in out.items()))
    return out


_METHODS = {
    "ours": "candidate search (defaults)",
    "no_approx": "ablation: n_candidates=None (no approximate stage)",
    "exhaustive": "exhaustive over the codes (n_probe=None)",
    "numpy": "exhaustive numpy MaxSim, float32",
    "faiss": "faiss IndexFlatIP + MaxSim, float32",
}


def index_claims(sizes=SIZES):
    """The claims of ``results/crossq_index`` (for bench_crossq.py's LEDGER)."""
    claims = []
    for n_docs, *_ in sizes:
        size = f"{n_docs:,} documents"
        tag = f"{n_docs // 1000}k"
        ours = {"size": size, "method": _METHODS["ours"]}
        claims += [
            Claim(f"recall_{tag}", ours, "recall10", metric="recall@10 of exhaustive"),
            Claim(
                f"scored_{tag}",
                ours,
                "scored",
                metric="share of documents scored exactly",
                fmt=".4f",
            ),
            Claim(
                f"reached_{tag}",
                ours,
                "reached",
                metric="share of documents in the probed lists",
                fmt=".3f",
            ),
            Claim(f"mb_{tag}", ours, "index_mb", metric="index MB", fmt=".0f"),
            Claim(
                f"faiss_recall_{tag}",
                {"size": size, "method": _METHODS["faiss"]},
                "recall10",
                metric="recall@10 of exhaustive float32 MaxSim",
            ),
            Claim(
                f"no_approx_scored_{tag}",
                {"size": size, "method": _METHODS["no_approx"]},
                "scored",
                metric="share of documents scored exactly",
                fmt=".3f",
            ),
        ]
        for key, method in _METHODS.items():
            claims.append(
                Claim(
                    f"qps_{key}_{tag}",
                    {"size": size, "method": method},
                    "qps",
                    metric="queries per second, one query at a time",
                    fmt=".3g",
                )
            )
        claims += [
            Claim(
                f"vs_faiss_{tag}",
                None,
                "queries per second, one query at a time",
                notes=rf"{size} [^\n]*?(\d+)x faiss flat's",
                metric="candidate search's queries/s / faiss flat's",
            ),
            Claim(
                f"vs_numpy_{tag}",
                None,
                "queries per second, one query at a time",
                notes=rf"{size} [^\n]*?(\d+)x the queries/s of exhaustive numpy",
                metric="candidate search's queries/s / exhaustive numpy MaxSim's",
            ),
        ]
    return claims


def index_ledger(sizes=SIZES):
    """``LEDGER["crossq_index"]`` of bench_crossq.py (``sizes`` as given to
    :func:`part_index`)."""
    return Ledger(
        "LateInteractionIndex (candidate search over CrossQCompressor codes)",
        "synthetic planted-topic collections (generated in "
        "benchmarks/_crossq_index.py): 100,000 and 200,000 documents of 30-100 "
        "tokens, 64 dimensions; queries of 20 noisy tokens of one document",
        "100,000 documents: 3 collection seeds; 200,000: 1 collection, 3 query "
        "seeds; 95% t intervals over seeds",
        {
            "ours": "LateInteractionIndex defaults (n_probe=16, n_candidates="
            "1% of the documents, 65,536 cells), chosen on development "
            "collections of seeds 100 and 101; "
            "CrossQ 4 bytes/token, n_epochs=0, beam_width=1, fitted on 50,000 "
            "tokens",
            "peers": "exhaustive MaxSim over the same codes; exhaustive numpy "
            "MaxSim over float32 tokens; faiss IndexFlatIP over float32 tokens "
            "with exact MaxSim re-ranking, its k' (token neighbours per query "
            "token) the smallest of 32-1024 reaching recall@10 0.98 on 20 "
            "development queries",
        },
        index_claims(sizes),
    )
