"""The label graph of NBCG: a NOTEARS DAG over the labels, and its cuts.

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

from sklearn_ext.utils._torch import (
    cpu_thread_limit,
    import_torch,
    lbfgs_minimize,
    resolve_device,
)
from sklearn_ext.utils._validation import check_sample_weight

__all__ = ["learn_label_graph"]

# L-BFGS iterations per round of the augmented Lagrangian, L-BFGS's tolerances
# (torch's on the gradient and on the change), and the acyclicity tolerance
# that ends the rounds.
_SEM_INNER = 50
_SEM_TOL_GRAD = 1e-7
_SEM_TOL_CHANGE = 1e-9
_SEM_H_TOL = 1e-4
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
    """The NOTEARS problem with a logistic link over the distinct label rows.

    ``rows`` are the distinct rows of the indicator matrix, ``counts`` their
    (weighted) shares and ``entropy`` each label's prior entropy. Label ``j``
    has the equation ``P(y_j = 1 | y) = sigmoid(b_j + sum_i W[i, j] y_i)``;
    ``|W[i, j]|`` (a log-odds ratio) is the strength of ``i -> j``. The
    parameters live on ``device`` in ``dtype``.
    """

    def __init__(self, rows, counts, entropy, rng, device="cpu", dtype=None):
        torch = import_torch()
        dtype = torch.float64 if dtype is None else dtype
        n_labels = rows.shape[1]
        self.n_labels = n_labels

        def tensor(a, grad=False):
            return torch.tensor(a, dtype=dtype, device=device).requires_grad_(grad)

        self.R = tensor(rows)
        self.cw = tensor(counts)
        # The L1 price of i -> j is symmetric in i and j (the smaller prior
        # entropy of the two), so the penalty favours neither direction; the
        # fit is the labels' own likelihood, equal for Markov-equivalent
        # graphs. Orientation thus comes from the data (v-structures), not
        # from which label is the more frequent.
        self.total_entropy = float(entropy.sum())
        self.price = tensor(np.minimum.outer(entropy, entropy))
        p = np.clip(counts @ rows, 1e-6, 1 - 1e-6)
        self.W = tensor(rng.uniform(-0.1, 0.1, (n_labels, n_labels)), True)
        self.b = tensor(np.log(p / (1 - p)), True)
        self.params = [self.W, self.b]
        self.off_diag = 1.0 - torch.eye(n_labels, dtype=dtype, device=device)

    def adjacency(self):
        """A[i, j]: strength of i -> j, the absolute log-odds ratio."""
        return (self.W * self.off_diag).abs()

    def fit_loss(self):
        """Cross-entropy of the labels' equations, over the total prior entropy."""
        torch = import_torch()
        logits = self.R @ (self.W * self.off_diag) + self.b
        bce = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, self.R, reduction="none"
        )
        return (self.cw @ bce).sum() / self.total_entropy

    def penalty(self):
        """Symmetric-priced L1 of the edge weights (on the fit's scale)."""
        return (self.adjacency() * self.price).sum() / self.total_entropy

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
                    self.fit_loss() + 0.5 * rho * h * h + lam * h + l1 * self.penalty()
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
            return self.adjacency().double().cpu().numpy()


def learn_label_graph(
    y,
    *,
    l1=0.005,
    threshold=0.6,
    max_iter=10,
    sample_weight=None,
    device="cpu",
    random_state=None,
):
    """Learn a weighted DAG over binary labels with a logistic structural model.

    Each label ``j`` is explained by the others through a logistic equation,
    ``P(y_j = 1 | y) = sigmoid(b_j + sum_i W[i, j] y_i)`` (NOTEARS [1]_ with
    a logistic link). The strength of the edge ``i -> j`` is ``|W[i, j]|``,
    a log-odds ratio; the acyclicity function
    ``h(A) = tr(exp(A * A)) - n_labels`` is driven to zero by an augmented
    Lagrangian, each round a full-batch L-BFGS solve (at most 50 iterations).
    The fit term is the labels' own log-likelihood, the same for every graph
    of a Markov equivalence class. The L1 price of the weights of ``i -> j``
    is the smaller prior entropy of the two labels, the same for ``j -> i``:
    an edge touching a rare label costs as little as the information it can
    carry (a flat price makes edges at rare labels cost more than they save,
    and they vanish), and neither the fit nor the penalty prefers a
    direction, so that orientation comes from the data (v-structures), not
    from which label is the more frequent. Edges weaker than ``threshold``
    are dropped, and of the rest the heaviest that do not close a cycle are
    kept, so the result is always a DAG. (A one-hidden-layer network per
    equation, NOTEARS-MLP, was tried first: its first-layer L1 is scale-free
    against the unpenalised second layer, so its edge strengths were
    arbitrary and every edge came out frequent -> rare.)

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
        L1 penalty on the edge weights (each priced by the smaller prior
        entropy of its two labels).
    threshold : float, default=0.6
        Edges with a smaller strength (absolute log-odds ratio) are dropped.
    max_iter : int, default=10
        Rounds of the augmented Lagrangian (each up to 50 L-BFGS iterations);
        the rounds stop early once ``h(A) <= 1e-4`` (the heaviest-edges step
        then makes the thresholded graph exactly acyclic).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights of the rows; None weights every row 1.
    device : str or torch.device, default="cpu"
        Where the model is fitted ("auto", "cpu", "cuda", ...): float64 on
        the CPU, float32 on an accelerator.
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

    Two independent rare labels that each raise a frequent one form a
    collider, which fixes the directions, rare -> frequent:

    >>> r1, r2 = rng.rand(5000) < 0.05, rng.rand(5000) < 0.08
    >>> f = rng.rand(5000) < np.where(r1 | r2, 0.9, 0.25)
    >>> G = learn_label_graph(np.c_[r1, r2, f].astype(int), random_state=0)
    >>> (G > 0).astype(int)
    array([[0, 0, 1],
           [0, 0, 1],
           [0, 0, 0]])
    """
    with cpu_thread_limit():
        return _learn_label_graph(
            y, l1, threshold, max_iter, sample_weight, device, random_state
        )


def _learn_label_graph(y, l1, threshold, max_iter, sample_weight, device, random_state):
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

    torch = import_torch()
    device = resolve_device(device)
    # float64 on the CPU; float32 on an accelerator (fast there, and enough
    # for a graph thresholded at 0.3).
    dtype = torch.float64 if device.type == "cpu" else torch.float32
    sem = _LabelSEM(
        rows, counts, entropy, check_random_state(random_state), device, dtype
    )
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
    """masks[c, d]: coalition c reads coalition d (itself, or an ancestor).

    ``d`` is an ancestor of ``c`` when a directed path of the label graph
    leads from a label of ``d`` to a label of ``c``; the coalitions' graph
    may have cycles (edges both ways between two coalitions), and then
    each reads the other.
    """
    member = np.zeros((graph.shape[0], n_coalitions))
    member[np.arange(graph.shape[0]), assign] = 1.0
    flows = (member.T @ (graph > 0) @ member) > 0  # flows[d, c]: edges d -> c
    reach = flows | np.eye(n_coalitions, dtype=bool)
    for _ in range(n_coalitions):  # transitive closure
        step = (reach.astype(int) @ reach.astype(int)) > 0
        if (step == reach).all():
            break
        reach = step
    return reach.T
