"""Task labels carried in a column of X, and the collaboration graph over them.

Task labels are integers or strings. They are kept as a sorted array (int64 or
str), the fitted encoder of the estimators: a sample's task index is the
position of its label in that array. The graph is given over the same sorted
labels (an adjacency matrix) or by label (a list of edges).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy import sparse

__all__ = ["label_text", "list_labels", "parse_graph", "task_indices", "task_labels"]


def label_text(label):
    """A task label as error messages show it: ``7`` or ``'north'``."""
    if isinstance(label, str):
        return repr(str(label))
    return str(int(label))


def list_labels(labels, limit=8):
    """Up to ``limit`` labels, comma-separated, with ``...`` when there are more."""
    labels = list(labels)
    text = ", ".join(label_text(v) for v in labels[:limit])
    return text + (", ..." if len(labels) > limit else "")


def task_labels(values, column):
    """The task labels held in one column of X.

    Parameters
    ----------
    values : ndarray of shape (n_samples,)
        The column: numbers, or (in an object or string array) strings.
    column : int
        Its position in X, for error messages.

    Returns
    -------
    ndarray of shape (n_samples,), int64 or str
        Integer labels when the column holds integer-valued numbers, string
        labels when it holds strings.

    Raises
    ------
    ValueError
        If a number is not an integer (or not finite), if strings and numbers
        are mixed, or if a value is neither (e.g. None).
    """
    values = np.asarray(values)
    if values.dtype.kind in "US":
        return values.astype(str)
    if values.dtype.kind == "O":
        is_str = np.fromiter((isinstance(v, str) for v in values), bool, len(values))
        if is_str.all():
            return values.astype(str)
        for value in values[~is_str]:
            if not _is_number(value):
                raise ValueError(
                    f"the task column ({column}) holds {value!r}, which is neither "
                    "an integer nor a string task label."
                )
        if is_str.any():
            raise ValueError(
                f"the task column ({column}) mixes strings and numbers "
                f"({values[is_str][0]!r} and {values[~is_str][0]!r}); task labels "
                "must be all integers or all strings."
            )
        values = values.astype(np.float64)
    if values.dtype.kind in "iub":
        return values.astype(np.int64)
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"the task column ({column}) holds NaN or infinity; task labels must "
            "be integers or strings."
        )
    fractional = values != np.round(values)
    if np.any(fractional):
        raise ValueError(
            f"the task column ({column}) must hold integer task labels (or "
            f"strings); it holds {values[fractional][0]!r}."
        )
    return values.astype(np.int64)


def _is_number(value):
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def task_indices(tasks, labels):
    """Positions of ``labels`` in the sorted fitted labels ``tasks``.

    Raises
    ------
    ValueError
        Naming the labels that are not among ``tasks`` (a string label for
        integer tasks, or the reverse, is never among them).
    """
    if (labels.dtype.kind == "U") != (tasks.dtype.kind == "U"):
        unknown = np.ones(len(labels), dtype=bool)
        idx = np.zeros(len(labels), dtype=np.intp)
    else:
        idx = np.clip(np.searchsorted(tasks, labels), 0, len(tasks) - 1)
        unknown = tasks[idx] != labels
    if np.any(unknown):
        missing = np.unique(labels[unknown])
        raise ValueError(
            f"task label(s) {list_labels(missing)} were not seen in fit (known "
            f"tasks: {list_labels(tasks)})."
        )
    return idx


def parse_graph(graph, tasks):
    """Undirected weighted edges ``(src, dst, weight)`` over task indices.

    Parameters
    ----------
    graph : {"complete", "chain"}, array-like, sparse matrix or list of tuples
        "complete": every pair of tasks, weight 1. "chain": consecutive tasks in
        sorted label order, weight 1. A numpy array or sparse matrix is an
        (n_tasks, n_tasks) adjacency matrix over the sorted task labels: symmetric,
        non-negative, zero diagonal; each nonzero pair is one edge. A list holds
        ``(s, t)`` or ``(s, t, weight)`` edges by task label.
    tasks : ndarray of int or str
        Sorted task labels.

    Returns
    -------
    src, dst : ndarray of int
        Task indices of each edge, ``src < dst``.
    weight : ndarray of float
        Positive edge weights.
    """
    T = len(tasks)
    if isinstance(graph, str):
        if graph == "complete":
            src, dst = np.triu_indices(T, k=1)
        else:  # "chain"
            src, dst = np.arange(T - 1), np.arange(1, T)
        return src.astype(np.intp), dst.astype(np.intp), np.ones(len(src))

    if sparse.issparse(graph) or isinstance(graph, np.ndarray):
        return _edges_from_matrix(graph, tasks)
    return _edges_from_list(list(graph), tasks)


def _edges_from_matrix(A, tasks):
    T = len(tasks)
    A = sparse.coo_matrix(A) if sparse.issparse(A) else np.asarray(A, dtype=float)
    if A.shape != (T, T):
        absent = ""
        size = A.shape[0] if len(A.shape) == 2 and A.shape[0] == A.shape[1] else 0
        if size > T and tasks.dtype.kind == "i":
            # integer labels: the graph's nodes 0..size-1 that X lacks
            missing = np.setdiff1d(np.arange(size), tasks)
            if len(missing) == size - T:
                absent = (
                    f" The graph's task(s) {list_labels(missing)} have no sample in X."
                )
        raise ValueError(
            f"graph has shape {A.shape}, but the data have {T} tasks (sorted labels "
            f"{list_labels(tasks)}); the adjacency matrix must be ({T}, {T}), "
            f"over the sorted labels of the tasks present in X.{absent} Drop "
            "the rows and columns of tasks absent from X, or pass the graph as "
            "a list of (s, t) edges by task label."
        )
    A = sparse.csr_matrix(A, dtype=float)
    A.eliminate_zeros()
    if not np.all(np.isfinite(A.data)):
        raise ValueError("graph holds NaN or infinite weights.")
    diag = A.diagonal()
    if np.any(diag != 0):
        i = int(np.flatnonzero(diag)[0])
        raise ValueError(
            f"graph has a self-loop at task {label_text(tasks[i])}; the diagonal "
            "must be 0."
        )
    if np.any(A.data < 0):
        coo = A.tocoo()
        k = int(np.flatnonzero(coo.data < 0)[0])
        s, t = label_text(tasks[coo.row[k]]), label_text(tasks[coo.col[k]])
        raise ValueError(
            f"graph has a negative weight {coo.data[k]} between tasks {s} and {t}; "
            "weights must be non-negative."
        )
    asym = abs(A - A.T)
    if asym.nnz and asym.max() > 1e-12 * max(abs(A).max(), 1.0):
        coo = asym.tocoo()
        k = int(np.argmax(coo.data))
        i, j = coo.row[k], coo.col[k]
        raise ValueError(
            f"graph is not symmetric: the weight from task {label_text(tasks[i])} "
            f"to task {label_text(tasks[j])} is {A[i, j]}, but back it is "
            f"{A[j, i]}."
        )
    upper = sparse.triu(A, k=1).tocoo()
    return (
        upper.row.astype(np.intp),
        upper.col.astype(np.intp),
        upper.data.astype(float),
    )


def _edge_endpoint(label, edge, position, string_tasks, tasks):
    """Task index of one endpoint of a listed edge."""
    if string_tasks:
        key = str(label) if isinstance(label, str) else None
    else:
        if isinstance(label, str) or not _is_number(label):
            key = None
        else:
            number = float(label)
            if not np.isfinite(number) or number != round(number):
                raise ValueError(
                    f"graph edge {edge!r} names a non-integer task {label!r}."
                )
            key = int(number)
    if key not in position:
        shown = label_text(key) if key is not None else repr(label)
        raise ValueError(
            f"graph edge {edge!r} names task {shown}, which is not among the tasks "
            f"of the data ({list_labels(tasks)})."
        )
    return position[key]


def _edges_from_list(edges, tasks):
    string_tasks = tasks.dtype.kind == "U"
    position = {label: i for i, label in enumerate(tasks.tolist())}
    seen = {}
    for edge in edges:
        if np.ndim(edge) != 1 or len(edge) not in (2, 3):
            raise ValueError(
                f"graph edge {edge!r} must be a pair (s, t) or a triple (s, t, weight)."
            )
        i = _edge_endpoint(edge[0], edge, position, string_tasks, tasks)
        j = _edge_endpoint(edge[1], edge, position, string_tasks, tasks)
        weight = float(edge[2]) if len(edge) == 3 else 1.0
        if i == j:
            raise ValueError(
                f"graph edge {edge!r} is a self-loop at task {label_text(tasks[i])}."
            )
        if not np.isfinite(weight) or weight < 0:
            raise ValueError(
                f"graph edge {edge!r} has weight {weight}; weights must be finite and "
                "non-negative."
            )
        i, j = sorted((i, j))
        if (i, j) in seen:
            raise ValueError(
                f"graph lists the edge between tasks {label_text(tasks[i])} and "
                f"{label_text(tasks[j])} twice."
            )
        seen[(i, j)] = weight
    pairs = [(i, j, w) for (i, j), w in seen.items() if w > 0]
    if not pairs:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty.copy(), np.zeros(0)
    src, dst, weight = map(np.asarray, zip(*pairs))
    return src.astype(np.intp), dst.astype(np.intp), weight.astype(float)
