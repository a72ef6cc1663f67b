"""Multi-behaviour implicit feedback (views, carts, buys) with flagged noise."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.utils import Bunch, check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, StrOptions, validate_params

__all__ = ["make_multibehavior"]

# Temperatures of the views and of the buys: buys follow preference more sharply.
_VIEW_TEMPERATURE = 0.5
_BUY_TEMPERATURE = 0.5
# Log-odds bonus of a viewed item in the purchase draw (the funnel).
_VIEW_BOOST = 1.5
# Probability that a bought item not viewed in the view draw is viewed too.
_VIEW_IF_BOUGHT = 0.8
# Probability that a bought item is carted; a viewed item that is not bought is
# carted with probability expit(s - _CART_OFFSET).
_CART_IF_BOUGHT = 0.6
_CART_OFFSET = 2.0
# Probability that an auxiliary interaction with the held-out item came before the
# purchase.
_BEFORE_PURCHASE = 0.7
# Clickbait noise picks item i with probability proportional to exp(2 b_i).
_CLICKBAIT_SHARPNESS = 2.0
# About this many user-item utilities are held in memory at once.
_CHUNK_CELLS = 2**22
# Rejection sampling of the noise: at most this many rounds, and draws per round.
_MAX_ROUNDS = 64
_MAX_DRAWS = 2**22

_DESCR = """\
Synthetic multi-behaviour recommendation data (make_multibehavior)
------------------------------------------------------------------

Users u and items i have latent factors with u.v of standard deviation 1 and
items a log-popularity b_i = popularity_skew * z_i, z_i ~ N(0, 1); the utility
is s_ui = u.v_i + b_i. Each user views max(3, Poisson(n_views)) distinct items,
drawn without replacement with probability proportional to exp(s_ui / 0.5), and buys
2 + Poisson(n_buys - 2) distinct items, drawn without replacement with
probability proportional to exp(s_ui / 0.5 + 1.5 * viewed_ui); a bought item not
viewed is viewed too with probability 0.8. In each middle behaviour (cart) a
bought item is present with probability 0.6 and a viewed item not bought with
probability sigmoid(s_ui - 2). One buy per user, chosen uniformly, is held out
as the test purchase; each auxiliary interaction with it came before the
purchase with probability 0.7, and those after it (holdout="pre-purchase") or
all of them (holdout="remove") are deleted. Each auxiliary block then receives
flagged noise, a fraction noise_rate of its edges: half uniform clicks, half
clickbait on items drawn with probability proportional to exp(2 b_i),
independently of the user.
"""


def _gumbel_top_k(keys, k, rng):
    """Per row of ``keys``, ``k[row]`` distinct columns of the Gumbel-top-k draw.

    Returns the (n_rows, max(k)) column indices of the largest perturbed keys,
    best first; entry ``[r, j]`` is drawn when ``j < k[r]``.
    """
    keys = keys + rng.gumbel(size=keys.shape)
    n_cols = keys.shape[1]
    kmax = int(k.max())
    top = np.argpartition(keys, n_cols - kmax, axis=1)[:, n_cols - kmax :]
    order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def _isin_sorted(values, sorted_array):
    """Elementwise membership of ``values`` in the sorted array ``sorted_array``."""
    if sorted_array.size == 0:
        return np.zeros(values.shape, dtype=bool)
    pos = np.searchsorted(sorted_array, values)
    pos = np.minimum(pos, sorted_array.size - 1)
    return sorted_array[pos] == values


def _draw_free_cells(n_wanted, forbidden, n_users, n_items, item_cdf, rng):
    """Up to ``n_wanted`` distinct cells ``u * n_items + i`` outside ``forbidden``.

    Users are uniform; items are uniform when ``item_cdf`` is None, else drawn
    from the cumulative weights ``item_cdf``. Cells that are forbidden or drawn
    twice are dropped and drawn again, in rounds sized by the acceptance rate of
    the previous one, so the cells follow the sampling distribution restricted to
    the free cells. Returns them in the order drawn.
    """
    taken = np.empty(0, dtype=np.int64)
    taken_sorted = taken
    total = n_users * n_items
    acceptance = max(1.0 - forbidden.size / total, 1e-3)
    for _ in range(_MAX_ROUNDS):
        need = n_wanted - taken.size
        if need <= 0:
            break
        m = min(int(1.2 * need / acceptance) + 32, _MAX_DRAWS)
        users = rng.randint(n_users, size=m).astype(np.int64)
        if item_cdf is None:
            items = rng.randint(n_items, size=m)
        else:
            items = np.searchsorted(item_cdf, rng.uniform(size=m) * item_cdf[-1])
            items = np.minimum(items, n_items - 1)
        cells = users * n_items + items
        cells = cells[
            ~_isin_sorted(cells, forbidden) & ~_isin_sorted(cells, taken_sorted)
        ]
        _, first = np.unique(cells, return_index=True)
        cells = cells[np.sort(first)]
        acceptance = max(cells.size / m, 1e-3)
        taken = np.concatenate([taken, cells[:need]])
        taken_sorted = np.sort(taken)
    return taken


def _noise_cells(n_noise, forbidden, n_users, n_items, popularity, rng):
    """Flagged noise of one auxiliary block: half uniform, half clickbait."""
    total = n_users * n_items
    n_noise = min(n_noise, total - forbidden.size)
    n_clickbait = n_noise // 2
    weights = np.exp(_CLICKBAIT_SHARPNESS * (popularity - popularity.max()))
    clickbait = _draw_free_cells(
        n_clickbait, forbidden, n_users, n_items, np.cumsum(weights), rng
    )
    # Clickbait that found no free cell (popular items saturated) is made up by
    # uniform clicks, so that the count is met.
    forbidden = np.union1d(forbidden, clickbait)
    n_uniform = n_noise - clickbait.size
    uniform = _draw_free_cells(n_uniform, forbidden, n_users, n_items, None, rng)
    if uniform.size < n_uniform:
        # Nearly every cell is taken: the free ones are few enough to list.
        forbidden = np.union1d(forbidden, uniform)
        free = np.setdiff1d(np.arange(total, dtype=np.int64), forbidden)
        extra = rng.choice(free, size=n_uniform - uniform.size, replace=False)
        uniform = np.concatenate([uniform, extra])
    return np.concatenate([clickbait, uniform])


def _to_csr(cells, n_users, n_items):
    """Binary float64 CSR matrix with ones at the cells ``u * n_items + i``."""
    rows, cols = np.divmod(cells, n_items)
    return sp.csr_matrix(
        (np.ones(cells.size), (rows, cols)), shape=(n_users, n_items), dtype=np.float64
    )


def _check_behaviors(behaviors):
    behaviors = tuple(behaviors)
    if len(behaviors) == 0:
        raise ValueError(
            "behaviors must name at least one behaviour (the target, last); got an "
            "empty sequence."
        )
    if not all(isinstance(name, str) for name in behaviors):
        raise ValueError(f"behaviors must be a sequence of strings; got {behaviors!r}.")
    if len(set(behaviors)) != len(behaviors):
        raise ValueError(f"behaviors must be distinct; got {behaviors!r}.")
    return behaviors


@validate_params(
    {
        "n_users": [Interval(Integral, 1, None, closed="left")],
        "n_items": [Interval(Integral, 4, None, closed="left")],
        "behaviors": [list, tuple],
        "noise_rate": [Interval(Real, 0, 1, closed="left")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "n_views": [Interval(Real, 1, None, closed="left")],
        "n_buys": [Interval(Real, 2, None, closed="left")],
        "popularity_skew": [Interval(Real, 0, None, closed="left")],
        "holdout": [StrOptions({"pre-purchase", "remove"})],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_multibehavior(
    n_users=2000,
    n_items=1500,
    behaviors=("view", "cart", "buy"),
    noise_rate=0.3,
    *,
    n_components=16,
    n_views=40,
    n_buys=5,
    popularity_skew=0.5,
    holdout="pre-purchase",
    random_state=None,
):
    """Generate multi-behaviour implicit feedback with a purchase funnel and noise.

    Users view, cart and buy items; the last behaviour (the purchase) is the
    target and the others are auxiliary behaviours, which carry both genuine
    signal and flagged noise. The roles follow the position in ``behaviors``,
    whatever the names: the first is view-like, the middle ones are cart-like,
    the last is the target. With two behaviours there is no cart; with one
    there is no auxiliary behaviour. In the order of the random draws:

    1. Factors ``u`` (users) and ``v_i`` (items) in ``R^K``, ``K = n_components``,
       with independent ``N(0, 1 / sqrt(K))`` entries, both rescaled by the same
       factor so that the standard deviation of ``u.v_i`` over all user-item
       pairs is exactly 1; the log-popularity ``b_i = popularity_skew * z_i``,
       ``z_i ~ N(0, 1)`` (log-normal popularity); the utility
       ``s_ui = u.v_i + b_i``.
    2. Views: user ``u`` views ``max(3, Poisson(n_views))`` (at most
       ``n_items``) distinct items, drawn without replacement with probability
       proportional to ``exp(s_ui / 0.5)`` (Gumbel-top-k trick [1]_): an
       informative but broad signal of preference (forty views against five
       buys at the defaults). The temperature ``0.5`` makes a genuine view as
       preference-driven as a purchase; at temperature ``1`` genuine views are
       so diffuse that even the true factors tell them from uniform clicks
       poorly (a check made when the generator was written, not kept in the
       benchmarks).
    3. Buys: user ``u`` buys ``2 + Poisson(n_buys - 2)`` (at most
       ``n_items // 2``) distinct items, drawn without replacement over all
       items with probability proportional to ``exp(s_ui / 0.5 + 1.5 viewed_ui)``:
       a sharper preference, and a view raises the purchase probability (the
       funnel). A bought item that was not viewed becomes viewed with
       probability 0.8.
    4. Carts (each middle behaviour, independently): a bought item is carted
       with probability 0.6, a viewed item that is not bought with probability
       ``sigmoid(s_ui - 2)``, a stronger signal of preference than a view.
    5. Held-out buy: one buy of each user, chosen uniformly at random (the
       "last" purchase), is moved from the target block to ``test``. Each
       auxiliary interaction with that item happened before the purchase with
       probability 0.7 and after it otherwise (a post-purchase view).
       ``holdout="pre-purchase"`` deletes those after the purchase, a
       time-based split; ``holdout="remove"`` deletes all of them. The test
       purchases never leak into the training data.
    6. Noise: each auxiliary block with ``G`` genuine edges receives
       ``round(G * noise_rate / (1 - noise_rate))`` flagged noise edges, a
       fraction ``noise_rate`` of its edges, on cells that are neither genuine
       edges of the block nor a user's held-out item, all distinct: half
       (rounded down) are clickbait, user uniform and item drawn with
       probability proportional to ``exp(2 b_i)``, independently of the user's
       preference; the rest are uniform random clicks. Cells drawn twice or
       not free are drawn again; clickbait that finds no free cell, when the
       popular items are saturated, is made up by uniform clicks.

    The utilities are computed for chunks of users at a time, so that no dense
    ``n_users x n_items`` matrix is held at once.

    Parameters
    ----------
    n_users : int, default=2000
        Number of users.
    n_items : int, default=1500
        Number of items, at least 4 (every user buys at least 2 items and at
        most ``n_items // 2``).
    behaviors : list or tuple of str, default=("view", "cart", "buy")
        Distinct names of the behaviours, at least one, in funnel order; the
        last one is the target (purchase).
    noise_rate : float, default=0.3
        Fraction of each auxiliary block's edges that are injected noise, in
        ``[0, 1)``.
    n_components : int, default=16
        Dimension ``K`` of the latent factors.
    n_views : float, default=40
        Mean number of items a user views (before the views that buys add),
        at least 1.
    n_buys : float, default=5
        Mean number of items a user buys, at least 2.
    popularity_skew : float, default=0.5
        Standard deviation of the log-popularity ``b_i``; 0 makes every item
        equally popular a priori. At ``1``, popularity alone ranked the
        held-out purchases better than a LightGCN on the purchases (a check
        made when the generator was written, not kept in the benchmarks),
        unlike in real purchase logs; ``0.5`` keeps a popularity head in which
        personal preference still matters.
    holdout : {"pre-purchase", "remove"}, default="pre-purchase"
        Which auxiliary interactions with the held-out item are deleted: those
        after the purchase, or all of them.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of every random draw.

    Returns
    -------
    dataset : :class:`~sklearn.utils.Bunch`
        With the fields:

        - ``data``: CSR matrix of shape (n_users, n_items * n_behaviors),
          float64 with values 1: the training interactions, behaviour ``b`` in
          the columns ``b * n_items`` to ``(b + 1) * n_items - 1``, the target
          in the last block.
        - ``test``: CSR matrix of shape (n_users, n_items), float64, one held-out
          purchase (a 1) per user.
        - ``noise``: CSR matrix of the shape of ``data``, 1 exactly at the
          injected noise edges (auxiliary blocks only; each is an edge of
          ``data``).
        - ``behaviors``: tuple of the behaviour names; ``target``: the last one.
        - ``n_items``: the number of items, the width of a block.
        - ``user_factors``: ndarray of shape (n_users, n_components).
        - ``item_factors``: ndarray of shape (n_items, n_components).
        - ``popularity``: ndarray of shape (n_items,), the log-popularity
          ``b``, so that ``s = user_factors @ item_factors.T + popularity``.
        - ``DESCR``: a description of the model.

    Notes
    -----
    The utility is the biased matrix-factorisation model of recommender
    systems [2]_; the auxiliary behaviours are the views and carts that
    multi-behaviour recommenders learn from for purchases [3]_, and the
    flagged noise is the kind of misleading implicit feedback (random and
    clickbait clicks) that denoising methods try to discount [4]_. The
    held-out purchase follows the leave-one-out protocol [5]_.

    References
    ----------
    .. [1] W. Kool, H. van Hoof and M. Welling, "Stochastic beams and where to
       find them: the Gumbel-top-k trick for sampling sequences without
       replacement", ICML, 2019.
    .. [2] Y. Koren, R. Bell and C. Volinsky, "Matrix factorization techniques
       for recommender systems", Computer, 42(8), 30-37, 2009.
    .. [3] C. Gao, X. He, D. Gan, X. Chen, F. Feng, Y. Li, T.-S. Chua
       and D. Jin, "Neural multi-task recommendation from multi-behavior
       data", ICDE, 2019.
    .. [4] W. Wang, F. Feng, X. He, L. Nie and T.-S. Chua, "Denoising implicit
       feedback for recommendation", WSDM, 2021.
    .. [5] X. He, L. Liao, H. Zhang, L. Nie, X. Hu and T.-S. Chua, "Neural
       collaborative filtering", WWW, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.datasets import make_multibehavior
    >>> ds = make_multibehavior(n_users=200, n_items=300, random_state=0)
    >>> ds.data.shape, ds.test.shape, ds.behaviors
    ((200, 900), (200, 300), ('view', 'cart', 'buy'))
    >>> np.unique(ds.test.getnnz(axis=1)).tolist()
    [1]
    >>> buys = ds.data[:, 600:]
    >>> int(buys.multiply(ds.test).sum())
    0
    >>> noise = ds.noise[:, :300]
    >>> round(noise.nnz / ds.data[:, :300].nnz, 2)
    0.3
    """
    behaviors = _check_behaviors(behaviors)
    n_behaviors = len(behaviors)
    n_aux = n_behaviors - 1
    rng = check_random_state(random_state)

    # 1. Factors, popularity, utility.
    scale = n_components**-0.25
    U = rng.normal(scale=scale, size=(n_users, n_components))
    V = rng.normal(scale=scale, size=(n_items, n_components))
    popularity = float(popularity_skew) * rng.normal(size=n_items)
    # Standard deviation of u.v over all pairs, from the Gram matrices.
    mean_uv = U.mean(axis=0) @ V.mean(axis=0)
    mean_sq = np.sum((U.T @ U) * (V.T @ V)) / (n_users * n_items)
    std_uv = np.sqrt(max(mean_sq - mean_uv**2, 0.0))
    if std_uv > 0:
        U /= np.sqrt(std_uv)
        V /= np.sqrt(std_uv)

    # Per-user counts, held-out positions and timings, drawn up front.
    n_view = np.minimum(np.maximum(3, rng.poisson(n_views, size=n_users)), n_items)
    n_buy = np.minimum(2 + rng.poisson(n_buys - 2, size=n_users), n_items // 2)
    test_pos = np.minimum(
        (rng.uniform(size=n_users) * n_buy).astype(np.int64), n_buy - 1
    )
    before = rng.uniform(size=(n_aux, n_users)) < _BEFORE_PURCHASE

    # 2-4. Views, buys and carts, for chunks of users.
    chunk = max(1, _CHUNK_CELLS // n_items)
    cells = [[] for _ in range(n_behaviors)]  # genuine cells u * n_items + i
    test_item = np.empty(n_users, dtype=np.int64)
    for start in range(0, n_users, chunk):
        stop = min(start + chunk, n_users)
        n_rows = stop - start
        row_ids = np.arange(start, stop, dtype=np.int64)
        s = U[start:stop] @ V.T + popularity

        top = _gumbel_top_k(s / _VIEW_TEMPERATURE, n_view[start:stop], rng)
        keep = np.arange(top.shape[1]) < n_view[start:stop, None]
        rows = np.broadcast_to(np.arange(n_rows)[:, None], top.shape)
        viewed = np.zeros((n_rows, n_items), dtype=bool)
        viewed[rows[keep], top[keep]] = True

        keys = s / _BUY_TEMPERATURE + _VIEW_BOOST * viewed
        top = _gumbel_top_k(keys, n_buy[start:stop], rng)
        keep = np.arange(top.shape[1]) < n_buy[start:stop, None]
        rows = np.broadcast_to(np.arange(n_rows)[:, None], top.shape)
        test_item[start:stop] = top[np.arange(n_rows), test_pos[start:stop]]
        buy_rows, buy_cols = rows[keep], top[keep]
        bought = np.zeros((n_rows, n_items), dtype=bool)
        bought[buy_rows, buy_cols] = True

        also_viewed = rng.uniform(size=buy_rows.size) < _VIEW_IF_BOUGHT
        add = also_viewed & ~viewed[buy_rows, buy_cols]
        viewed[buy_rows[add], buy_cols[add]] = True

        vnb_rows, vnb_cols = np.nonzero(viewed & ~bought)
        p_cart = expit(s[vnb_rows, vnb_cols] - _CART_OFFSET)
        for b in range(1, n_aux):
            cart_buy = rng.uniform(size=buy_rows.size) < _CART_IF_BOUGHT
            cart_view = rng.uniform(size=vnb_rows.size) < p_cart
            r = np.concatenate([buy_rows[cart_buy], vnb_rows[cart_view]])
            c = np.concatenate([buy_cols[cart_buy], vnb_cols[cart_view]])
            cells[b].append(row_ids[r] * n_items + c)
        if n_aux > 0:
            r, c = np.nonzero(viewed)
            cells[0].append(row_ids[r] * n_items + c)
        cells[-1].append(row_ids[buy_rows] * n_items + buy_cols)

    cells = [np.sort(np.concatenate(block)) for block in cells]
    test_cells = np.arange(n_users, dtype=np.int64) * n_items + test_item

    # 5. Held-out buy and the auxiliary interactions with it.
    cells[-1] = np.setdiff1d(cells[-1], test_cells, assume_unique=True)
    for b in range(n_aux):
        at_test = _isin_sorted(cells[b], test_cells)
        if holdout == "pre-purchase":
            idx = np.flatnonzero(at_test)
            at_test[idx] = ~before[b, cells[b][idx] // n_items]
        cells[b] = cells[b][~at_test]

    # 6. Flagged noise in the auxiliary blocks.
    noise_cells = []
    for b in range(n_aux):
        n_genuine = cells[b].size
        n_noise = int(round(n_genuine * noise_rate / (1.0 - noise_rate)))
        forbidden = np.union1d(cells[b], test_cells)
        noise_cells.append(
            _noise_cells(n_noise, forbidden, n_users, n_items, popularity, rng)
        )

    blocks, noise_blocks = [], []
    for b in range(n_behaviors):
        genuine = cells[b]
        noise = noise_cells[b] if b < n_aux else np.empty(0, dtype=np.int64)
        blocks.append(_to_csr(np.concatenate([genuine, noise]), n_users, n_items))
        noise_blocks.append(_to_csr(noise, n_users, n_items))
    data = sp.hstack(blocks, format="csr", dtype=np.float64)
    noise = sp.hstack(noise_blocks, format="csr", dtype=np.float64)
    for matrix in (data, noise):
        matrix.sort_indices()

    return Bunch(
        data=data,
        test=_to_csr(test_cells, n_users, n_items),
        noise=noise,
        behaviors=behaviors,
        target=behaviors[-1],
        n_items=n_items,
        user_factors=U,
        item_factors=V,
        popularity=popularity,
        DESCR=_DESCR,
    )
