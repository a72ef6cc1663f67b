"""Large sparse task graphs for the graph-guided speed benchmark.

``make_large_graph`` plants contiguous groups of tasks (each group shares one
weight vector) on a sparse graph: a ring lattice (every task linked to its
neighbours at distance 1 and 2) plus ``n_tasks / 2`` random chords, so about
5 edges per node. Most ring edges join tasks of the same group; the chords
mostly join different groups, which the graph term has to learn to cut.
"""

import numpy as np
from scipy import sparse
from sklearn.utils import Bunch


def make_large_graph(
    n_tasks, n_samples, n_features=20, *, n_groups=None, noise=1.0, seed=0
):
    """Data of a ``n_tasks``-task problem on a sparse graph (about 5 edges/node).

    Returns a Bunch with ``data`` (task index in column 0, then the standard
    normal features), ``target`` (``x . w_group + noise * e``, no intercept),
    ``adjacency`` (symmetric CSR, unit weights) and ``groups`` (each task's
    group: ``n_groups`` contiguous runs of tasks, ``max(2, n_tasks // 100)`` by
    default). Every sample's task is drawn uniformly.
    """
    rng = np.random.RandomState(seed)
    n_groups = n_groups or max(2, n_tasks // 100)
    groups = np.arange(n_tasks) * n_groups // n_tasks
    weights = rng.normal(size=(n_groups, n_features))[groups]
    nodes = np.arange(n_tasks)
    n_chords = n_tasks // 2
    a = rng.randint(n_tasks, size=n_chords)
    b = rng.randint(n_tasks, size=n_chords)
    src = np.concatenate([nodes, nodes, a])
    dst = np.concatenate([(nodes + 1) % n_tasks, (nodes + 2) % n_tasks, b])
    keep = src != dst
    src, dst = src[keep], dst[keep]
    A = sparse.coo_matrix(
        (np.ones(len(src)), (src, dst)), shape=(n_tasks, n_tasks)
    ).tocsr()
    A = ((A + A.T) > 0).astype(float).tocsr()
    task = rng.randint(n_tasks, size=n_samples)
    features = rng.normal(size=(n_samples, n_features))
    y = np.einsum("nd,nd->n", features, weights[task])
    y += noise * rng.normal(size=n_samples)
    return Bunch(
        data=np.column_stack([task.astype(float), features]),
        target=y,
        adjacency=A,
        groups=groups,
    )


def n_edges(adjacency):
    """Number of (undirected, off-diagonal) edges of a dense or sparse adjacency."""
    if sparse.issparse(adjacency):
        return int(sparse.triu(adjacency, k=1).nnz)
    return int(np.count_nonzero(np.triu(adjacency, k=1)))
