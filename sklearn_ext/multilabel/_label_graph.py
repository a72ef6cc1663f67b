"""The label graph of NBCG: a NOTEARS-MLP DAG over the labels, and its cuts.

Stage 1 of :class:`~sklearn_ext.multilabel.NBCGClassifier` learns a weighted
DAG over the binary labels (:func:`learn_label_graph`); stage 2 cuts it into
coalitions and derives which coalitions read which (the helpers below).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from sklearn_ext.utils._torch import import_torch, lbfgs_minimize
from sklearn_ext.utils._validation import check_sample_weight

__all__ = ["learn_label_graph"]

# Hidden units per label in the neural structural equation model (NOTEARS-MLP).
_SEM_HIDDEN = 8
# L-BFGS iterations per round of the augmented Lagrangian, L-BFGS's tolerances
# (torch's on the gradient and on the change), and the acyclicity tolerance
# that ends the rounds.
_SEM_INNER = 50
_SEM_TOL_GRAD = 1e-7
_SEM_TOL_CHANGE = 1e-9
_SEM_H_TOL = 1e-6
# Floor of a label's prior entropy (nats), so that a label that (almost) never
# or always occurs does not get an unbounded weight.
_MIN_ENTROPY = 1e-3


def _entropy(p):
    """Prior entropy (nats) of labels of frequency ``p``, floored at 1e-3."""
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.maximum(-(p * np.log(p) + (1 - p) * np.log(1 - p)), _MIN_ENTROPY)


def _greedy_dag(weights):
    """Keep the heaviest edges that do not close a cycle (a maximal DAG)."""
    n = weights.shape[0]
    dag = np.zeros_like(weights)
    reach = np.eye(n, dtype=bool)  # reach[i, j]: a path i -> ... -> j exists
    order = np.argsort(-weights, axis=None, kind="stable")
    for flat in order:
        i, j = divmod(int(flat), n)
        if weights[i, j] <= 0:
            break
        if reach[j, i]:  # j already reaches i: i -> j would close a cycle
            continue
        dag[i, j] = weights[i, j]
        # Everything that reaches i now reaches everything j reaches.
        reach |= np.outer(reach[:, i], reach[j])
    return dag


class _LabelSEM:
    """The NOTEARS-MLP problem over the distinct label rows, in float64.

    ``rows`` are the distinct rows of the indicator matrix, ``counts`` their
    (weighted) shares and ``inv_entropy`` each label's inverse prior entropy.
    """

    def __init__(self, rows, counts, inv_entropy, rng):
        torch = import_torch()
        dtype = torch.float64
        n_labels = rows.shape[1]
        self.n_labels = n_labels
        self.R = torch.tensor(rows, dtype=dtype)
        self.cw = torch.tensor(counts, dtype=dtype)
        self.inv_h = torch.tensor(inv_entropy, dtype=dtype)
        m = _SEM_HIDDEN
        scale = 1.0 / math.sqrt(n_labels)
        W1 = rng.uniform(-scale, scale, (n_labels, n_labels, m))
        w2 = rng.uniform(-0.5, 0.5, (n_labels, m))
        self.W1 = torch.tensor(W1, dtype=dtype).requires_grad_()
        self.b1 = torch.zeros(n_labels, m, dtype=dtype, requires_grad=True)
        self.w2 = torch.tensor(w2, dtype=dtype).requires_grad_()
        self.b2 = torch.zeros(n_labels, dtype=dtype, requires_grad=True)
        self.params = [self.W1, self.b1, self.w2, self.b2]
        self.off_diag = 1.0 - torch.eye(n_labels, dtype=dtype)

    def _masked_W1(self):
        # (j, i, m): the weights of f_j that read y_i, none for i == j.
        return self.W1 * self.off_diag.T[:, :, None]

    def adjacency(self):
        """A[i, j]: strength of i -> j, from the weights of f_j that read y_i."""
        W = self._masked_W1()
        return import_torch().sqrt((W**2).sum(-1) + 1e-12).T * self.off_diag

    def fit_loss(self):
        """Mean over labels of each equation's cross-entropy / prior entropy."""
        torch = import_torch()
        hidden = torch.sigmoid(
            torch.einsum("ni,jim->njm", self.R, self._masked_W1()) + self.b1
        )
        logits = (hidden * self.w2).sum(-1) + self.b2
        bce = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, self.R, reduction="none"
        )
        return (self.cw @ bce * self.inv_h).sum() / self.n_labels

    def acyclicity(self):
        """NOTEARS' ``h(A) = tr(exp(A * A)) - n_labels``, zero iff A is a DAG."""
        A = self.adjacency()
        return import_torch().linalg.matrix_exp(A * A).diagonal().sum() - self.n_labels

    def augmented_lagrangian(self, l1, max_iter):
        """Drive ``h(A)`` to zero; return the final adjacency (numpy)."""
        torch = import_torch()
        rho, lam, h_prev = 1.0, 0.0, math.inf
        for _ in range(max_iter):

            def objective(rho=rho, lam=lam):
                h = self.acyclicity()
                return (
                    self.fit_loss()
                    + 0.5 * rho * h * h
                    + lam * h
                    + l1 * self.W1.abs().sum() / self.n_labels
                )

            lbfgs_minimize(
                self.params,
                objective,
                max_iter=_SEM_INNER,
                tolerance_grad=_SEM_TOL_GRAD,
                tolerance_change=_SEM_TOL_CHANGE,
                history_size=100,
            )
            with torch.no_grad():
                h = float(self.acyclicity())
            lam += rho * h
            if h > 0.25 * h_prev:
                rho = min(rho * 10, 1e12)
            h_prev = h
            if h <= _SEM_H_TOL:
                break
        with torch.no_grad():
            return self.adjacency().numpy()


def learn_label_graph(
    y, *, l1=0.005, threshold=0.3, max_iter=10, sample_weight=None, random_state=None
):
    """Learn a weighted DAG over binary labels with a neural structural equation model.

    Each label ``j`` is explained by the others through a one-hidden-layer
    network, ``P(y_j = 1 | y) = sigmoid(f_j(y_{-j}))`` (NOTEARS-MLP [1]_). The
    strength of the edge ``i -> j`` is the Euclidean norm of the first-layer
    weights of ``f_j`` that read ``y_i``; the acyclicity function
    ``h(A) = tr(exp(A * A)) - n_labels`` is driven to zero by an augmented
    Lagrangian, each round a full-batch L-BFGS solve (at most 50 iterations).
    Each label's cross-entropy is divided by its prior entropy so that rare
    labels' equations count as much as frequent ones' (without this the edges
    into rare labels cost more L1 than they save and vanish). Edges weaker than
    ``threshold`` are dropped, and of the rest the heaviest that do not close a
    cycle are kept, so the result is always a DAG.

    The fit runs on the distinct rows of ``y`` weighted by their counts (times
    ``sample_weight``), which for multi-label data is usually far fewer than
    the samples; integer weights thus give the graph of the data with
    repeated rows (and zero weights that of the data without those rows).
    With binary labels the direction of an edge is only weakly identified:
    read the result as a dependency structure, not as causal truth.

    Parameters
    ----------
    y : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Binary indicator matrix: the labels are the data whose dependency
        structure is learned (the target ``y`` of a multi-label classifier).
    l1 : float, default=0.005
        L1 penalty on the first-layer weights.
    threshold : float, default=0.3
        Edges with a smaller strength are dropped.
    max_iter : int, default=10
        Rounds of the augmented Lagrangian (each up to 50 L-BFGS iterations);
        the rounds stop early once ``h(A) <= 1e-6``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights of the rows; None weights every row 1.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights.

    Returns
    -------
    graph : ndarray of shape (n_labels, n_labels)
        ``graph[i, j] > 0`` is the strength of the edge ``i -> j``; a DAG.

    References
    ----------
    .. [1] X. Zheng, C. Dan, B. Aragam, P. Ravikumar and E. P. Xing, "Learning
       sparse nonparametric DAGs", AISTATS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.multilabel import learn_label_graph
    >>> rng = np.random.RandomState(0)
    >>> a = rng.rand(2000) < 0.4
    >>> b = np.where(a, rng.rand(2000) < 0.8, rng.rand(2000) < 0.05)
    >>> c = rng.rand(2000) < 0.3
    >>> G = learn_label_graph(np.c_[a, b, c].astype(int), random_state=0)
    >>> bool(G[0, 1] > 0 or G[1, 0] > 0), bool(G[:, 2].any() or G[2].any())
    (True, False)
    """
    y = np.asarray(y.toarray() if sp.issparse(y) else y, dtype=np.float64)
    if y.ndim != 2:
        raise ValueError(
            "y must be a 2-D binary indicator matrix of shape (n_samples, "
            f"n_labels); got an array of shape {y.shape}."
        )
    n_samples, n_labels = y.shape
    if n_labels < 2:
        return np.zeros((n_labels, n_labels))
    w = check_sample_weight(sample_weight, y, normalize=False)
    if w is None:
        w = np.ones(n_samples)
    rows, inverse = np.unique(y, axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=w, minlength=len(rows))
    # Rows of zero weight drop out, as if they had not been passed.
    rows, counts = rows[counts > 0], counts[counts > 0]
    counts = counts / counts.sum()
    entropy = _entropy((y * w[:, None]).sum(0) / w.sum())

    sem = _LabelSEM(rows, counts, 1.0 / entropy, check_random_state(random_state))
    A = sem.augmented_lagrangian(l1, max_iter)
    A = np.where(A >= threshold, A, 0.0)
    return _greedy_dag(A)


# --------------------------------------------------------------------------
# Coalitions: cuts of the label graph
# --------------------------------------------------------------------------


def _auto_coalitions(n_labels):
    """``n_coalitions="auto"``: ``ceil(sqrt(n_labels))``."""
    return max(1, min(n_labels, math.ceil(math.sqrt(n_labels))))


def _partition_labels(graph, n_coalitions, seed):
    """Cut the (symmetrised) label graph into ``n_coalitions`` groups.

    Returns each label's coalition, numbered in order of first appearance.
    """
    n_labels = graph.shape[0]
    if n_coalitions >= n_labels:
        return np.arange(n_labels)
    if n_coalitions == 1:
        return np.zeros(n_labels, dtype=int)
    from sklearn.cluster import SpectralClustering

    S = graph + graph.T
    # A weak uniform affinity keeps the graph connected, so that labels the
    # graph leaves isolated are still assigned (spectral clustering needs it).
    S = S + 1e-3 * max(S.max(), 1.0) * (1 - np.eye(n_labels))
    assign = SpectralClustering(
        n_clusters=n_coalitions,
        affinity="precomputed",
        assign_labels="cluster_qr",
        random_state=seed,
    ).fit_predict(S)
    # Renumber in order of first appearance, dropping empty clusters.
    _, first = np.unique(assign, return_index=True)
    order = np.argsort(first)
    remap = np.empty(assign.max() + 1, dtype=int)
    remap[np.unique(assign)[order]] = np.arange(len(order))
    return remap[assign]


def _coalition_masks(graph, assign, n_coalitions):
    """masks[c, d]: coalition c reads coalition d (itself, or a parent coalition)."""
    member = np.zeros((graph.shape[0], n_coalitions))
    member[np.arange(graph.shape[0]), assign] = 1.0
    flows = member.T @ (graph > 0) @ member  # flows[d, c]: edges from d into c
    return (flows.T > 0) | np.eye(n_coalitions, dtype=bool)
