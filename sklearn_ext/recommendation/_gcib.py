"""GCIB: multi-behaviour recommendation with a graph information bottleneck."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils.validation import check_non_negative

from sklearn_ext.base import TorchMixin
from sklearn_ext.recommendation._ease import ease_weights
from sklearn_ext.recommendation._ranking import ranking_metrics, top_k_items
from sklearn_ext.utils._messages import warn
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import adam, import_torch, to_numpy

__all__ = ["GCIBRecommender"]

# Users and items contrasted per step (a random subset of the batch's).
_CONTRAST_SIZE = 512
# Users scored at once by recommend, score and predict_scores' callers.
_SCORE_BATCH = 1024
# The scorer weighs an auxiliary interaction by its keep probability to this
# power: it sharpens the mask (chosen on make_multibehavior's seed 100, never
# on the benchmark's seeds).
_KEEP_POWER = 4


def _csr(X):
    """A float64 CSR copy of X with explicit zeros dropped."""
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.eliminate_zeros()
    X.sort_indices()
    return X


def _pack(matrix):
    """A CSR matrix as plain arrays (skops trusts numpy arrays, not scipy's)."""
    matrix = sp.csr_matrix(matrix)
    return (matrix.data, matrix.indices, matrix.indptr, np.asarray(matrix.shape))


def _unpack(arrays):
    data, indices, indptr, shape = arrays
    return sp.csr_matrix((data, indices, indptr), shape=tuple(int(n) for n in shape))


class GCIBRecommender(TransformerMixin, TorchMixin, BaseEstimator):
    """Multi-behaviour recommender with a graph information bottleneck (GCIB).

    Auxiliary behaviours (views, carts) ease the sparsity of the target
    behaviour (purchases), but their graphs carry noisy interactions. GCIB
    learns which auxiliary edges to keep (a graph information bottleneck
    trained with a cross-behaviour contrast) and scores items from the
    denoised interactions with a closed-form item-item model:

    - **Scorer.** The denoised matrix counts a target interaction 1 and an
      auxiliary one its keep probability to the fourth power (the largest over
      the behaviours that hold the pair; the power sharpens the mask). EASE
      [3]_, the ridge regression of each item on the user's other items
      (penalty ``l2_reg``, closed form), over that matrix gives the scores:
      ``user_embeddings_`` are the users' denoised rows and
      ``item_embeddings_`` the item-item weights (transposed), so
      ``user_embeddings_ @ item_embeddings_.T`` are the scores. The graph
      model below is what learns the mask.

    - **Two views on shared embeddings.** Layer-0 user and item embeddings are
      propagated by LightGCN (``n_layers`` sparse products with the
      symmetrically normalised bipartite graph, layers averaged) over the
      target graph (the target view) and over the auxiliary graph (all
      auxiliary behaviours together; the auxiliary view). A user-item score
      is the sum of the two views' dot products.
    - **Structure-level bottleneck.** Every auxiliary edge (u, i) of behaviour
      b has a keep probability ``sigmoid(w_b . (h_u * h_i) + c_b + a_i)``
      where ``h_i`` are the (detached) target-view item embeddings side by
      side with the whole auxiliary graph's LightGCN item embeddings, ``h_u``
      one normalised hop from those over the user's own interactions (target,
      then auxiliary; so a new user's row is masked by the same function),
      and ``a_i`` a learned
      trust of item i's auxiliary edges (clickbait items earn a low one): an
      edge survives as far as its ends agree. The auxiliary view propagates
      over the graph weighted by the mask (degrees recomputed from the
      weights), sampled in training from a binary-concrete relaxation
      (temperature 0.5) and equal to the keep probability afterwards. The
      graph information bottleneck keeps the information the denoised graph
      shares with the target graph: a BPR loss on target edges of the
      auxiliary view alone, plus the direct evidence of the pair's own kept
      edges (``sum_b gamma_b keep_{u,i,b}``, learned ``gamma``; this term
      only, not the final score), a lower bound on that mutual information up
      to constants. It drops the rest of the original auxiliary graph:
      ``beta`` times the KL divergence of each edge's keep distribution from
      a Bernoulli(``keep_prior``) prior, a variational upper bound on the
      information the mask keeps about the original graph. The auxiliary
      view also learns from its own edges: a BPR term on a sample of
      auxiliary edges (one pass per epoch), each weighted by its current keep
      probability.
    - **Feature-level contrast.** InfoNCE (``temperature``) between the
      target-view and the auxiliary-view embedding of the same user, and of
      the same item, against the other users (items) of the batch, weighted
      by ``contrast_weight``.
    - The graph's main loss is BPR on target interactions with one uniformly drawn
      negative item each; ``alpha`` is the L2 penalty on the layer-0
      embeddings of the batch. Training runs the package's minibatch loop over
      the target interactions, each step propagating the whole graph (sparse
      CSR products; no dense users x items matrix is formed).

    Parameters
    ----------
    n_components : int, default=64
        Embedding dimension of each view of the graph model.
    behaviors : int or sequence of str, default=None
        The column blocks of X, each ``n_items`` wide: a number of blocks, or
        their names in order. None means one block: X holds the target
        behaviour only and the model is LightGCN.
    target : str or int, default=None
        The target block, by name or position; None means the last one (the
        bottom of a view -> cart -> buy funnel).
    n_layers : int, default=2
        LightGCN propagation layers.
    beta : float, default=0.01
        Weight of the bottleneck's compression term (KL of the keep
        probabilities from the prior).
    keep_prior : float, default=0.5
        Prior keep probability of an auxiliary edge.
    contrast_weight : float, default=0.1
        Weight of the cross-behaviour InfoNCE terms; 0 turns the contrast off.
    temperature : float, default=0.2
        InfoNCE temperature.
    auxiliary : {"denoised", "all", "none"}, default="denoised"
        How the auxiliary behaviours enter: through the learned mask (GCIB),
        with every edge kept at weight 1 (no bottleneck: EASE on the merged
        matrix), or not at all (EASE on the target block). The last two are
        the ablations.
    alpha : float, default=1e-4
        L2 penalty on the batch's layer-0 embeddings.
    l2_reg : float, default=100.0
        Ridge penalty of the EASE scorer; it grows with the number of users
        (the Gram matrix's scale). Refitting at another value refits the
        mask too; ``benchmarks/bench_gcib.py`` shows how to choose it on a
        validation split from one fit of the mask.
    batch_size : int or "auto", default="auto"
        Target interactions per step; "auto" takes an eighth of them (at least
        1024), so that an epoch is about eight propagations of the graph.
    learning_rate_init : float, default=0.01
        Adam's learning rate.
    max_iter : int, default=100
        Maximum number of epochs (passes over the target interactions).
    tol : float, default=1e-2
        Training stops when the epoch loss has not improved by ``tol`` for
        ``n_iter_no_change`` epochs.
    n_iter_no_change : int, default=10
        Epochs without improvement before training stops.
    warm_start : bool, default=False
        Continue the previous fit's network and optimiser (same data shape).
    random_state : int, RandomState instance or None, default=None
        Initialisation, minibatch order, negatives and mask noise.
    device : str or torch.device, default="auto"
        "auto" uses CUDA when available.
    verbose : int, default=0
        ``>= 1`` shows a progress bar.

    Attributes
    ----------
    n_users_ : int
        Rows of the training matrix.
    n_items_ : int
        Width of each behaviour block.
    behaviors_ : list of str
        Block names (``"behavior_0"``, ... when ``behaviors`` is a number).
    target_index_ : int
        Position of the target block.
    user_embeddings_ : ndarray of shape (n_users, n_items)
        The training users' denoised rows (what ``transform`` gives for
        their rows).
    item_embeddings_ : ndarray of shape (n_items, n_items)
        The scorer's item-item weights, transposed;
        ``user_embeddings_ @ item_embeddings_.T`` are the scores.
    edge_keep_prob_ : scipy.sparse.csr_matrix of shape (n_users, n_features_in)
        The learned keep probability of every auxiliary interaction, at its
        position in X (the target block is empty), from the user's row as
        ``transform`` computes it; 1 for
        ``auxiliary="all"``, 0 for ``auxiliary="none"``.
    seen_ : scipy.sparse.csr_matrix of shape (n_users, n_items)
        The training target interactions (left out by ``recommend`` and
        ``score``).
    module_ : torch.nn.Module
        The fitted network (kept for ``warm_start``).
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Loss per epoch.
    device_ : str
        The device the fit ran on.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in,)
        Defined when X has string column names.

    See Also
    --------
    sklearn.decomposition.TruncatedSVD : PureSVD, a plain baseline on X.

    Notes
    -----
    Input: X is the user x (items x behaviours) interaction matrix, dense or
    scipy sparse, non-negative; an entry > 0 is an interaction and its value
    is not used. Rows are users; ``predict_scores`` and ``recommend`` refer
    to the training users by row index, or score any rows with
    ``recommend(..., user_items=rows, recalculate_user=True)``.
    ``transform(X)`` gives any rows' denoised interactions (new users too):
    the mask reads a user from its own row only, so a training user's row
    given anew is scored exactly as fitted, without refitting. ``score``
    accepts held-out interactions of the training users, or rows of any
    users (leave-one-out; what ``GridSearchCV`` over users needs). The
    scorer holds an n_items x n_items matrix: memory grows with the square of
    the number of items. A user without any interaction is recommended the
    most popular target items (with a warning). ``sample_weight`` is not
    supported: see ``_no_sample_weight``.

    References
    ----------
    .. [1] Wu, L., Chen, Z., Zhang, J., Zhu, S., Ge, Y., Yang, H. and Zhang,
       L. "GCIB: Graph Contrastive Information Bottleneck for Multi-Behavior
       Recommendation", ICML 2026.
    .. [2] He, X., Deng, K., Wang, X., Li, Y., Zhang, Y. and Wang, M.
       "LightGCN: Simplifying and Powering Graph Convolution Network for
       Recommendation", SIGIR 2020.
    .. [3] Steck, H. "Embarrassingly Shallow Autoencoders for Sparse Data",
       WWW 2019.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_multibehavior
    >>> from sklearn_ext.recommendation import GCIBRecommender
    >>> data = make_multibehavior(300, 200, random_state=0)
    >>> model = GCIBRecommender(
    ...     16, behaviors=data.behaviors, max_iter=5, random_state=0
    ... ).fit(data.data)
    >>> ids, scores = model.recommend([0, 1], N=3)
    >>> ids.shape
    (2, 3)
    >>> model.similar_items(0, N=3)[0].shape
    (3,)
    >>> 0.0 <= model.score(data.test) <= 1.0
    True
    """

    _parameter_constraints: dict = {
        **TorchMixin._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "behaviors": [None, Interval(Integral, 1, None, closed="left"), "array-like"],
        "target": [None, str, Interval(Integral, None, None, closed="neither")],
        "n_layers": [Interval(Integral, 0, None, closed="left")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "keep_prior": [Interval(Real, 0, 1, closed="neither")],
        "contrast_weight": [Interval(Real, 0, None, closed="left")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "auxiliary": [StrOptions({"denoised", "all", "none"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "l2_reg": [Interval(Real, 0, None, closed="neither")],
    }

    _paper = (
        "GCIB: Graph Contrastive Information Bottleneck for Multi-Behavior "
        "Recommendation, ICML 2026"
    )
    _bench_name = "gcib"
    _no_sample_weight = (
        "the loss is a sum over interactions of a graph whose degree "
        "normalisation couples the users, so a weighted user is not a repeated "
        "row; weigh interactions by repeating them in X is not possible either "
        "(values are binarised)"
    )

    def __init__(
        self,
        n_components=64,
        *,
        behaviors=None,
        target=None,
        n_layers=2,
        beta=0.01,
        keep_prior=0.5,
        contrast_weight=0.1,
        temperature=0.2,
        auxiliary="denoised",
        alpha=1e-4,
        l2_reg=100.0,
        batch_size="auto",
        learning_rate_init=0.01,
        max_iter=100,
        tol=1e-2,
        n_iter_no_change=10,
        warm_start=False,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.n_components = n_components
        self.behaviors = behaviors
        self.target = target
        self.n_layers = n_layers
        self.beta = beta
        self.keep_prior = keep_prior
        self.contrast_weight = contrast_weight
        self.temperature = temperature
        self.auxiliary = auxiliary
        self.alpha = alpha
        self.l2_reg = l2_reg
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    # ------------------------------------------------------------ input

    def _parse_behaviors(self, n_features):
        """Block names, block width and the target position."""
        if self.behaviors is None:
            names = ["target"]
        elif isinstance(self.behaviors, Integral):
            names = [f"behavior_{b}" for b in range(int(self.behaviors))]
        else:
            names = list(self.behaviors)
            if not names or not all(isinstance(n, str) for n in names):
                raise ValueError(
                    "behaviors must be a number of blocks or a non-empty sequence "
                    f"of names (str); got {self.behaviors!r}."
                )
            if len(set(names)) != len(names):
                raise ValueError(f"behaviors has duplicate names: {names}.")
        n_blocks = len(names)
        if n_features % n_blocks:
            raise ValueError(
                f"The {n_blocks} behaviors {names} do not tile the {n_features} "
                f"columns of X: each behavior is a block of n_items columns, so "
                f"the width must be a multiple of {n_blocks}."
            )
        if self.target is None:
            target = n_blocks - 1
        elif isinstance(self.target, str):
            if self.target not in names:
                raise ValueError(
                    f"target={self.target!r} is not among the behaviors {names}."
                )
            target = names.index(self.target)
        else:
            target = int(self.target)
            if not -n_blocks <= target < n_blocks:
                raise ValueError(
                    f"target={self.target} is out of range for {n_blocks} behaviors."
                )
            target %= n_blocks
        return names, n_features // n_blocks, target

    def _check_X(self, X, *, reset):
        X = validate_data(
            self,
            X,
            accept_sparse=("csr", "csc", "coo"),
            dtype=(np.float64, np.float32),
            reset=reset,
        )
        check_non_negative(X, f"{type(self).__name__} (input X)")
        return _csr(X)

    def _blocks(self, X):
        """(target block, auxiliary edges (users, items, behaviour), aux columns)."""
        n_items, t = self.n_items_, self.target_index_
        target = X[:, t * n_items : (t + 1) * n_items]
        target.data[:] = 1.0
        coo = X.tocoo()
        block = coo.col // n_items
        aux = block != t
        # Behaviour index among the auxiliary blocks (0 .. n_blocks - 2).
        aux_block = block[aux] - (block[aux] > t)
        return target, (coo.row[aux], coo.col[aux] % n_items, aux_block), coo.col[aux]

    # ---------------------------------------------------------------- fit

    def _graph(self, users, items, n_users, n_items, device):
        from sklearn_ext.recommendation._gcib_nn import BipartiteGraph

        torch = import_torch()
        order = np.lexsort((items, users))
        return BipartiteGraph(
            torch.as_tensor(users[order], dtype=torch.long, device=device),
            torch.as_tensor(items[order], dtype=torch.long, device=device),
            n_users,
            n_items,
        ), order

    def _build_module(self, attr="module_"):
        from sklearn_ext.recommendation._gcib_nn import GCIBNet

        return GCIBNet(
            self.n_users_, self.n_items_, self.n_components, len(self.behaviors_) - 1
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the embeddings and the auxiliary-edge mask from X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items * n_behaviors)
            Non-negative interactions; blocks as ``behaviors`` says.
        y : None
            Ignored.

        Returns
        -------
        self : GCIBRecommender
            Fitted estimator.
        """
        from sklearn_ext.recommendation._gcib_nn import (
            GCIBNet,
            gcib_batch_loss,
            pair_lookup,
        )

        torch = import_torch()
        X = self._check_X(X, reset=True)
        names, n_items, target = self._parse_behaviors(X.shape[1])
        self.behaviors_, self.n_items_, self.target_index_ = names, n_items, target
        self.n_users_ = n_users = X.shape[0]
        T, (au, ai, ab), aux_cols = self._blocks(X)
        if T.nnz == 0:
            raise ValueError(
                f"X has no interaction in its target block {names[target]!r}: "
                "there is nothing to learn the target behaviour from."
            )
        mode = self.auxiliary if au.size else "none"
        context = self._torch_context(size=X.nnz * self.n_components, min_size=1e7)
        device = context.device
        tu, ti = T.nonzero()
        target_graph, _ = self._graph(tu, ti, n_users, n_items, device)
        aux_graph, aux_order, aux_behavior = None, None, None
        if mode != "none":
            aux_graph, aux_order = self._graph(au, ai, n_users, n_items, device)
            sorted_behavior = ab[aux_order]
            # One 0/1 float mask over the (sorted) auxiliary edges per behaviour.
            aux_behavior = [
                torch.as_tensor(
                    sorted_behavior == b, dtype=torch.float32, device=device
                )
                for b in range(len(names) - 1)
            ]

        n_aux = len(names) - 1
        net = self._fitted_module(
            {
                "n_users": n_users,
                "n_items": n_items,
                "n_components": self.n_components,
                "n_aux": n_aux,
            }
        )
        if net is None:
            from sklearn_ext.utils._torch import init_parameters

            net = init_parameters(
                GCIBNet(n_users, n_items, self.n_components, n_aux), context.generator
            )
        net = net.to(device=device, dtype=torch.float32).train()

        pos_users = torch.as_tensor(tu, dtype=torch.long, device=device)
        pos_items = torch.as_tensor(ti, dtype=torch.long, device=device)
        params = {
            "beta": self.beta,
            "keep_prior": self.keep_prior,
            "contrast_weight": self.contrast_weight if mode != "none" else 0.0,
            "temperature": self.temperature,
            "alpha": self.alpha,
            "emb": (net.user_emb, net.item_emb),
            "aux_ends": (aux_graph.users, aux_graph.items) if aux_graph else None,
        }
        generator = context.generator

        def subset(idx):
            idx = torch.unique(idx)
            if idx.numel() > _CONTRAST_SIZE:
                pick = torch.randperm(idx.numel(), generator=generator)
                idx = idx[pick[:_CONTRAST_SIZE].to(idx.device)]
            return idx

        if mode == "denoised":
            # Sorted (user, item) keys of the auxiliary edges, for pair_lookup.
            keys = aux_graph.users * n_items + aux_graph.items
            max_dup = max(n_aux, 1)

        def batch_loss(idx):
            users, pos = pos_users[idx], pos_items[idx]
            neg = torch.randint(n_items, (idx.numel(),), generator=generator)
            neg = neg.to(device)
            lookups = None
            if mode == "denoised":
                lookups = (
                    pair_lookup(keys, users, pos, n_items, max_dup),
                    pair_lookup(keys, users, neg, n_items, max_dup),
                )
            views = net(
                target_graph,
                aux_graph,
                aux_behavior,
                self.n_layers,
                mode=mode,
                generator=generator,
            )
            contrast = (subset(users), subset(pos)) if mode != "none" else None
            aux_batch = None
            if aux_graph is not None:
                # One pass over the auxiliary edges per epoch, in expectation.
                size = (math.ceil(aux_graph.n_edges * idx.numel() / tu.size),)
                edges = torch.randint(aux_graph.n_edges, size, generator=generator)
                aux_neg = torch.randint(n_items, size, generator=generator)
                aux_batch = (edges.to(device), aux_neg.to(device))
            return gcib_batch_loss(
                views, users, pos, neg, params, contrast, lookups, aux_batch
            )

        optimizer = adam(net.parameters(), lr=self.learning_rate_init)
        self._train({"module_": net}, batch_loss, tu.size, context, optimizer)
        self._store_embeddings(
            target_graph, aux_graph, aux_behavior, aux_order, mode, device, au.size
        )
        keep = self._keep_values
        self._edge_keep = _pack(sp.csr_matrix((keep, (au, aux_cols)), shape=X.shape))
        # Auxiliary item degrees, for the mask's fold-in of a row.
        self._aux_degree_all = np.bincount(ai, minlength=n_items).astype(float)
        self._seen = _pack(T)
        liked = X[:, :n_items]
        for b in range(1, len(names)):
            liked = liked + X[:, b * n_items : (b + 1) * n_items]
        self._any_seen = _pack(sp.csr_matrix(liked))
        self._active_users = np.flatnonzero(np.diff(X.indptr) > 0)
        self._popularity = np.asarray(T.sum(axis=0)).ravel()
        if mode == "denoised":
            # The same function of the row as for a user folded in (float64).
            keep = self._fold_in_keep(T, au, ai, ab)
            self._keep_values = keep
            self._edge_keep = _pack(
                sp.csr_matrix((keep, (au, aux_cols)), shape=X.shape)
            )
        rows = self._denoised_rows(T, au, ai, ab, keep)
        self.item_embeddings_ = ease_weights(rows, self.l2_reg).T
        self.user_embeddings_ = rows.toarray()
        return self

    def _batch_size(self, n_samples):
        if self.batch_size == "auto":
            return min(n_samples, max(1024, math.ceil(n_samples / 8)))
        return min(self.batch_size, n_samples)

    def _store_embeddings(
        self, target, aux, aux_behavior, aux_order, mode, device, n_aux
    ):
        """The mask's fitted pieces (item features, weights) and keep probabilities."""
        torch = import_torch()
        net = self.module_.to(device)
        with torch.no_grad():
            views = net(target, aux, aux_behavior, self.n_layers, mode=mode)
        # The mask's target-view item features.
        self._items_t = to_numpy(views["items_t"])
        self._mode = mode
        self._mask_weight = to_numpy(net.mask_weight)
        self._mask_bias = to_numpy(net.mask_bias)
        if mode == "denoised":
            keep = np.empty(n_aux)
            keep[aux_order] = to_numpy(views["keep"])
        else:
            keep = np.full(n_aux, 1.0 if mode == "all" else 0.0)
        self._keep_values = keep

        if mode == "denoised":
            # The mask's item features: the whole auxiliary graph's view.
            with torch.no_grad():
                _, items_full = aux.propagate(
                    aux.normalized_values(), net.user_emb, net.item_emb, self.n_layers
                )
            self._items_full = to_numpy(items_full)
            self._mask_item_bias = to_numpy(net.mask_item_bias)
        self.module_ = net.to("cpu").eval()

    @property
    def edge_keep_prob_(self):
        """Keep probability of every auxiliary interaction, shaped like X (csr)."""
        check_is_fitted(self)
        return _unpack(self._edge_keep)

    @property
    def seen_(self):
        """The training target interactions, (n_users, n_items) csr."""
        check_is_fitted(self)
        return _unpack(self._seen)

    # ------------------------------------------------------- inference

    def _fold_in(self, adjacency, items, item_degree):
        """Degree-normalised sums of item embeddings over each row's edges."""
        row_degree = np.asarray(adjacency.sum(axis=1)).ravel()
        scale = 1.0 / np.sqrt(np.maximum(row_degree, 1e-12))
        col_scale = 1.0 / np.sqrt(np.maximum(item_degree, 1.0))
        return np.asarray(sp.diags(scale) @ (adjacency @ (col_scale[:, None] * items)))

    def _fold_in_keep(self, T, au, ai, ab):
        """Keep probabilities of auxiliary edges (au, ai, ab) of rows folded in.

        The mask's user features are folded in from the rows alone (the
        degree-normalised sums of the fitted item embeddings of the target
        view over the row's target interactions, and of the whole auxiliary
        graph's view over its auxiliary interactions); its item features and
        weights are the fitted ones.
        """
        if self._mode != "denoised":
            return np.full(au.size, 1.0 if self._mode == "all" else 0.0)
        if not au.size:
            return np.zeros(0)
        n_rows = T.shape[0]
        items_t = self._items_t
        deg_t = np.asarray(self.seen_.sum(axis=0)).ravel()
        users_t = self._fold_in(T, items_t, deg_t)
        A_all = sp.csr_matrix(
            (np.ones(au.size), (au, ai)), shape=(n_rows, self.n_items_)
        )
        users_f = self._fold_in(A_all, self._items_full, self._aux_degree_all)
        d = self.n_components
        W = self._mask_weight[ab]
        logits = (
            np.einsum("ed,ed,ed->e", users_t[au], items_t[ai], W[:, :d])
            + np.einsum("ed,ed,ed->e", users_f[au], self._items_full[ai], W[:, d:])
            + self._mask_bias[ab]
            + self._mask_item_bias[ai]
        )
        return 1.0 / (1.0 + np.exp(-logits))

    def _denoised_rows(self, T, au, ai, ab, keep):
        """The denoised behaviour matrix: (n_rows, n_items) csr.

        A target interaction counts 1; an auxiliary one its keep probability
        (the largest over the behaviours that hold the pair).
        """
        shape = (T.shape[0], self.n_items_)
        rows = sp.csr_matrix(T, dtype=np.float64, copy=True)
        for b in np.unique(ab):
            on = ab == b
            weight = keep[on] ** _KEEP_POWER
            rows = rows.maximum(sp.csr_matrix((weight, (au[on], ai[on])), shape=shape))
        rows = sp.csr_matrix(rows)
        rows.eliminate_zeros()
        return rows

    def transform(self, X):
        """Each row's denoised interactions: the users' representation.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_rows, n_features_in)
            Interactions of the users to embed (training or new users).

        Returns
        -------
        ndarray of shape (n_rows, n_items)
            A target interaction counts 1, an auxiliary one the keep
            probability the mask gives it (the largest over the behaviours
            that hold the pair); ``transform(X) @ item_embeddings_.T`` scores
            the items.
        """
        check_is_fitted(self)
        X = self._check_X(X, reset=False)
        T, (au, ai, ab), _ = self._blocks(X)
        keep = self._fold_in_keep(T, au, ai, ab)
        return self._denoised_rows(T, au, ai, ab, keep).toarray()

    def _check_users(self, users, *, name="users"):
        users = np.asarray(users)
        if users.ndim != 1 or (users.size and users.dtype.kind not in "iu"):
            raise ValueError(
                f"{name} must be integer row indices of the training matrix; got "
                f"an array of shape {users.shape} and dtype {users.dtype}."
            )
        bad = users[(users < 0) | (users >= self.n_users_)]
        if bad.size:
            raise ValueError(
                f"{name} {bad[:5].tolist()} are not rows of the training matrix "
                f"(0 <= id < {self.n_users_}); score new users with "
                "recommend(..., user_items=their rows, recalculate_user=True) or "
                "transform(X)."
            )
        return users.astype(np.int64)

    def predict_scores(self, users):
        """Score every item for the given training users.

        Parameters
        ----------
        users : array-like of int of shape (n_users,)
            Row indices of the training matrix.

        Returns
        -------
        ndarray of shape (n_users, n_items)
            ``user_embeddings_[users] @ item_embeddings_.T``: a dense block for
            these users only.
        """
        check_is_fitted(self)
        users = self._check_users(users)
        return self.user_embeddings_[users] @ self.item_embeddings_.T

    def _user_items_rows(self, user_items, n_rows):
        """``user_items`` as a (n_rows, n_features_in_) csr, checked."""
        user_items = self._check_X(user_items, reset=False)
        if user_items.shape[0] != n_rows:
            raise ValueError(
                f"user_items has {user_items.shape[0]} rows but {n_rows} user ids "
                "were given: row k of user_items holds the interactions of "
                "userid[k]."
            )
        return user_items

    def recommend(
        self,
        userid,
        user_items=None,
        N=10,
        filter_already_liked_items=True,
        filter_items=None,
        recalculate_user=False,
        *,
        filter_behaviors="target",
    ):
        """Return the ``N`` best target items for one user or an array of users.

        The interface of ``implicit`` (>= 0.5) recommenders.

        Parameters
        ----------
        userid : int or array-like of int
            Training users (row indices of the training matrix); with
            ``recalculate_user=True`` only labels of the rows of
            ``user_items`` (any integers).
        user_items : {array-like, sparse matrix} of shape (n_ids, \
n_features_in), default=None
            Row ``k`` holds the interactions of ``userid[k]``, laid out as in
            ``fit`` (every behaviour). It is read to filter the already liked
            items and, with ``recalculate_user=True``, to score the user. None
            means the training rows of the users (not allowed with
            ``recalculate_user=True``).
        N : int, default=10
            Length of each list.
        filter_already_liked_items : bool, default=True
            Leave out the items the user already interacted with, in the
            behaviours ``filter_behaviors`` names.
        filter_items : array-like of int, default=None
            Items left out of every list.
        recalculate_user : bool, default=False
            Score the users from ``user_items`` rather than from their fitted
            representation: their rows are denoised by the fitted mask and
            scored by the fitted item weights (``transform``), without
            refitting. On a training user's own row this reproduces the
            fitted scores; a new user needs it.
        filter_behaviors : {"target", "all"}, default="target"
            Which interactions count as already liked: the target behaviour
            only (the default: a viewed or carted item is still a candidate
            purchase, and most purchases are of such items), or every
            behaviour (only items the user never interacted with).

        Returns
        -------
        ids : ndarray of int
            Item indices (columns of a behaviour block), best first: shape
            ``(N,)`` for one ``userid``, ``(n_ids, N)`` for an array. Where
            fewer than ``N`` items are left after filtering, the list ends
            with ``-1``.
        scores : ndarray of float
            Their scores, alike (``-inf`` after the end of a short list).
            Users without any interaction (a training user with an empty row)
            are ranked by target popularity, with a UserWarning.
        """
        check_is_fitted(self)
        single = np.ndim(userid) == 0
        ids = np.atleast_1d(np.asarray(userid))
        if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
            raise ValueError(
                f"userid must be an integer or a 1-D array of integers; got {userid!r}."
            )
        if not isinstance(N, Integral) or N < 1:
            raise ValueError(f"N must be a positive integer; got {N!r}.")
        if filter_behaviors not in ("target", "all"):
            raise ValueError(
                f"filter_behaviors must be 'target' or 'all'; got {filter_behaviors!r}."
            )
        n_items = self.n_items_
        if recalculate_user:
            if user_items is None:
                raise ValueError(
                    "recalculate_user=True scores the users from user_items: "
                    "pass their interaction rows."
                )
            rows = self._user_items_rows(user_items, ids.size)
            scores = self.transform(rows) @ self.item_embeddings_.T
            cold = np.diff(rows.indptr) == 0
        else:
            ids = self._check_users(ids, name="userid")
            rows = None
            if user_items is not None:
                rows = self._user_items_rows(user_items, ids.size)
            scores = self.predict_scores(ids)
            cold = ~np.isin(ids, self._active_users)
        if cold.any():
            warn(
                f"users {ids[cold][:5].tolist()} have no interaction: they are "
                "ranked by the popularity of the target items.",
                UserWarning,
            )
            scores[cold] = self._popularity
        if filter_already_liked_items:
            if rows is None:
                liked = self._liked(ids, filter_behaviors)
            else:
                liked = self._liked_in(rows, filter_behaviors)
            coo = liked.tocoo()
            scores[coo.row, coo.col] = -np.inf
        if filter_items is not None:
            filter_items = np.asarray(filter_items)
            if filter_items.size and (
                filter_items.dtype.kind not in "iu"
                or filter_items.min() < 0
                or filter_items.max() >= n_items
            ):
                raise ValueError(
                    f"filter_items must be item indices in [0, {n_items}); got "
                    f"{filter_items[:5].tolist()}."
                )
            scores[:, filter_items] = -np.inf
        top = top_k_items(scores, N)
        top_scores = np.take_along_axis(scores, top, axis=1)
        top = np.where(np.isneginf(top_scores), -1, top)
        if single:
            return top[0], top_scores[0]
        return top, top_scores

    def _liked_in(self, rows, filter_behaviors):
        """Items of ``rows`` (csr, all blocks) to filter: (n_rows, n_items) csr."""
        n, t = self.n_items_, self.target_index_
        if filter_behaviors == "target":
            return rows[:, t * n : (t + 1) * n]
        liked = rows[:, :n]
        for b in range(1, len(self.behaviors_)):
            liked = liked + rows[:, b * n : (b + 1) * n]
        return sp.csr_matrix(liked)

    def _liked(self, users, filter_behaviors):
        """The training interactions of ``users`` to filter."""
        if filter_behaviors == "target":
            return self.seen_[users]
        return _unpack(self._any_seen)[users]

    def similar_items(self, itemid, N=10, filter_items=None):
        """Return the ``N`` items most similar to an item (or to each of several).

        Similarity is the cosine between rows of ``item_embeddings_`` (each
        item's column of the fitted item-item weights over the denoised
        matrix: two items are similar when the same items predict them), as
        ``implicit`` ranks by the cosine of item factors. An item is its own
        best match (cosine 1), as in ``implicit``.

        Parameters
        ----------
        itemid : int or array-like of int
            Item indices (columns of a behaviour block).
        N : int, default=10
            How many items each list holds.
        filter_items : array-like of int, default=None
            Items left out of every list.

        Returns
        -------
        ids, scores : ndarray
            Shape ``(N,)`` for one ``itemid``, ``(n_ids, N)`` for an array.
        """
        check_is_fitted(self)
        single = np.ndim(itemid) == 0
        items = np.atleast_1d(np.asarray(itemid))
        if items.ndim != 1 or (items.size and items.dtype.kind not in "iu"):
            raise ValueError(
                f"itemid must be an integer or a 1-D array of integers; got {itemid!r}."
            )
        bad = items[(items < 0) | (items >= self.n_items_)]
        if bad.size:
            raise ValueError(
                f"itemid {bad[:5].tolist()} out of range: items are 0 .. "
                f"{self.n_items_ - 1}."
            )
        if not isinstance(N, Integral) or N < 1:
            raise ValueError(f"N must be a positive integer; got {N!r}.")
        E = self.item_embeddings_
        norms = np.linalg.norm(E, axis=1)
        normed = E / np.where(norms > 0, norms, 1.0)[:, None]
        scores = normed[items] @ normed.T
        if filter_items is not None:
            scores[:, np.asarray(filter_items, dtype=np.int64)] = -np.inf
        top = top_k_items(scores, N)
        top_scores = np.take_along_axis(scores, top, axis=1)
        if single:
            return top[0], top_scores[0]
        return top, top_scores

    def score(self, X, y=None):
        """NDCG@10 on held-out interactions: usable by ``GridSearchCV``.

        Two layouts, told apart by the width of X:

        - **Every behaviour** (``n_features_in`` columns, any users, e.g. the
          test fold of ``GridSearchCV`` over users): leave-one-out per row.
          For each row with a target interaction, one of them (drawn with a
          fixed seed, so that every call and every candidate model sees the
          same split) is held out; the user is scored from the rest of the
          row, auxiliary behaviours included, without refitting (as
          ``recommend(..., recalculate_user=True)``), the remaining target
          items are excluded, and the held-out item is ranked among all
          others. Rows without a target interaction do not count.
        - **The target block alone** (``n_items`` columns, ``n_users_`` rows):
          held-out purchases of the training users (row u is user u),
          ranked by the fitted scores, the training purchases excluded.

        Parameters
        ----------
        X : {array-like, sparse matrix}
            As above.
        y : None
            Ignored.

        Returns
        -------
        float
            Mean NDCG@10 over the users with a held-out interaction.
        """
        check_is_fitted(self)
        # Its own width rule, so check_array, not validate_data: NaN, infinity,
        # strings and 1-D input still fail here.
        X = check_array(X, accept_sparse="csr", dtype=np.float64, input_name="X")
        check_non_negative(X, f"{type(self).__name__}.score")
        if X.shape[1] == self.n_features_in_:
            return self._score_leave_one_out(X)
        if X.shape[1] != self.n_items_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is "
                f"expecting {self.n_features_in_} features as input (all "
                f"behaviors), or {self.n_items_} (the target block alone)."
            )
        if X.shape[0] != self.n_users_:
            raise ValueError(
                f"With the target block alone, score takes the held-out "
                f"interactions of the {self.n_users_} training users (one row "
                f"each); got shape {X.shape}. Pass rows of every behavior "
                f"({self.n_features_in_} columns) to score other users."
            )
        X = sp.csr_matrix(X, dtype=np.float64)
        result = ranking_metrics(
            self.user_embeddings_, self.item_embeddings_, X, seen=self.seen_, k=10
        )
        if result["n_users"] == 0:
            raise ValueError("X holds no held-out interaction to rank.")
        return result["ndcg"]

    def _score_leave_one_out(self, X):
        X = _csr(X)
        n, t = self.n_items_, self.target_index_
        T = X[:, t * n : (t + 1) * n].tocsr()
        rng = np.random.RandomState(0)
        users = np.flatnonzero(np.diff(T.indptr) > 0)
        if not users.size:
            raise ValueError("X holds no target interaction to hold out.")
        picks = T.indptr[users] + (
            rng.uniform(size=users.size) * np.diff(T.indptr)[users]
        ).astype(np.int64)
        items = T.indices[picks]
        held = sp.csr_matrix(
            (np.ones(users.size), (users, items)), shape=T.shape, dtype=np.float64
        )
        rest = X.tolil()
        rest[users, t * n + items] = 0.0
        rest = _csr(rest)
        rows = self.transform(rest[users])
        seen = rest[users][:, t * n : (t + 1) * n]
        result = ranking_metrics(
            rows, self.item_embeddings_, held[users], seen=seen, k=10
        )
        return result["ndcg"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.requires_fit = True
        return tags

    # --------------------------------------------------- harness contract

    @classmethod
    def _get_test_params(cls):
        return {"n_components": 8, "max_iter": 5, "device": "cpu"}

    def _make_test_data(self, n_samples, random_state):
        """Binary interactions of ``n_samples`` users, about 50 each at scale.

        Six items per block for small samples, ``n_samples // 20`` for large
        ones (the GPU check's timing size).
        """
        rng = np.random.RandomState(random_state)
        if self.behaviors is None:
            n_blocks = 1
        elif isinstance(self.behaviors, Integral):
            n_blocks = int(self.behaviors)
        else:
            n_blocks = len(self.behaviors)
        n_items = max(6, n_samples // 20)
        density = min(0.4, 50.0 / (n_items * n_blocks))
        shape = (n_samples, n_items * n_blocks)
        X = sp.random(*shape, density=density, random_state=rng, format="csr")
        # Every user buys at least one item of the target (last) block.
        last = (n_blocks - 1) * n_items + rng.randint(n_items, size=n_samples)
        X = X + sp.csr_matrix(
            (np.ones(n_samples), (np.arange(n_samples), last)), shape=shape
        )
        X.data[:] = 1.0
        if n_samples * shape[1] <= 1e6:
            X = X.toarray()
        y = np.asarray(X.sum(axis=1)).ravel() + rng.normal(scale=0.1, size=n_samples)
        return X, y

    @classmethod
    def _gpu_check_params(cls):
        # About 1e5 users x items interactions over three behaviours.
        return {"n_components": 64, "behaviors": 3, "max_iter": 5}, 20_000
