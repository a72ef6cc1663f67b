"""A diagnostic of issue 55: can the directions of the label DAG be recovered?

Score-based structure learning over the binary labels, as a peer of NBCG's
NOTEARS label graph: greedy hill climbing over DAGs (add, remove or reverse
one edge at a time) with the BIC score of a full conditional probability table
per label, and the completed partially directed graph (CPDAG) of the result:
the edges that every DAG of its Markov equivalence class orients alike (the
v-structures and what Meek's rules 1-3 propagate from them). Only those
directions are carried by the data; the others are a coin toss.
"""

import numpy as np


def _local_bic(Y, weights, child, parents, log_n):
    """BIC of ``child`` given ``parents`` (a full table) on weighted rows."""
    if parents:
        config = Y[:, list(parents)] @ (1 << np.arange(len(parents)))
    else:
        config = np.zeros(Y.shape[0], dtype=np.int64)
    k = 1 << len(parents)
    counts = np.bincount(
        config * 2 + Y[:, child], weights=weights, minlength=2 * k
    ).reshape(k, 2)
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        loglik = np.where(counts > 0, counts * np.log(counts / totals), 0.0).sum()
    return loglik - 0.5 * log_n * k


def bic_score(Y, graph):
    """Total BIC of the DAG ``graph`` (``graph[i, j]``: edge i -> j) on ``Y``."""
    rows, counts = np.unique(np.asarray(Y, dtype=np.int64), axis=0, return_counts=True)
    log_n = np.log(counts.sum())
    return sum(
        _local_bic(
            rows, counts.astype(float), j, tuple(np.flatnonzero(graph[:, j])), log_n
        )
        for j in range(graph.shape[0])
    )


def _reaches(A, source, target):
    seen, stack = {source}, [source]
    while stack:
        u = stack.pop()
        if u == target:
            return True
        for v in np.flatnonzero(A[u]):
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return False


def bic_hill_climb(Y, max_parents=4):
    """The DAG that greedy hill climbing on the BIC reaches from the empty graph."""
    rows, counts = np.unique(np.asarray(Y, dtype=np.int64), axis=0, return_counts=True)
    weights, log_n = counts.astype(float), np.log(counts.sum())
    L = rows.shape[1]
    cache = {}

    def score(j, parents):
        key = (j, parents)
        if key not in cache:
            cache[key] = _local_bic(rows, weights, j, tuple(sorted(parents)), log_n)
        return cache[key]

    parents = [frozenset() for _ in range(L)]
    current = np.array([score(j, parents[j]) for j in range(L)])
    A = np.zeros((L, L), dtype=bool)
    while True:
        best, move = 1e-9, None
        for j in range(L):
            for i in range(L):
                if i == j:
                    continue
                if A[i, j]:
                    gain = score(j, parents[j] - {i}) - current[j]
                    if gain > best:
                        best, move = gain, ("remove", i, j)
                    if len(parents[i]) < max_parents:
                        flip = gain + score(i, parents[i] | {j}) - current[i]
                        if flip > best:
                            A[i, j] = False
                            acyclic = not _reaches(A, i, j)
                            A[i, j] = True
                            if acyclic:
                                best, move = flip, ("reverse", i, j)
                elif not A[j, i] and len(parents[j]) < max_parents:
                    gain = score(j, parents[j] | {i}) - current[j]
                    if gain > best and not _reaches(A, j, i):
                        best, move = gain, ("add", i, j)
        if move is None:
            return A
        kind, i, j = move
        A[i, j] = kind == "add"
        parents[j] = parents[j] | {i} if kind == "add" else parents[j] - {i}
        if kind == "reverse":
            A[j, i] = True
            parents[i] = parents[i] | {j}
        current[i], current[j] = score(i, parents[i]), score(j, parents[j])


def compelled_edges(A):
    """Directed edges of the CPDAG of DAG ``A`` (v-structures, Meek rules 1-3)."""
    A = np.asarray(A) > 0
    L = A.shape[0]
    adjacent = A | A.T
    D = np.zeros_like(A)
    for j in range(L):
        pa = np.flatnonzero(A[:, j])
        for x, i in enumerate(pa):
            for k in pa[x + 1 :]:
                if not adjacent[i, k]:
                    D[i, j] = D[k, j] = True
    U = adjacent & ~(D | D.T)
    changed = True
    while changed:
        changed = False
        for i, j in zip(*np.nonzero(U)):
            if not U[i, j]:
                continue
            rule1 = np.any(D[:, i] & ~adjacent[:, j] & (np.arange(L) != j))
            rule2 = np.any(D[i] & D[:, j])
            middles = np.flatnonzero(U[i] & D[:, j])
            rule3 = any(
                not adjacent[a, b]
                for x, a in enumerate(middles)
                for b in middles[x + 1 :]
            )
            if rule1 or rule2 or rule3:
                D[i, j] = True
                U[i, j] = U[j, i] = False
                changed = True
    return D
