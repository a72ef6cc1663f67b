"""Peer recommenders of bench_gcib: LightGCN, ALS, BPR-MF, popularity, CRGCN.

Every peer takes users x items ``scipy.sparse`` csr matrices with 0/1 entries
and returns ``(user_embeddings, item_embeddings)``, float64 arrays whose inner
product ``user_embeddings[u] @ item_embeddings[i]`` is the score of (u, i).

* :func:`fit_lightgcn` trains ``torch_geometric.nn.models.LightGCN`` (the
  reference implementation) with BPR, one uniform negative per positive pair.
* :func:`fit_als` and :func:`fit_bpr` wrap ``implicit``'s CPU models with one
  thread (deterministic; implicit's BPR is Hogwild with more threads).
* :func:`popularity` scores an item by its number of users.
* :func:`fit_crgcn` is CRGCN (Yan et al., "Cascading Residual Graph
  Convolutional Network for Multi-Behavior Recommendation", TOIS 2023),
  reimplemented in plain torch: the behaviours are chained in funnel order;
  behaviour b propagates behaviour b-1's output over its own normalised
  bipartite graph (LightGCN-style, no weights), row-L2-normalises the result
  and adds it to its input (residual); a BPR loss on every behaviour's own
  output is summed (multi-task) and the last (target) behaviour scores.

* :func:`fit_ease` is EASE (the package's closed form) and
  :func:`fit_puresvd` PureSVD (scikit-learn's ``TruncatedSVD``).

The defaults were tuned lightly at an earlier size and generator; the
benchmark does not rely on them: ``bench_gcib.py`` picks every peer's
configuration on a validation split at its own size, with the same number of
configurations as GCIB gets. LightGCN's time grows with the edges of
``graph`` and the number of ``positives``.

``python benchmarks/_gcib_baselines.py [noise_rate ...]`` fits every peer on
such data and prints validation HR@10 / NDCG@10 and seconds.
"""

import time
import warnings

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from sklearn_ext.recommendation._ranking import ranking_metrics
from sklearn_ext.utils._torch import cpu_thread_limit

__all__ = [
    "fit_als",
    "fit_ease",
    "fit_puresvd",
    "fit_bpr",
    "fit_crgcn",
    "fit_lightgcn",
    "popularity",
]


# --------------------------------------------------------------------------
# helpers


def _binary_csr(X):
    """``X`` as a csr matrix of float32 ones (duplicates summed, then clipped)."""
    X = sp.csr_matrix(X, dtype=np.float32)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.data[:] = 1.0
    return X


def _edges(X):
    """Row and column indices of the non-zeros of csr ``X`` as int64 tensors."""
    coo = X.tocoo()
    return (
        torch.from_numpy(coo.row.astype(np.int64)),
        torch.from_numpy(coo.col.astype(np.int64)),
    )


def _generator(random_state):
    gen = torch.Generator()
    gen.manual_seed(int(random_state))
    return gen


def _bipartite_adjacency(X):
    """Symmetrically normalised (users + items) square adjacency, torch csr.

    ``D^-1/2 A D^-1/2`` without self-loops, the propagation matrix of
    LightGCN; a node without edges has an all-zero row.
    """
    A = sp.bmat([[None, X], [X.T, None]], format="csr", dtype=np.float64)
    deg = np.asarray(A.sum(axis=1)).ravel()
    inv_sqrt = np.zeros_like(deg)
    inv_sqrt[deg > 0] = deg[deg > 0] ** -0.5
    A = sp.diags(inv_sqrt) @ A @ sp.diags(inv_sqrt)
    A = A.tocsr().astype(np.float32)
    A.sort_indices()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "CSR support is beta"
        return torch.sparse_csr_tensor(
            torch.from_numpy(A.indptr.astype(np.int64)),
            torch.from_numpy(A.indices.astype(np.int64)),
            torch.from_numpy(A.data),
            size=A.shape,
            check_invariants=False,
        )


class _SymmetricSpMM(torch.autograd.Function):
    """``adj @ x`` for a symmetric sparse ``adj``; the gradient is ``adj @ g``.

    torch's own backward of a csr product transposes the matrix every call;
    for a symmetric matrix it is the matrix itself.
    """

    @staticmethod
    def forward(ctx, adj, x):
        ctx.adj = adj
        return adj @ x

    @staticmethod
    def backward(ctx, grad):
        return None, ctx.adj @ grad


def _to_numpy_split(emb, n_users):
    emb = emb.detach().cpu().double().numpy()
    return np.ascontiguousarray(emb[:n_users]), np.ascontiguousarray(emb[n_users:])


# --------------------------------------------------------------------------
# LightGCN (torch_geometric reference implementation)


def fit_lightgcn(
    graph,
    positives=None,
    *,
    n_components=64,
    n_layers=2,
    n_epochs=200,
    lr=0.01,
    batch_size=4096,
    weight_decay=0.03,
    random_state=0,
):
    """LightGCN (He et al., SIGIR 2020) trained with BPR.

    Parameters
    ----------
    graph : sparse (n_users, n_items)
        Interactions the embeddings are propagated over (users are nodes
        ``0..n_users-1``, items ``n_users..``, every edge in both directions).
        The target block gives "LightGCN on the target graph"; the union of
        all behaviours gives "LightGCN on the merged graph".
    positives : sparse (n_users, n_items), default=graph
        The pairs the BPR loss ranks above one uniformly drawn item each.
    n_epochs : int
        Passes over ``positives`` (``ceil(nnz / batch_size)`` Adam steps
        each). The default suits ~6-10k target positives. With the merged
        graph as positives (~180k pairs) validation peaked early and then
        declined: ``batch_size=2048, n_epochs=15, weight_decay=1e-3``.
    weight_decay : float
        ``lambda_reg`` of ``LightGCN.recommendation_loss``: squared L2 norm
        of the layer-0 embeddings of the batch's users, positive and negative
        items, divided by the batch size. With ~3 target pairs a user, strong
        regularisation (0.01-0.1) was needed to stay at least at popularity's
        level.

    Returns
    -------
    user_embeddings, item_embeddings : ndarray of float64
        The layer-averaged ``model.get_embedding(edge_index)``.
    """
    from torch_geometric.nn.models import LightGCN

    graph = _binary_csr(graph)
    positives = graph if positives is None else _binary_csr(positives)
    if positives.shape != graph.shape:
        raise ValueError("graph and positives must have the same shape")
    n_users, n_items = graph.shape
    gen = _generator(random_state)
    # The undirected bipartite graph as a sparse adjacency, normalised once
    # the way LGConv does it (gcn_norm, no self-loops): LGConv then runs one
    # sparse product a layer instead of re-normalising and scattering ~2 nnz
    # messages at every layer of every step (about 7x faster).
    adjacency = _bipartite_adjacency(graph)

    # Thousands of small steps: one intra-op thread was ~20x faster than two
    # on a loaded two-core machine (OpenMP spin-waits).
    with cpu_thread_limit(1):
        model = LightGCN(n_users + n_items, n_components, n_layers, normalize=False)
        torch.nn.init.xavier_uniform_(model.embedding.weight, generator=gen)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)

        pos_users, pos_items = _edges(positives)
        pos_items = pos_items + n_users
        n_pos = pos_users.numel()
        model.train()
        for _ in range(n_epochs):
            order = torch.randperm(n_pos, generator=gen)
            for start in range(0, n_pos, batch_size):
                batch = order[start : start + batch_size]
                users, items = pos_users[batch], pos_items[batch]
                negatives = n_users + torch.randint(
                    n_items, (batch.numel(),), generator=gen
                )
                label_index = torch.stack(
                    [torch.cat([users, users]), torch.cat([items, negatives])]
                )
                pos_rank, neg_rank = model(adjacency, label_index).chunk(2)
                loss = model.recommendation_loss(
                    pos_rank,
                    neg_rank,
                    node_id=torch.cat([users, items, negatives]),
                    lambda_reg=weight_decay,
                )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        model.eval()
        with torch.no_grad():
            emb = model.get_embedding(adjacency)
    return _to_numpy_split(emb, n_users)


# --------------------------------------------------------------------------
# implicit's matrix factorisations


def fit_als(
    X,
    *,
    factors=64,
    regularization=100.0,
    alpha=20.0,
    iterations=15,
    random_state=0,
):
    """Implicit-feedback ALS (Hu, Koren & Volinsky 2008), ``implicit`` on CPU.

    implicit 0.7 takes the users x items matrix and uses ``alpha * X`` as the
    confidence of an observed pair (1 for an unobserved one). The defaults
    are tuned for the sparse target block (~3 pairs a user); on the much
    denser merged matrix of all behaviours ``regularization=10, alpha=2``
    validated far better (the target defaults fall back towards popularity).
    """
    from implicit.cpu.als import AlternatingLeastSquares
    from threadpoolctl import threadpool_limits

    X = _binary_csr(X)
    # implicit's own loop is the parallel part; a BLAS threadpool inside it
    # only slows it down (and implicit warns about it).
    with threadpool_limits(1, "blas"):
        model = AlternatingLeastSquares(
            factors=factors,
            regularization=regularization,
            alpha=alpha,
            iterations=iterations,
            num_threads=1,
            random_state=random_state,
        )
        model.fit(X, show_progress=False)
    return (
        np.asarray(model.user_factors, dtype=np.float64),
        np.asarray(model.item_factors, dtype=np.float64),
    )


def fit_bpr(
    X,
    *,
    factors=64,
    learning_rate=0.001,
    regularization=0.05,
    iterations=400,
    random_state=0,
):
    """BPR matrix factorisation (Rendle et al. 2009), ``implicit`` on CPU.

    implicit's BPR learns ``factors + 1`` columns: the item's last column is
    its bias and the user's last column is fixed at 1, so the plain inner
    product of the returned rows is implicit's score, bias included. One
    thread: with more, its SGD is lock-free (Hogwild) and not reproducible.
    An iteration is one epoch of ``nnz`` sampled triples.

    implicit draws the negative item of a triple as the item of a random
    interaction, i.e. proportionally to popularity, not uniformly: the
    model learns little of the popularity that dominates purchases, and
    longer or faster training ranks popular items *down*. A small learning
    rate validated best; expect this peer below popularity on skewed data.
    """
    from implicit.cpu.bpr import BayesianPersonalizedRanking

    X = _binary_csr(X)
    model = BayesianPersonalizedRanking(
        factors=factors,
        learning_rate=learning_rate,
        regularization=regularization,
        iterations=iterations,
        num_threads=1,
        random_state=random_state,
    )
    model.fit(X, show_progress=False)
    user, item = model.user_factors, model.item_factors
    if user.shape[1] != item.shape[1]:  # pragma: no cover - layout safeguard
        raise RuntimeError("implicit's BPR factor layout changed")
    return np.asarray(user, dtype=np.float64), np.asarray(item, dtype=np.float64)


def popularity(X):
    """Most-popular: the score of (u, i) is the number of users of item i."""
    X = _binary_csr(X)
    counts = np.asarray(X.sum(axis=0), dtype=np.float64).ravel()
    return np.ones((X.shape[0], 1)), counts[:, None]


# --------------------------------------------------------------------------
# closed forms: EASE and PureSVD


def fit_ease(X, *, l2_reg=100.0):
    """EASE (Steck, WWW 2019): closed-form item-item ridge regression.

    ``X @ B`` with ``B`` from :func:`sklearn_ext.recommendation._ease.ease_weights`
    (the package's one implementation, also GCIB's scorer). The returned user
    "embeddings" are the rows of ``X`` and the item ones the columns of ``B``,
    so that their inner products are EASE's scores.
    """
    from sklearn_ext.recommendation._ease import ease_weights

    X = _binary_csr(X).astype(np.float64)
    return X.toarray(), ease_weights(X, l2_reg).T


def fit_puresvd(X, n_items, *, n_components=64, random_state=0):
    """PureSVD (Cremonesi et al., RecSys 2010) of the whole behaviour matrix.

    ``TruncatedSVD`` (scikit-learn) of the users x (items x behaviours)
    matrix ``X``; a user's scores are its projection ``X V`` times the target
    block's rows of ``V`` (the last ``n_items`` columns of ``X``).
    """
    from sklearn.decomposition import TruncatedSVD

    X = _binary_csr(X).astype(np.float64)
    n_components = min(n_components, min(X.shape) - 1)
    svd = TruncatedSVD(n_components, random_state=random_state).fit(X)
    return svd.transform(X), np.ascontiguousarray(svd.components_[:, -n_items:].T)


# --------------------------------------------------------------------------
# CRGCN


def fit_crgcn(
    blocks,
    *,
    n_components=64,
    n_layers=2,
    n_epochs=300,
    lr=0.003,
    batch_size=4096,
    weight_decay=1e-3,
    random_state=0,
):
    """CRGCN: cascading residual LightGCN blocks, multi-task BPR.

    Parameters
    ----------
    blocks : list of sparse (n_users, n_items)
        One 0/1 matrix per behaviour in funnel order (e.g. view, cart, buy),
        the target behaviour last.
    n_layers : int
        Propagation layers inside every behaviour's block (the authors' code
        uses one; two validated better here).
    n_epochs : int
        Passes over the target behaviour's pairs in minibatches of
        ``batch_size``; every Adam step also draws ``batch_size`` pairs
        (with replacement) from each auxiliary behaviour.
    weight_decay : float
        Squared L2 norm of the layer-0 embeddings of every sampled user,
        positive and negative item, divided by the batch size.

    Notes
    -----
    With ``E_0`` the free embeddings and ``A_b`` behaviour b's normalised
    bipartite adjacency, block b computes
    ``E_b = E_{b-1} + normalize(mean_{l=1..L} A_b^l E_{b-1})`` (row-wise L2,
    as in the authors' code); behaviour b's loss is the mean BPR loss
    ``-log sigmoid(e_u.e_i - e_u.e_j)`` over its sampled pairs scored with
    ``E_b`` and a uniformly drawn item j; the losses of all behaviours are
    summed. Scores use ``E_B`` of the target behaviour.
    """
    mats = [_binary_csr(b) for b in blocks]
    if not mats:
        raise ValueError("blocks is empty")
    n_users, n_items = mats[0].shape
    if any(m.shape != (n_users, n_items) for m in mats):
        raise ValueError("every block must have the same shape")
    gen = _generator(random_state)
    adjacencies = [_bipartite_adjacency(m) for m in mats]
    pairs = [_edges(m) for m in mats]
    if pairs[-1][0].numel() == 0:
        raise ValueError("the target block has no interactions")

    weight = torch.empty(n_users + n_items, n_components)
    torch.nn.init.xavier_uniform_(weight, generator=gen)
    weight = torch.nn.Parameter(weight)
    optimizer = torch.optim.Adam([weight], lr=lr)

    def propagate():
        x = weight
        outputs = []
        for adj in adjacencies:
            h = x
            total = 0
            for _ in range(n_layers):
                h = _SymmetricSpMM.apply(adj, h)
                total = total + h
            x = x + F.normalize(total / n_layers, dim=1)
            outputs.append(x)
        return outputs

    def bpr(emb, users, items):
        negatives = n_users + torch.randint(n_items, (users.numel(),), generator=gen)
        items = items + n_users
        u = emb[users]
        diff = (u * (emb[items] - emb[negatives])).sum(dim=1)
        base = torch.cat([users, items, negatives])
        reg = weight[base].pow(2).sum() / users.numel()
        return -F.logsigmoid(diff).mean() + weight_decay * reg

    # Thousands of small steps: one intra-op thread was ~20x faster than two
    # on a loaded two-core machine (OpenMP spin-waits).
    with cpu_thread_limit(1):
        target_users, target_items = pairs[-1]
        n_target = target_users.numel()
        for _ in range(n_epochs):
            order = torch.randperm(n_target, generator=gen)
            for start in range(0, n_target, batch_size):
                batch = order[start : start + batch_size]
                outputs = propagate()
                loss = bpr(outputs[-1], target_users[batch], target_items[batch])
                for emb, (users, items) in zip(outputs[:-1], pairs[:-1]):
                    if users.numel() == 0:
                        continue
                    draw = torch.randint(users.numel(), (batch_size,), generator=gen)
                    loss = loss + bpr(emb, users[draw], items[draw])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        with torch.no_grad():
            emb = propagate()[-1]
    return _to_numpy_split(emb, n_users)


# --------------------------------------------------------------------------
# smoke run / tuning aid


def _load(noise_rate, random_state):
    from sklearn_ext.datasets import make_multibehavior

    return make_multibehavior(
        n_users=2000, n_items=1500, noise_rate=noise_rate, random_state=random_state
    )


def _validation_split(data, n_items, random_state):
    """Blocks of ``data`` with one training buy per user moved to validation."""
    n_blocks = data.shape[1] // n_items
    blocks = [
        sp.csr_matrix(data[:, b * n_items : (b + 1) * n_items]) for b in range(n_blocks)
    ]
    target = blocks[-1].tolil()
    rng = np.random.default_rng(random_state)
    rows, cols = [], []
    for u in range(target.shape[0]):
        items = target.rows[u]
        if len(items) >= 2:  # keep at least one training buy
            i = items[rng.integers(len(items))]
            rows.append(u)
            cols.append(i)
            target[u, i] = 0
    held = sp.csr_matrix(
        (np.ones(len(rows)), (rows, cols)), shape=target.shape, dtype=np.float64
    )
    blocks[-1] = _binary_csr(target.tocsr())
    return blocks, held


def _main(noise_rates):
    for noise_rate in noise_rates:
        bunch = _load(noise_rate, 100)
        blocks, held = _validation_split(bunch.data, bunch.n_items, 0)
        target = blocks[-1]
        merged = _binary_csr(sum(blocks))
        print(
            f"noise_rate={noise_rate}: "
            + ", ".join(f"{b.nnz}" for b in blocks)
            + f" interactions per behaviour, {held.nnz} validation users"
        )
        merged_positives = {"batch_size": 2048, "n_epochs": 15, "weight_decay": 1e-3}
        peers = [
            ("popularity", popularity, (target,), {}),
            ("ALS target", fit_als, (target,), {}),
            ("BPR-MF target", fit_bpr, (target,), {}),
            ("ALS merged", fit_als, (merged,), {"regularization": 10, "alpha": 2}),
            ("LightGCN target", fit_lightgcn, (target,), {}),
            ("LightGCN merged", fit_lightgcn, (merged, target), {}),
            ("LightGCN mrg/mrg", fit_lightgcn, (merged, merged), merged_positives),
            ("CRGCN", fit_crgcn, (blocks,), {}),
        ]
        for name, fit, args, kwargs in peers:
            start = time.perf_counter()
            user, item = fit(*args, **kwargs)
            seconds = time.perf_counter() - start
            result = ranking_metrics(user, item, held, seen=target)
            hr, ndcg = result["hr"], result["ndcg"]
            print(f"  {name:16s} HR@10 {hr:.4f}  NDCG@10 {ndcg:.4f}  {seconds:6.1f} s")


if __name__ == "__main__":
    import sys

    _main([float(a) for a in sys.argv[1:]] or [0.3])
