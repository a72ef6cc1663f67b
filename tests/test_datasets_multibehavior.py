"""The multi-behaviour recommendation data generator."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import spearmanr

from sklearn_ext.datasets import make_multibehavior
from sklearn_ext.utils._sklearn_compat import InvalidParameterError


def _block(matrix, b, n_items):
    return matrix[:, b * n_items : (b + 1) * n_items]


def _genuine(ds, b):
    """The genuine (not noise) edges of block ``b``."""
    block = _block(ds.data, b, ds.n_items) - _block(ds.noise, b, ds.n_items)
    block.eliminate_zeros()
    return block


def _affinity_and_popularity(ds, matrix):
    """``u.v_i`` and ``b_i`` at the nonzero cells of ``matrix`` (any block)."""
    rows, cols = matrix.nonzero()
    cols = cols % ds.n_items
    uv = np.einsum("ij,ij->i", ds.user_factors[rows], ds.item_factors[cols])
    return uv, ds.popularity[cols]


def _test_items(ds):
    rows, cols = ds.test.nonzero()
    items = np.empty(ds.test.shape[0], dtype=np.int64)
    items[rows] = cols
    return items


def test_shapes_dtypes_and_block_layout():
    n_users, n_items = 300, 200
    ds = make_multibehavior(
        n_users, n_items, noise_rate=0.0, n_views=30, n_buys=4, random_state=0
    )
    assert ds.behaviors == ("view", "cart", "buy") and ds.target == "buy"
    assert ds.n_items == n_items
    for matrix, shape in [
        (ds.data, (n_users, 3 * n_items)),
        (ds.test, (n_users, n_items)),
        (ds.noise, (n_users, 3 * n_items)),
    ]:
        assert sp.issparse(matrix) and matrix.format == "csr"
        assert matrix.dtype == np.float64 and matrix.shape == shape
        assert np.all(matrix.data == 1.0)
    assert ds.user_factors.shape == (n_users, 16)
    assert ds.item_factors.shape == (n_items, 16)
    assert ds.popularity.shape == (n_items,)
    assert "exp(s_ui" in ds.DESCR
    np.testing.assert_array_equal(ds.test.getnnz(axis=1), np.ones(n_users))
    # The factors are rescaled so that u.v has standard deviation 1.
    s = ds.user_factors @ ds.item_factors.T
    assert s.std() == pytest.approx(1.0)
    # Block 0 holds the views (~30 per user, plus views that buys add), the last
    # block the training buys (1 + Poisson(2) per user, at least 1), the cart
    # block sits in between.
    views = _block(ds.data, 0, n_items).getnnz(axis=1)
    carts = _block(ds.data, 1, n_items).getnnz(axis=1)
    buys = _block(ds.data, 2, n_items).getnnz(axis=1)
    assert 29 < views.mean() < 34 and views.min() >= 2
    assert buys.min() >= 1 and 2.7 < buys.mean() < 3.3
    assert buys.mean() < carts.mean() < views.mean()


def test_reproducible_and_seeded():
    kwargs = {"n_users": 150, "n_items": 120, "random_state": 7}
    a, b = make_multibehavior(**kwargs), make_multibehavior(**kwargs)
    for key in ("data", "test", "noise"):
        assert (a[key] != b[key]).nnz == 0
    for key in ("user_factors", "item_factors", "popularity"):
        np.testing.assert_array_equal(a[key], b[key])
    c = make_multibehavior(
        n_users=150, n_items=120, random_state=np.random.RandomState(8)
    )
    assert (a.data != c.data).nnz > 0
    assert not np.array_equal(a.popularity, c.popularity)


@pytest.mark.parametrize("holdout", ["pre-purchase", "remove"])
def test_held_out_purchase_never_in_target_block(holdout):
    ds = make_multibehavior(200, 150, holdout=holdout, random_state=1)
    buys = _block(ds.data, 2, ds.n_items)
    assert buys.multiply(ds.test).nnz == 0
    # Nor is any noise put at a held-out item.
    for b in range(2):
        assert _block(ds.noise, b, ds.n_items).multiply(ds.test).nnz == 0


def test_remove_deletes_every_auxiliary_interaction_with_the_test_item():
    ds = make_multibehavior(300, 200, holdout="remove", random_state=2)
    for b in range(len(ds.behaviors)):
        assert _block(ds.data, b, ds.n_items).multiply(ds.test).nnz == 0


def test_pre_purchase_keeps_about_70_percent_of_test_item_views():
    kwargs = {"n_users": 2000, "n_items": 300, "noise_rate": 0.0, "random_state": 3}
    pre = make_multibehavior(holdout="pre-purchase", **kwargs)
    removed = make_multibehavior(holdout="remove", **kwargs)
    n_items = pre.n_items
    # Same draws: the two differ exactly by auxiliary interactions with the test
    # item, which "pre-purchase" keeps and "remove" deletes.
    diff = pre.data - removed.data
    assert diff.min() == 0 and diff.nnz > 0
    test_cells = sp.hstack([pre.test, pre.test, sp.csr_matrix(pre.test.shape)])
    assert (diff.multiply(test_cells) != diff).nnz == 0
    np.testing.assert_array_equal(pre.test.toarray(), removed.test.toarray())

    # The held-out buy is a buy chosen uniformly, so it was viewed as often as
    # the user's other buys; 70% of those views came before the purchase.
    views = _block(pre.data, 0, n_items)
    buys = _block(pre.data, 2, n_items)
    per_user = np.asarray(buys.multiply(views).sum(axis=1)).ravel() / buys.getnnz(
        axis=1
    )
    p_viewed = per_user.mean()
    assert p_viewed > 0.8  # buying usually follows a view: the funnel
    kept = views.multiply(pre.test).getnnz(axis=1) > 0
    assert 0 < kept.mean() < p_viewed
    assert kept.mean() == pytest.approx(0.7 * p_viewed, abs=0.04)


@pytest.mark.parametrize("noise_rate", [0.0, 0.3, 0.6])
def test_noise_flags_and_rate(noise_rate):
    ds = make_multibehavior(400, 300, noise_rate=noise_rate, random_state=4)
    assert ds.noise.shape == ds.data.shape
    # Every flagged cell is an edge of data; the target block has no noise.
    assert (ds.noise.multiply(ds.data) != ds.noise).nnz == 0
    assert _block(ds.noise, 2, ds.n_items).nnz == 0
    if noise_rate == 0:
        assert ds.noise.nnz == 0
    for b in range(2):
        noise = _block(ds.noise, b, ds.n_items).nnz
        edges = _block(ds.data, b, ds.n_items).nnz
        assert abs(noise / edges - noise_rate) <= 0.02


def test_noise_fills_every_free_cell_when_asked_for_more():
    # 9 noise edges per genuine edge cannot fit into 30 x 10 cells: the noise
    # takes every cell that is neither genuine nor a held-out item.
    ds = make_multibehavior(
        30, 10, ("view", "buy"), 0.9, n_views=5, n_buys=2, random_state=5
    )
    views = _block(ds.data, 0, 10).toarray()
    assert np.all((views + ds.test.toarray()) > 0)
    genuine = views - _block(ds.noise, 0, 10).toarray()
    assert ds.noise.nnz == 300 - np.count_nonzero(genuine + ds.test.toarray())


def test_planted_preference_structure():
    ds = make_multibehavior(600, 500, noise_rate=0.3, random_state=6)
    scores = {}
    for name, matrix in [
        ("view", _genuine(ds, 0)),
        ("cart", _genuine(ds, 1)),
        ("buy", _genuine(ds, 2)),
        ("noise", ds.noise),
    ]:
        uv, b = _affinity_and_popularity(ds, matrix)
        scores[name] = (uv.mean(), (uv + b).mean())
    # Genuine views follow the utility s = u.v + b, noise does not follow the
    # user's own preference u.v at all.
    assert scores["view"][1] > scores["noise"][1] + 0.5
    assert scores["view"][0] > 0.5 and abs(scores["noise"][0]) < 0.3
    # Carts are a stronger signal than views, buys the strongest.
    assert scores["buy"][1] > scores["cart"][1] > scores["view"][1]
    # The held-out buys are buys like the others.
    uv, b = _affinity_and_popularity(ds, ds.test)
    assert (uv + b).mean() > scores["cart"][1]

    # Half the noise is clickbait on popular items.
    _, b_noise = _affinity_and_popularity(ds, ds.noise)
    # Clickbait tilts N(0, s^2) log-popularity by 2 s^2 (0.5 at s = 0.5), on
    # half of the noise: about +0.25 in all.
    assert b_noise.mean() > ds.popularity.mean() + 0.15
    per_item = np.asarray(ds.noise.sum(axis=0)).ravel()
    per_item = per_item[: ds.n_items] + per_item[ds.n_items : 2 * ds.n_items]
    assert spearmanr(per_item, ds.popularity)[0] > 0.3


def test_without_popularity_noise_is_uniform_over_items():
    ds = make_multibehavior(400, 200, popularity_skew=0.0, random_state=7)
    assert np.all(ds.popularity == 0)
    noise = _block(ds.noise, 0, ds.n_items)
    counts = np.asarray(noise.sum(axis=0)).ravel()
    # Poisson-like spread around the mean, no heavy head.
    assert counts.max() < 2 * counts.mean()


def test_two_behaviors_and_one_behavior():
    ds = make_multibehavior(100, 80, ["click", "order"], random_state=8)
    assert ds.behaviors == ("click", "order") and ds.target == "order"
    assert ds.data.shape == (100, 160) and ds.noise.shape == (100, 160)
    assert _block(ds.noise, 0, 80).nnz > 0 and _block(ds.noise, 1, 80).nnz == 0
    assert _block(ds.data, 1, 80).multiply(ds.test).nnz == 0

    ds = make_multibehavior(100, 80, ("buy",), noise_rate=0.5, random_state=8)
    assert ds.behaviors == ("buy",) and ds.target == "buy"
    assert ds.data.shape == (100, 80) and ds.noise.nnz == 0
    assert ds.data.getnnz(axis=1).min() >= 1
    assert ds.data.multiply(ds.test).nnz == 0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"behaviors": ("view", "view", "buy")}, ValueError, "distinct"),
        ({"behaviors": ()}, ValueError, "at least one"),
        ({"behaviors": ("view", 3)}, ValueError, "strings"),
        ({"behaviors": "buy"}, InvalidParameterError, "behaviors"),
        ({"noise_rate": 1.0}, InvalidParameterError, "noise_rate"),
        ({"noise_rate": -0.1}, InvalidParameterError, "noise_rate"),
        ({"holdout": "random"}, InvalidParameterError, "holdout"),
        ({"n_buys": 1}, InvalidParameterError, "n_buys"),
        ({"n_views": 0}, InvalidParameterError, "n_views"),
        ({"n_items": 3}, InvalidParameterError, "n_items"),
    ],
)
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_multibehavior(**{"n_users": 20, "n_items": 20, **kwargs})
