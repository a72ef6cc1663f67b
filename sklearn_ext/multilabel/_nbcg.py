"""NBCG: long-tailed multi-label classification as a Nash bargaining game."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import type_of_target

from sklearn_ext.base import TorchMixin
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import (
    batch_bounds,
    import_torch,
    init_parameters,
    to_tensor,
)

__all__ = ["NBCGClassifier", "learn_label_graph", "nash_bargaining_weights"]

# Hidden units per label in the neural structural equation model (NOTEARS-MLP).
_SEM_HIDDEN = 8
# L-BFGS iterations per round of the augmented Lagrangian, and the acyclicity
# tolerance that ends the rounds.
_SEM_INNER = 50
_SEM_H_TOL = 1e-6
# Newton steps of the bargaining solution, and the largest weight
# relative to the mean weight.
_NASH_ITER = 30
_NASH_MAX_RATIO = 10.0
# Floor of a label's prior entropy (nats), so that a label that (almost) never
# or always occurs does not get an unbounded weight.
_MIN_ENTROPY = 1e-3


# --------------------------------------------------------------------------
# Stage 1: neural structural equation model over the labels
# --------------------------------------------------------------------------


def _entropy(p):
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


def learn_label_graph(
    Y, *, l1=0.005, threshold=0.3, max_iter=10, sample_weight=None, random_state=None
):
    """Learn a weighted DAG over binary labels with a neural structural equation model.

    Each label ``j`` is explained by the others through a one-hidden-layer
    network, ``P(y_j = 1 | y) = sigmoid(f_j(y_{-j}))`` (NOTEARS-MLP [1]_). The
    strength of the edge ``i -> j`` is the Euclidean norm of the first-layer
    weights of ``f_j`` that read ``y_i``; the acyclicity function
    ``h(A) = tr(exp(A * A)) - n_labels`` is driven to zero by an augmented
    Lagrangian. Each label's cross-entropy is divided by its prior entropy so
    that rare labels' equations count as much as frequent ones' (without this
    the edges into rare labels cost more L1 than they save and vanish). Edges
    weaker than ``threshold`` are dropped, and of the rest the heaviest that do
    not close a cycle are kept, so the result is always a DAG.

    The fit runs on the distinct rows of ``Y`` weighted by their counts, which
    for multi-label data is usually far fewer than the samples. With binary
    labels the direction of an edge is only weakly identified: read the result
    as a dependency structure, not as causal truth.

    Parameters
    ----------
    Y : array-like of shape (n_samples, n_labels)
        Binary indicator matrix.
    l1 : float, default=0.005
        L1 penalty on the first-layer weights.
    threshold : float, default=0.3
        Edges with a smaller strength are dropped.
    max_iter : int, default=10
        Rounds of the augmented Lagrangian (each up to 50 L-BFGS iterations);
        the rounds stop early once ``h(A) <= 1e-6``.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows.
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
    torch = import_torch()
    Y = np.asarray(Y, dtype=np.float64)
    n_samples, n_labels = Y.shape
    if n_labels < 2:
        return np.zeros((n_labels, n_labels))
    w = np.ones(n_samples) if sample_weight is None else np.asarray(sample_weight)
    rows, inverse = np.unique(Y, axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=w, minlength=len(rows))
    counts = counts / counts.sum()
    entropy = _entropy((Y * w[:, None]).sum(0) / w.sum())

    rng = check_random_state(random_state)
    dtype = torch.float64
    R = torch.tensor(rows, dtype=dtype)
    cw = torch.tensor(counts, dtype=dtype)
    inv_h = torch.tensor(1.0 / entropy, dtype=dtype)
    m = _SEM_HIDDEN
    scale = 1.0 / math.sqrt(n_labels)
    W1 = torch.tensor(rng.uniform(-scale, scale, (n_labels, n_labels, m)), dtype=dtype)
    params = {
        "W1": W1.requires_grad_(),
        "b1": torch.zeros(n_labels, m, dtype=dtype, requires_grad=True),
        "w2": torch.tensor(
            rng.uniform(-0.5, 0.5, (n_labels, m)), dtype=dtype
        ).requires_grad_(),
        "b2": torch.zeros(n_labels, dtype=dtype, requires_grad=True),
    }
    off_diag = 1.0 - torch.eye(n_labels, dtype=dtype)

    def adjacency():
        # A[i, j]: strength of i -> j, from the weights of f_j that read y_i.
        W = params["W1"] * off_diag.T[:, :, None]
        return torch.sqrt((W**2).sum(-1) + 1e-12).T * off_diag

    def fit_loss():
        W = params["W1"] * off_diag.T[:, :, None]  # (j, i, m)
        hidden = torch.sigmoid(torch.einsum("ni,jim->njm", R, W) + params["b1"])
        logits = (hidden * params["w2"]).sum(-1) + params["b2"]
        bce = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, R, reduction="none"
        )
        return (cw @ bce * inv_h).sum() / n_labels

    def acyclicity():
        A = adjacency()
        return torch.linalg.matrix_exp(A * A).diagonal().sum() - n_labels

    rho, lam, h_prev = 1.0, 0.0, math.inf
    for _ in range(max_iter):
        optimizer = torch.optim.LBFGS(
            list(params.values()),
            max_iter=_SEM_INNER,
            line_search_fn="strong_wolfe",
            tolerance_grad=1e-7,
        )

        def closure(optimizer=optimizer, rho=rho, lam=lam):
            optimizer.zero_grad()
            h = acyclicity()
            loss = (
                fit_loss()
                + 0.5 * rho * h * h
                + lam * h
                + l1 * params["W1"].abs().sum() / n_labels
            )
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            h = float(acyclicity())
        lam += rho * h
        if h > 0.25 * h_prev:
            rho = min(rho * 10, 1e12)
        h_prev = h
        if h <= _SEM_H_TOL:
            break
    with torch.no_grad():
        A = adjacency().numpy()
    A = np.where(A >= threshold, A, 0.0)
    return _greedy_dag(A)


# --------------------------------------------------------------------------
# Stage 2: coalitions and communication masks
# --------------------------------------------------------------------------


def _auto_coalitions(n_labels):
    return max(1, min(n_labels, math.ceil(math.sqrt(n_labels))))


def _partition_labels(graph, n_coalitions, seed):
    """Cut the (symmetrised) label graph into ``n_coalitions`` groups."""
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
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


# --------------------------------------------------------------------------
# Stage 3: the bargaining solution
# --------------------------------------------------------------------------


def nash_bargaining_weights(
    gram, surplus, *, n_iter=_NASH_ITER, init=None, return_raw=False
):
    """Weights of the Nash bargaining solution over players' gradients.

    Player ``c`` has gradient ``g_c`` and surplus ``s_c >= 0`` over its
    disagreement point. The bargaining update ``d = sum_c alpha_c g_c`` maximises
    ``sum_c log(s_c + g_c . d)`` (the Nash product of the players' utilities,
    linearised) in a ball; its first-order conditions are

    ``alpha_c * (s_c + (G alpha)_c) = 1``,  with ``G = [g_c . g_d]``.

    With zero surplus this is Nash-MTL's condition ``alpha_c (G alpha)_c = 1``
    [1]_ (an equal share of the update for every player when gradients are
    orthogonal); a player far above its disagreement point gets a weight near
    ``1 / s_c``, so under-served players are prioritised. The Gram matrix is
    scaled to unit mean diagonal first, so that surpluses (relative losses) and
    gradient terms are on one scale. The conditions are the stationarity
    conditions of the strictly convex function
    ``a' G a / 2 + s' a - sum(log a)`` on ``a > 0``, so the solution is unique
    and damped Newton steps find it. The weights are returned normalised to mean 1 and
    capped at 10 times the mean.

    Parameters
    ----------
    gram : ndarray of shape (n_players, n_players)
        Gram matrix of the players' gradients.
    surplus : ndarray of shape (n_players,)
        Non-negative surpluses over the disagreement point.
    n_iter : int, default=30
        Most Newton steps; they stop once every ``alpha_c (s_c + (G alpha)_c)``
        is within 1e-9 of 1.
    init : array-like of shape (n_players,), default=None
        Starting point, e.g. the raw solution of the previous minibatch.
    return_raw : bool, default=False
        Also return the solution before normalisation and capping (to pass
        as ``init`` next time).

    Returns
    -------
    alpha : ndarray of shape (n_players,)
        Positive weights with mean 1.
    raw : ndarray of shape (n_players,)
        Only with ``return_raw``: the solution of the conditions.

    References
    ----------
    .. [1] A. Navon, A. Shamsian, I. Achituve, H. Maron, K. Kawaguchi,
       G. Chechik and E. Fetaya, "Multi-task learning as a bargaining game",
       ICML 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.multilabel import nash_bargaining_weights
    >>> G = np.diag([4.0, 1.0])  # orthogonal gradients with norms 2 and 1
    >>> w = nash_bargaining_weights(G, np.zeros(2))
    >>> np.round(w[1] / w[0], 3)  # equal shares: weights inverse to the norms
    np.float64(2.0)
    """
    G = np.array(gram, dtype=np.float64)
    s = np.clip(np.asarray(surplus, dtype=np.float64), 0, None)
    G /= max(G.diagonal().mean(), 1e-30)
    G[np.diag_indices_from(G)] += 1e-6

    def objective(a):
        return 0.5 * a @ G @ a + s @ a - np.log(a).sum()

    # The conditions are the stationarity conditions of the strictly convex
    # phi(a) = a'Ga / 2 + s'a - sum(log a) on a > 0: damped Newton steps,
    # from the previous solution when there is one. (NumPy: for these small
    # systems it is far faster than torch, on any device.)
    if init is None:
        alpha = 1.0 / (s + np.sqrt(G.diagonal()))
    else:
        alpha = np.clip(np.asarray(init, dtype=np.float64), 1e-12, None)
    value = objective(alpha)
    for _ in range(n_iter):
        grad = G @ alpha + s - 1.0 / alpha
        # Relative residual of alpha_c (s_c + (G alpha)_c) = 1.
        if np.abs(grad * alpha).max() < 1e-9:
            break
        hess = G + np.diag(1.0 / alpha**2)
        step = np.linalg.solve(hess, grad)
        # Largest step that keeps every weight positive, then backtracking.
        positive = step > 0
        t = min(1.0, (0.99 * alpha[positive] / step[positive]).min(initial=1.0))
        for _ in range(30):
            candidate = alpha - t * step
            new = objective(candidate)
            if new <= value:
                break
            t *= 0.5
        else:
            break
        alpha, value = candidate, new
    raw = alpha
    alpha = alpha / alpha.mean()
    # Cap at _NASH_MAX_RATIO times the mean, keeping the mean 1: weights at
    # the cap stay there while the others are rescaled (a few passes).
    for _ in range(len(alpha)):
        over = alpha > _NASH_MAX_RATIO
        if not over.any():
            break
        alpha[over] = _NASH_MAX_RATIO
        free = ~over & (alpha < _NASH_MAX_RATIO)
        budget = len(alpha) - alpha[~free].sum()
        if not free.any() or budget <= 0:
            alpha = np.full_like(alpha, 1.0)
            break
        alpha[free] *= budget / alpha[free].sum()
    return (alpha, raw) if return_raw else alpha


# --------------------------------------------------------------------------
# The network
# --------------------------------------------------------------------------

_NET_CLASS = []


def _build_net(n_features, hidden, widths, n_labels, read_mask):
    if not _NET_CLASS:
        _NET_CLASS.append(_define_net_class())
    return _NET_CLASS[0](n_features, hidden, widths, n_labels, read_mask)


def _define_net_class():
    torch = import_torch()
    nn = torch.nn

    class NBCGNet(nn.Module):
        """Shared trunk, coalition channels, masked label heads.

        ``channels`` maps the shared representation to one block of channels
        per coalition; label ``l`` reads the blocks its coalition's mask allows
        (``read_mask``, a fixed 0/1 buffer of shape (total width, n_labels)).
        Everything after the trunk is linear, so the gradient of each
        coalition's loss at the shared representation has a closed form.
        """

        def __init__(self, n_features, hidden, widths, n_labels, read_mask):
            super().__init__()
            layers, d = [], n_features
            for h in hidden:
                layers += [nn.Linear(d, h), nn.ReLU()]
                d = h
            self.trunk = nn.Sequential(*layers)
            self.channels = nn.Linear(d, int(sum(widths)), bias=False)
            self.heads = nn.Linear(int(sum(widths)), n_labels)
            self.register_buffer("read_mask", torch.as_tensor(read_mask).float())

        def readout(self):
            """Effective linear map from the shared representation to logits."""
            return self.channels.weight.T @ (self.heads.weight.T * self.read_mask)

        def forward(self, X):
            shared = self.trunk(X)
            z = self.channels(shared)
            logits = z @ (self.heads.weight.T * self.read_mask) + self.heads.bias
            return logits, shared

    return NBCGNet


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------


class NBCGClassifier(ClassifierMixin, MultiOutputMixin, TorchMixin, BaseEstimator):
    """Long-tailed multi-label classifier: Nash bargaining among label coalitions.

    NBCG [1]_ treats multi-label learning as a cooperative bargaining game among
    groups of labels. Frequent labels, and the labels that co-occur with them,
    otherwise dominate the shared representation and the gradient, so that rare
    labels are learned through shortcuts. Training has three stages:

    1. **Dependency structure.** A neural structural equation model over the
       training labels with a NOTEARS acyclicity constraint (see
       :func:`learn_label_graph`) gives ``label_graph_``, a weighted DAG.
    2. **Coalitions and masks.** The graph is cut into ``n_coalitions`` groups
       of strongly connected labels by spectral clustering of ``|A| + |A|^T``
       (``coalitions_``). The network gives each coalition its own block of
       ``channel_width`` channels per member label, computed from the shared
       representation; coalition ``c`` may read its own block and the blocks
       of its parent coalitions, those with an edge into ``c`` in the label
       graph (``masks_[c, d]``). Information thus flows along the learned
       dependencies, never against them nor between coalitions the graph
       leaves unconnected.
    3. **Bargaining.** The shared trunk (``hidden_layer_sizes``) is trained on
       the weighted sum ``sum_c alpha_c L_c`` of the coalitions' losses, with
       weights from the Nash bargaining solution (see
       :func:`nash_bargaining_weights`) over the coalitions' gradients at the
       shared representation and their surpluses over an adaptive
       disagreement point. The coalition loss ``L_c`` is the mean over its
       labels of the binary cross-entropy divided by the label's prior entropy,
       so that 1 is the loss of predicting each label's frequency, the natural
       disagreement point: what a coalition gets without the shared model. The
       disagreement point ``d_c`` starts at 1 and then trails the coalition's
       own loss, ``d_c <- d_c + r (L_c - d_c)`` at every step with
       ``r = disagreement_decay / n_batches`` (about an exponential average
       over ``1 / disagreement_decay`` epochs); the surplus is
       ``max(d_c - L_c, 0) / d_c``. A coalition whose loss lags its own recent
       history thus gets a larger share; ``disagreement_decay=0`` keeps the
       disagreement point at the prior loss.

    The weights are recomputed at every minibatch from a closed form of the
    coalitions' gradients at the shared representation (the layers after the
    trunk are linear), an upper-bound surrogate of the gradients on the shared
    parameters (as in MGDA-UB), so the step costs ``O(batch * n_labels^2 +
    width * n_labels^2 + n_coalitions^3)`` and no extra backward pass.

    For a 1-D ``y`` (exclusive classes) there is no dependency structure to
    learn: ``label_graph_`` is empty and the coalitions come from the spectral
    cut of a uniform graph.

    ``objective="sum"`` (plain linear scalarisation of the same coalition
    losses, all weights 1) and ``coalitions="random"`` (a random partition of
    the labels with the same coalition sizes) are the two ablations.

    Parameters
    ----------
    n_coalitions : "auto" or int, default="auto"
        Number of coalitions; "auto" uses ``ceil(sqrt(n_labels))``. Capped at
        the number of labels.
    coalitions : {"sem", "random"}, default="sem"
        "sem" cuts the learned label graph; "random" partitions the labels at
        random into groups of the same sizes (ablation).
    objective : {"nash", "sum"}, default="nash"
        "nash" weights the coalitions by the bargaining solution; "sum" gives
        every coalition weight 1 (ablation).
    hidden_layer_sizes : tuple of int, default=(256,)
        Widths of the shared trunk's hidden layers (ReLU). ``()`` makes the
        trunk the identity: the coalition channels are linear in the
        features, a structured linear model (the shared representation is
        then ``X`` itself).
    channel_width : int, default=8
        Channels per label in its coalition's block.
    disagreement_decay : float, default=0.1
        How fast the disagreement point follows each coalition's loss, per
        epoch; 0 keeps it at the loss of predicting the label frequencies.
    graph_l1 : float, default=0.005
        L1 penalty of the structural equation model.
    graph_threshold : float, default=0.3
        Smallest edge strength kept in ``label_graph_``.
    graph_max_iter : int, default=10
        Rounds of the structural equation model's augmented Lagrangian.
    threshold : float, default=0.5
        A label is predicted when its probability exceeds this value.
    alpha : float, default=1e-4
        L2 penalty (weight decay) of the network.
    batch_size : int or "auto", default=256
        Minibatch size; "auto" is ``min(200, n_samples)``.
    learning_rate_init : float, default=1e-3
        Adam's learning rate.
    max_iter : int, default=100
        Maximum number of epochs.
    tol : float, default=1e-4
        Training stops when the epoch loss has not improved by ``tol`` for
        ``n_iter_no_change`` epochs.
    n_iter_no_change : int, default=10
        See ``tol``.
    warm_start : bool, default=False
        Continue training the fitted network (same labels, graph and
        coalitions) instead of starting anew.
    device : str or torch.device, default="auto"
        "auto" (CUDA when available), "cpu", "cuda", "cuda:N" or "mps".
    random_state : int, RandomState instance or None, default=None
        Seeds the graph, the coalitions, the network and the minibatches.
    verbose : int, default=0
        ``>= 1`` shows a progress bar.

    Attributes
    ----------
    classes_ : ndarray
        ``arange(n_labels)`` for an indicator ``Y``; the class labels for a
        1-D ``y``.
    label_graph_ : ndarray of shape (n_labels, n_labels)
        Learned weighted DAG; ``label_graph_[i, j] > 0`` is an edge ``i -> j``.
    coalitions_ : list of ndarray
        Label indices of each coalition.
    masks_ : ndarray of shape (n_coalitions, n_coalitions), dtype=bool
        ``masks_[c, d]``: coalition ``c`` reads coalition ``d``'s channels.
    label_frequencies_ : ndarray of shape (n_labels,)
        Frequency of each label in the training data.
    disagreement_point_ : ndarray of shape (n_coalitions,)
        Final disagreement point of each coalition (relative loss units).
    bargaining_weights_ : ndarray of shape (n_epochs, n_coalitions)
        Mean bargaining weight of each coalition per epoch (all 1 for
        ``objective="sum"``).
    module_ : torch.nn.Module
        The fitted network (on the CPU).
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Mean relative coalition loss per epoch (the quantity early stopping
        watches; the gradient step is the bargaining-weighted one).
    device_ : str
        Device used for training.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``, when ``X`` has string column
        names.

    See Also
    --------
    sklearn.multioutput.ClassifierChain : Chained binary classifiers.
    sklearn.multiclass.OneVsRestClassifier : One binary classifier per label.

    Notes
    -----
    ``Y`` is a binary indicator matrix (dense or sparse); a 1-D ``y`` (or a
    single column) is single-label multiclass, one-hot encoded inside (each
    class a label), and then ``predict`` returns class labels and
    ``predict_proba`` each class's sigmoid normalised over the classes.
    For an indicator ``Y``, ``predict_proba`` returns one probability per label
    in an (n_samples, n_labels) array (not scikit-learn's list of per-label
    arrays), strictly inside (0, 1). Each label's weight (its prior entropy and
    its coalition's bargaining weight) scales both of its classes alike, so it
    changes how much the label shapes the shared representation, not the
    minimiser of the label's own loss.

    A label that never occurs (or always occurs) in ``Y`` carries no
    information: it raises a warning and is predicted at its training
    frequency. Rows of ``Y`` without any label are valid (negatives for every
    label); a warning reports how many there are. Sparse ``X`` (e.g. from
    ``TfidfVectorizer``) is densified one minibatch at a time.

    References
    ----------
    .. [1] "NBCG: Nash-bargained causal game for long-tailed multi-label NLP",
       ICML 2026.
    .. [2] A. Navon, A. Shamsian, I. Achituve, H. Maron, K. Kawaguchi,
       G. Chechik and E. Fetaya, "Multi-task learning as a bargaining game",
       ICML 2022.
    .. [3] X. Zheng, C. Dan, B. Aragam, P. Ravikumar and E. P. Xing, "Learning
       sparse nonparametric DAGs", AISTATS 2020.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_longtail_multilabel
    >>> from sklearn_ext.multilabel import NBCGClassifier
    >>> X, Y = make_longtail_multilabel(
    ...     n_samples=500, n_features=40, n_labels=8, random_state=0)
    >>> clf = NBCGClassifier(hidden_layer_sizes=(32,), max_iter=20,
    ...                      device="cpu", random_state=0).fit(X, Y)
    >>> clf.predict(X[:2]).shape, clf.predict_proba(X[:2]).shape
    ((2, 8), (2, 8))
    >>> len(clf.coalitions_), clf.label_graph_.shape
    (3, (8, 8))
    """

    _parameter_constraints: dict = {
        **TorchMixin._parameter_constraints,
        "n_coalitions": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "coalitions": [StrOptions({"sem", "random"})],
        "objective": [StrOptions({"nash", "sum"})],
        "hidden_layer_sizes": [tuple, list],
        "channel_width": [Interval(Integral, 1, None, closed="left")],
        "disagreement_decay": [Interval(Real, 0, 1, closed="both")],
        "graph_l1": [Interval(Real, 0, None, closed="left")],
        "graph_threshold": [Interval(Real, 0, None, closed="left")],
        "graph_max_iter": [Interval(Integral, 1, None, closed="left")],
        "threshold": [Interval(Real, 0, 1, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
    }

    _paper = (
        "NBCG: Nash-bargained causal game for long-tailed multi-label NLP, ICML 2026"
    )
    _bench_name = "nbcg"

    def __init__(
        self,
        *,
        n_coalitions="auto",
        coalitions="sem",
        objective="nash",
        hidden_layer_sizes=(256,),
        channel_width=8,
        disagreement_decay=0.1,
        graph_l1=0.005,
        graph_threshold=0.3,
        graph_max_iter=10,
        threshold=0.5,
        alpha=1e-4,
        batch_size=256,
        learning_rate_init=1e-3,
        max_iter=100,
        tol=1e-4,
        n_iter_no_change=10,
        warm_start=False,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.n_coalitions = n_coalitions
        self.coalitions = coalitions
        self.objective = objective
        self.hidden_layer_sizes = hidden_layer_sizes
        self.channel_width = channel_width
        self.disagreement_decay = disagreement_decay
        self.graph_l1 = graph_l1
        self.graph_threshold = graph_threshold
        self.graph_max_iter = graph_max_iter
        self.threshold = threshold
        self.alpha = alpha
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ helpers

    def _read_mask(self):
        """(total channel width, n_labels) 0/1 matrix: which channels a label reads."""
        n_labels = len(self.label_frequencies_)
        channel_width = self._architecture[1]
        widths = [channel_width * len(c) for c in self.coalitions_]
        starts = np.cumsum([0, *widths])
        mask = np.zeros((starts[-1], n_labels), dtype=np.float32)
        for c, labels in enumerate(self.coalitions_):
            for d in np.flatnonzero(self.masks_[c]):
                mask[starts[d] : starts[d + 1], labels] = 1.0
        return widths, mask

    def _build_module(self, attr):
        widths, mask = self._read_mask()
        n_labels = len(self.label_frequencies_)
        return _build_net(
            self.n_features_in_, self._architecture[0], widths, n_labels, mask
        )

    def _check_targets(self, y):
        """Indicator matrix and mode ("multilabel" or "multiclass") of the target."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None; pass Y, a binary indicator matrix (or 1-D class labels)."
            )
        if sp.issparse(y):
            y = y.toarray()
        y = np.asarray(y) if not isinstance(y, np.ndarray) else y
        kind = type_of_target(y, input_name="Y")
        if kind == "multilabel-indicator" and np.isin(y, (0, 1)).all():
            return y, "multilabel"
        if kind in ("binary", "multiclass"):
            return y.reshape(-1) if y.ndim == 2 else y, "multiclass"
        if kind == "unknown":
            kind = "unknown (Unknown label type)"
        if kind == "multilabel-indicator":
            kind = "indicator with values other than 0 and 1"
        raise ValueError(
            "Y must be a binary indicator matrix of shape (n_samples, n_labels) "
            "with values 0 and 1, or a 1-D array of class labels; got a target "
            f"of type {kind!r}"
            + (
                f" with values {np.unique(y)[:10].tolist()}."
                if np.asarray(y).dtype.kind in "biuf"
                else "."
            )
        )

    # ---------------------------------------------------------------- fit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y):
        """Learn the label graph and coalitions, then train by bargaining.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Features (e.g. TF-IDF or embeddings).
        Y : {array-like, sparse matrix} of shape (n_samples, n_labels) or (n_samples,)
            Binary indicator matrix, or 1-D class labels (single-label
            multiclass).

        Returns
        -------
        self : NBCGClassifier
            Fitted estimator.
        """
        torch = import_torch()
        warm = self.warm_start and hasattr(self, "module_")
        # A warm start keeps the fitted width: a different one is an error
        # raised before any fitted state changes.
        X = validate_data(
            self, X, accept_sparse="csr", dtype=np.float64, reset=not warm
        )
        Y, mode = self._check_targets(Y)
        if Y.shape[0] != X.shape[0]:
            raise ValueError(
                f"X and Y have different numbers of samples: X has {X.shape[0]}, "
                f"Y has {Y.shape[0]}."
            )
        hidden = self._hidden_layer_sizes()
        if mode == "multiclass":
            classes, codes = np.unique(Y, return_inverse=True)
            if len(classes) < 2:
                raise ValueError(
                    f"{type(self).__name__} needs samples of at least 2 classes in "
                    f"y; got 1 class ({classes[0]!r})."
                )
            T = np.zeros((len(Y), len(classes)))
            T[np.arange(len(Y)), codes.ravel()] = 1.0
            self._y_dtype = None
        else:
            classes = np.arange(Y.shape[1])
            T = Y.astype(np.float64)
            self._y_dtype = Y.dtype
        n_samples, n_labels = T.shape

        architecture = (
            hidden,
            self.channel_width,
            self.n_coalitions,
            self.coalitions,
            self.graph_l1,
            self.graph_threshold,
            self.graph_max_iter,
        )
        if warm and (
            self._mode != mode
            or len(self.classes_) != len(classes)
            or np.any(self.classes_ != classes)
            or self._architecture != architecture
        ):
            raise ValueError(
                "warm_start=True continues the fitted network, but the labels, "
                "the network or the graph and coalition parameters changed since "
                "that fit; set warm_start=False."
            )
        self._mode = mode
        self.classes_ = classes
        freq = T.mean(axis=0)
        if mode == "multilabel":
            self._warn_degenerate(T, freq)

        rng = check_random_state(self.random_state)
        if not warm:
            self._architecture = architecture
            self.label_frequencies_ = freq
            seed = rng.randint(np.iinfo(np.int32).max)
            if mode == "multiclass":
                # Exclusive classes: no dependency structure to learn.
                self.label_graph_ = np.zeros((n_labels, n_labels))
            else:
                self.label_graph_ = learn_label_graph(
                    T,
                    l1=self.graph_l1,
                    threshold=self.graph_threshold,
                    max_iter=self.graph_max_iter,
                    random_state=seed,
                )
            K = (
                _auto_coalitions(n_labels)
                if self.n_coalitions == "auto"
                else min(self.n_coalitions, n_labels)
            )
            assign = _partition_labels(
                self.label_graph_, K, rng.randint(np.iinfo(np.int32).max)
            )
            if self.coalitions == "random":
                assign = assign[rng.permutation(n_labels)]
            K = int(assign.max()) + 1
            self.coalitions_ = [np.flatnonzero(assign == c) for c in range(K)]
            self.masks_ = _coalition_masks(self.label_graph_, assign, K)
        else:
            rng.randint(np.iinfo(np.int32).max, size=2)
        K = len(self.coalitions_)

        ctx = self._torch_context()
        if warm:
            module = self.module_
        else:
            module = init_parameters(self._build_module("module_"), ctx.generator)
            p = np.clip(self.label_frequencies_, 1e-4, 1 - 1e-4)
            with torch.no_grad():  # start from the prior: logit of the frequencies
                module.heads.bias.copy_(torch.as_tensor(np.log(p / (1 - p))))
        module = module.to(ctx.device)

        dense = not sp.issparse(X)
        X_dev = to_tensor(X, dtype=ctx.dtype, device=ctx.device) if dense else X
        T_dev = to_tensor(T, dtype=ctx.dtype, device=ctx.device)
        member = np.zeros((n_labels, K))
        for c, labels in enumerate(self.coalitions_):
            member[labels, c] = 1.0
        sizes = member.sum(0)
        inv_h = 1.0 / _entropy(self.label_frequencies_)
        # d(L_c)/d(logit_l) = (p - y) * label_scale_l / batch for l in c.
        label_scale = to_tensor(
            inv_h / sizes[member.argmax(1)], dtype=ctx.dtype, device=ctx.device
        )
        member_t = to_tensor(member, dtype=ctx.dtype, device=ctx.device)
        disagreement = (
            to_tensor(self.disagreement_point_, dtype=ctx.dtype, device=ctx.device)
            if warm
            else torch.ones(K, dtype=ctx.dtype, device=ctx.device)
        )
        n_batches = len(batch_bounds(n_samples, self._batch_size(n_samples)))
        rate = self.disagreement_decay / n_batches
        nash = self.objective == "nash"
        step_weights = []

        previous = None

        def batch_loss(idx):
            nonlocal disagreement, previous
            if dense:
                xb = X_dev[idx]
            else:
                xb = to_tensor(
                    X[idx.cpu().numpy()].toarray(), dtype=ctx.dtype, device=ctx.device
                )
            yb = T_dev[idx]
            logits, _ = module(xb)
            bce = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, yb, reduction="none"
            )
            per_label = bce.mean(0) * label_scale  # already divided by |c|
            losses = per_label @ member_t  # (K,) relative coalition losses
            with torch.no_grad():
                if nash:
                    E = (torch.sigmoid(logits) - yb) * label_scale / len(idx)
                    U = module.readout()
                    pair = (E.T @ E) * (U.T @ U)  # (L, L)
                    gram = member_t.T @ pair @ member_t
                    surplus = (disagreement - losses).clamp_min(0) / disagreement
                    weights, previous = nash_bargaining_weights(
                        gram.double().cpu().numpy(),
                        surplus.double().cpu().numpy(),
                        init=previous,
                        return_raw=True,
                    )
                    weights = torch.as_tensor(weights).to(losses)
                else:
                    weights = torch.ones_like(losses)
                disagreement = disagreement + rate * (losses - disagreement)
                step_weights.append(weights)
            weighted = (weights * losses).sum() / K
            # Report the unweighted mean coalition loss (for early stopping);
            # the gradient is the bargaining-weighted one.
            return weighted + (losses.sum() / K - weighted).detach()

        optimizer = torch.optim.Adam(
            module.parameters(), lr=self.learning_rate_init, weight_decay=self.alpha
        )
        self._train({"module_": module}, batch_loss, n_samples, ctx, optimizer)
        self.disagreement_point_ = disagreement.double().cpu().numpy()
        per_step = torch.stack(step_weights).double().cpu().numpy()
        epochs = per_step[: len(per_step) // n_batches * n_batches]
        epochs = epochs.reshape(-1, n_batches, K).mean(1)
        if warm and hasattr(self, "bargaining_weights_"):
            epochs = np.vstack([self.bargaining_weights_, epochs])
        self.bargaining_weights_ = epochs
        return self

    def _warn_degenerate(self, T, freq):
        constant = np.flatnonzero((freq == 0) | (freq == 1))
        if constant.size:
            never = np.flatnonzero(freq == 0)
            always = np.flatnonzero(freq == 1)
            parts = []
            if never.size:
                parts.append(f"never occur: labels {never.tolist()[:20]}")
            if always.size:
                parts.append(f"always occur: labels {always.tolist()[:20]}")
            warnings.warn(
                "Some labels of Y carry no information and will be predicted at "
                f"their training frequency ({'; '.join(parts)}). Drop them, or "
                "use a split that contains both classes of every label.",
                UserWarning,
                stacklevel=3,
            )
        empty = int((T.sum(1) == 0).sum())
        if empty:
            warnings.warn(
                f"{empty} of {T.shape[0]} rows of Y have no label; they are used "
                "as negatives for every label.",
                UserWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------ predict

    def _logits(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        logits = self._predict_batches(lambda module, xb: module(xb)[0], X)
        # Snap round-off around 0, so that predict, predict_proba and
        # decision_function agree exactly at the 0.5 boundary.
        logits[np.abs(logits) < 1e-12] = 0.0
        return logits

    def decision_function(self, X):
        """Logit of every label.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Features.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_labels) or (n_samples,)
            Logits; for an indicator ``Y`` a label is predicted when its logit
            exceeds ``logit(threshold)``. For a 1-D ``y``, each class's
            log-sigmoid (with two classes, the second's minus the first's).
        """
        logits = self._logits(X)
        if self._mode == "multiclass":
            # Each class was trained as its own sigmoid; the scores are their
            # log-probabilities, consistent with predict_proba's normalisation.
            log_p = -np.logaddexp(0.0, -logits)
            if logits.shape[1] == 2:
                return log_p[:, 1] - log_p[:, 0]
            return log_p
        # Bounded like predict_proba's clipping, so both rank samples alike.
        eps = np.finfo(np.float64).eps
        bound = np.log((1 - eps) / eps)
        return np.clip(logits, -bound, bound)

    def predict_proba(self, X):
        """Probability of every label.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Features.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_labels)
            For an indicator ``Y``, independent per-label probabilities strictly
            inside (0, 1); for a 1-D ``y``, each class's sigmoid normalised
            over the classes (rows sum to 1).
        """
        logits = self._logits(X)
        eps = np.finfo(np.float64).eps
        if self._mode == "multiclass":
            # One-vs-rest: each class's sigmoid, normalised over the classes.
            p = 1.0 / (1.0 + np.exp(-logits))
            return p / p.sum(axis=1, keepdims=True)
        return np.clip(1.0 / (1.0 + np.exp(-logits)), eps, 1 - eps)

    def predict(self, X):
        """Predicted labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Features.

        Returns
        -------
        Y : ndarray of shape (n_samples, n_labels) or (n_samples,)
            Indicator matrix (in the dtype of the training ``Y``) for an
            indicator ``Y``; class labels for a 1-D ``y``.
        """
        proba = self.predict_proba(X)
        if self._mode == "multiclass":
            return self.classes_[proba.argmax(axis=1)]
        return (proba > self.threshold).astype(self._y_dtype)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.input_tags.sparse = True
        return tags

    # --------------------------------------------------- harness contract

    @classmethod
    def _get_test_params(cls):
        return {
            "hidden_layer_sizes": (16,),
            "max_iter": 30,
            "learning_rate_init": 1e-2,
            "device": "cpu",
        }

    @classmethod
    def _make_test_data(cls, n_samples, random_state):
        from sklearn_ext.datasets import make_longtail_multilabel

        return make_longtail_multilabel(
            n_samples=n_samples,
            n_features=20,
            n_labels=6,
            max_frequency=0.5,
            random_state=random_state,
        )

    @classmethod
    def _gpu_check_params(cls):
        params = {
            "hidden_layer_sizes": (1024, 1024),
            "batch_size": 1024,
            "max_iter": 10,
            "tol": 0.0,
            "n_iter_no_change": 11,
        }
        return params, 50_000

    @classmethod
    def _demo(cls):
        """Long-tailed labels with a shortcut: tail macro-F1 on the shifted test."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import f1_score
        from sklearn.multiclass import OneVsRestClassifier

        from sklearn_ext.datasets import make_longtail_multilabel

        X, Y, X_test, Y_test, info = make_longtail_multilabel(
            n_samples=4000,
            n_features=200,
            signal=2.0,
            n_test=4000,
            return_structure=True,
            random_state=0,
        )
        tail = info.tail

        def tail_f1(model):
            pred = model.fit(X, Y).predict(X_test)
            return f1_score(
                Y_test[:, tail], pred[:, tail], average="macro", zero_division=0
            )

        return {
            "data": "make_longtail_multilabel, shifted test split",
            "metric": "tail-label macro-F1",
            "score": tail_f1(cls(random_state=0)),
            "baseline": "one-vs-rest logistic regression",
            "baseline_score": tail_f1(
                OneVsRestClassifier(LogisticRegression(max_iter=1000))
            ),
        }
