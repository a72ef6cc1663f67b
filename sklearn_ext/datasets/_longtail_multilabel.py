"""Long-tailed multi-label data with a planted label DAG and a breakable shortcut."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from numbers import Integral, Real

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, logit
from sklearn.utils import Bunch, check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, StrOptions, validate_params
from sklearn_ext.utils._torch import child_seeds

__all__ = ["make_longtail_multilabel"]

# Rows of the sample on which the intercepts are calibrated.
_N_CALIBRATION = 20_000


def _draw_labels(rng, n_samples, parents, order, intercepts, parent_effect):
    """Draw the label matrix label by label, in the topological ``order``."""
    n_labels = len(parents)
    # Column-major: the loop reads and writes whole columns.
    Y = np.zeros((n_samples, n_labels), dtype=np.int64, order="F")
    for k in order:
        n_on = Y[:, parents[k]].sum(axis=1)
        prob = expit(intercepts[k] + parent_effect * n_on)
        Y[:, k] = rng.random(n_samples) < prob
    return np.ascontiguousarray(Y)


def _calibrate_intercepts(rng, parents, order, frequencies, parent_effect):
    """Intercepts whose marginals match ``frequencies`` on a calibration sample.

    The labels are calibrated and drawn in the topological ``order``, so the
    parents of each label are drawn before it.
    """
    n_labels = len(parents)
    Y = np.zeros((_N_CALIBRATION, n_labels), dtype=np.int64, order="F")
    intercepts = np.empty(n_labels)
    for k in order:
        p = frequencies[k]
        n_on = Y[:, parents[k]].sum(axis=1)
        counts = np.bincount(n_on, minlength=1) / _N_CALIBRATION
        shift = parent_effect * np.arange(len(counts))
        if len(counts) == 1 or shift[-1] == 0.0:
            b = logit(p)
        else:

            def gap(b, counts=counts, shift=shift, p=p):
                return counts @ expit(b + shift) - p

            # gap(logit(p) - max shift - 1) < 0 < gap(logit(p) + 1)
            b = brentq(gap, logit(p) - shift[-1] - 1.0, logit(p) + 1.0, xtol=1e-12)
        intercepts[k] = b
        prob = expit(b + parent_effect * n_on)
        Y[:, k] = rng.random(_N_CALIBRATION) < prob
    return intercepts


def _draw_sample(rng, n_samples, structure, parent_effect, noise, shortcut_strength):
    """Labels, then shortcut switches, then features, of one sample."""
    parents = [np.flatnonzero(col) for col in structure.graph.T]
    Y = _draw_labels(
        rng, n_samples, parents, structure.order, structure.intercepts, parent_effect
    )
    active = np.asfortranarray(Y, dtype=np.float64)
    for t in np.flatnonzero(structure.tail):
        h = structure.shortcut_parent[t]
        switch = rng.random(n_samples) < shortcut_strength
        active[(Y[:, t] == 1) & (Y[:, h] == 0) & switch, h] = 1.0
    X = rng.standard_normal((n_samples, structure.signatures.shape[1]))
    X *= noise
    X += active @ structure.signatures
    return X, Y


def _cap_tail_parents_of_heads(rng, order, shortcut_parent, max_parents):
    """Move head labels so at most ``max_parents`` of their tail partners precede.

    A tail label placed before its shortcut partner ``h`` is a parent of ``h``
    whose edge must be kept. For each head label ``h`` with more than
    ``max_parents`` of its tail partners before it, the slot of ``h`` among the
    positions of ``h`` and its partners is redrawn uniformly from the first
    ``max_parents + 1``, the partners keeping their relative order. A uniform
    ``order`` becomes uniform given that no head label has more than
    ``max_parents`` tail parents, since the arrangements within these disjoint
    groups of labels are independent.
    """
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    for h in np.unique(shortcut_parent[shortcut_parent >= 0]):
        partners = np.flatnonzero(shortcut_parent == h)
        partners = partners[np.argsort(rank[partners])]
        n_before = np.count_nonzero(rank[partners] < rank[h])
        if n_before <= max_parents:
            continue
        slot = rng.integers(max_parents + 1)
        members = np.concatenate([partners[:slot], [h], partners[slot:]])
        positions = np.sort(rank[members])
        order[positions] = members
        rank[members] = positions
    return order


def _plant_graph(srng, L, tail, shortcut_parent, order, edge_probability, max_parents):
    """The DAG: random forward edges of ``order`` plus the shortcut edges, capped."""
    rank = np.empty(L, dtype=np.int64)
    rank[order] = np.arange(L)
    graph = np.zeros((L, L), dtype=bool)
    # Entry (a, b) of the triangle is the edge from position a to position b.
    graph[np.ix_(order, order)] = np.triu(srng.random((L, L)) < edge_probability, k=1)
    t = np.flatnonzero(tail)
    h = shortcut_parent[t]
    forward = rank[h] < rank[t]
    graph[h[forward], t[forward]] = True
    graph[t[~forward], h[~forward]] = True
    for k in order:
        parents = np.flatnonzero(graph[:, k])
        if len(parents) <= max_parents:
            continue
        # The shortcut edges into k: from its own partner or its tail partners.
        partner_of_k = shortcut_parent[parents] == k
        if tail[k]:
            partner_of_k |= parents == shortcut_parent[k]
        kept = list(parents[partner_of_k])
        parents = parents[~partner_of_k]
        kept.extend(srng.choice(parents, max_parents - len(kept), replace=False))
        graph[:, k] = False
        graph[kept, k] = True
    return graph.astype(np.int64)


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_labels": [Interval(Integral, 2, None, closed="left")],
        "zipf_exponent": [Interval(Real, 0, None, closed="left")],
        "max_frequency": [Interval(Real, 0, 1, closed="neither")],
        "tail_fraction": [Interval(Real, 0, 1, closed="both")],
        "edge_probability": [Interval(Real, 0, 1, closed="both")],
        "max_parents": [Interval(Integral, 1, None, closed="left")],
        "edge_direction": [StrOptions({"random", "frequent_to_rare"})],
        "parent_effect": [Interval(Real, 0, None, closed="left")],
        "n_informative": [Interval(Integral, 1, None, closed="left")],
        "signal": [Interval(Real, None, None, closed="neither")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "shortcut_strength": [Interval(Real, 0, 1, closed="both")],
        "n_test": [Interval(Integral, 0, None, closed="left")],
        "test_shortcut_strength": [Interval(Real, 0, 1, closed="both")],
        "return_structure": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_longtail_multilabel(
    n_samples=2000,
    n_features=100,
    n_labels=30,
    *,
    zipf_exponent=1.2,
    max_frequency=0.3,
    tail_fraction=1 / 3,
    edge_probability=0.1,
    max_parents=2,
    edge_direction="random",
    parent_effect=2.0,
    n_informative=5,
    signal=1.0,
    noise=1.0,
    shortcut_strength=0.9,
    n_test=0,
    test_shortcut_strength=0.0,
    return_structure=False,
    random_state=None,
):
    """Generate long-tailed multi-label data with a shortcut that a shift breaks.

    Label frequencies follow Zipf's law, labels depend on each other through a
    planted DAG, and in the training sample the documents of each tail label
    carry the features of a frequent "shortcut partner" label, joined to it by
    an edge: a model can learn the tail label from the partner's
    well-represented features (a shortcut) instead of its own. An optional
    test split drawn from the same structure, with the same label distribution
    but a weaker shortcut, exposes such a model. The model is given precisely
    in the Notes.

    Parameters
    ----------
    n_samples : int, default=2000
        Number of training samples.
    n_features : int, default=100
        Number of features, at least ``n_informative``.
    n_labels : int, default=30
        Number of labels ``L``, at least 2.
    zipf_exponent : float, default=1.2
        Exponent ``s >= 0`` of the Zipf law of the label frequencies.
    max_frequency : float in (0, 1), default=0.3
        Frequency of the most frequent label.
    tail_fraction : float in [0, 1], default=1/3
        Fraction of the labels, the least frequent ones, that are tail labels.
        Tail labels must not overlap the head labels (the first
        ``ceil(L / 3)``).
    edge_probability : float in [0, 1], default=0.1
        Probability of each extra edge ``i -> k`` of the DAG, for every label
        ``i`` before ``k`` in the topological order.
    max_parents : int, default=2
        Most parents of a label, at least 1.
    edge_direction : {"random", "frequent_to_rare"}, default="random"
        Topological order of the DAG. With ``"random"``, a uniformly random
        order independent of the frequencies, so that edges go from frequent
        to rare labels as well as from rare to frequent ones. With
        ``"frequent_to_rare"``, the index (frequency) order: every edge goes
        from a more frequent to a rarer label, the DAG and the samples being
        those of earlier versions for the same ``random_state``.
    parent_effect : float >= 0, default=2.0
        Increase of a label's log-odds per positive parent.
    n_informative : int, default=5
        Nonzero entries of the feature signature of each label.
    signal : float, default=1.0
        Value of the nonzero entries of the signatures.
    noise : float >= 0, default=1.0
        Standard deviation of the Gaussian noise added to the features.
    shortcut_strength : float in [0, 1], default=0.9
        In the training sample, probability that a row with tail label ``t``
        and without its shortcut partner ``h`` carries the signature of ``h``.
    n_test : int, default=0
        Number of samples of the shifted test split; none if 0.
    test_shortcut_strength : float in [0, 1], default=0.0
        The shortcut strength of the test split.
    return_structure : bool, default=False
        Whether to return the planted structure as well.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of every random draw.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Training features, float64.
    Y : ndarray of shape (n_samples, n_labels)
        Training label indicator matrix, int64.
    X_test : ndarray of shape (n_test, n_features)
        Features of the shifted test split; only when ``n_test > 0``.
    Y_test : ndarray of shape (n_test, n_labels)
        Labels of the shifted test split; only when ``n_test > 0``.
    structure : :class:`~sklearn.utils.Bunch`
        Only when ``return_structure=True``, returned last: ``graph``
        (ndarray of shape (L, L), int 0/1, ``graph[i, j] = 1`` for an edge
        ``i -> j``), ``intercepts`` (the ``b_k``), ``frequencies`` (the target
        ``p_k``), ``tail`` and ``head`` (bool masks of length ``L``),
        ``shortcut_parent`` (the shortcut partner of each tail label, -1 for
        the other labels: the head label whose signature a tail label's
        training documents carry; an edge joins them, in either direction),
        ``signatures`` (ndarray of shape (L, n_features)) and ``order`` (the
        topological order used, a permutation of the labels: every edge goes
        from a label to a later one, and the labels are drawn in this order).

    Notes
    -----
    With ``L = n_labels``:

    1. *Frequencies.* Label ``k = 0, ..., L - 1`` has target marginal
       frequency ``p_k = max_frequency * (k + 1) ** -zipf_exponent``. The
       tail labels are the last ``ceil(tail_fraction * L)``, the head labels
       the first ``ceil(L / 3)``.
    2. *DAG.* Every tail label ``t`` gets one shortcut partner ``h`` drawn
       uniformly from the head labels. A topological order ``pi`` of the
       labels is then chosen: with ``edge_direction="frequent_to_rare"`` the
       index order ``0, ..., L - 1``; with ``"random"`` a uniformly random
       permutation, independent of the frequencies, in which each head label
       ``h`` preceded by more than ``max_parents`` of its tail partners is
       moved to a uniformly drawn slot among the first ``max_parents + 1``
       of the positions of ``h`` and its partners (so ``pi`` is uniform given
       that no head label has more than ``max_parents`` tail parents). Each
       label gets an edge from each label before it in ``pi``, independently
       with probability ``edge_probability``, and each tail label ``t`` and
       its partner ``h`` are joined by the edge ``h -> t`` if ``h`` comes
       first in ``pi``, ``t -> h`` otherwise: with ``"random"``, about half
       the shortcut edges go from the rare ``t`` to the frequent ``h``, and
       the random edges go both ways. A label with more than ``max_parents``
       parents keeps the edges from its shortcut partners among them (its
       own partner, or the tail labels whose partner it is) and a uniformly
       drawn subset of the others. Every edge goes from a label to a later
       one in ``pi``, returned as ``structure.order``.
    3. *Labels.* In the order ``pi``,
       ``P(y_k = 1 | parents) = sigmoid(b_k + parent_effect * n_k)``, with
       ``n_k`` the number of positive parents. The intercepts are calibrated
       on a sample of 20000 rows drawn label by label in the order ``pi``,
       parents first: ``b_k`` solves
       ``mean(sigmoid(b_k + parent_effect * n_k)) = p_k`` over its rows
       (Brent's method), then label ``k`` of that sample is drawn with
       ``b_k``. The marginal of label ``k`` is therefore ``p_k`` up to the
       calibration error, of standard deviation at most
       ``sqrt(p_k (1 - p_k) / 20000)``.
    4. *Features.* Label ``k`` has a signature ``S_k`` with ``n_informative``
       entries equal to ``signal`` and the others 0: label ``k`` takes columns
       ``k * n_informative`` to ``(k + 1) * n_informative - 1`` when
       ``n_features >= L * n_informative``, otherwise ``n_informative``
       distinct columns drawn uniformly for each label. The features are
       ``X = A @ S + noise * E`` with ``E`` standard normal and ``A`` the 0/1
       active-signature matrix, ``A = Y`` plus the shortcut.
    5. *Shortcut.* For each tail label ``t`` with shortcut partner ``h``, each
       row with ``y_t = 1`` and ``y_h = 0`` gets ``A[row, h] = 1`` with
       probability ``shortcut_strength``: among the training rows with
       ``y_t = 1`` a fraction ``P(h | t) + (1 - P(h | t)) * shortcut_strength``
       carry the signature of ``h``. Whatever the direction of the edge
       between ``t`` and ``h``, ``P(h | t) > P(h)`` when
       ``parent_effect > 0``.
    6. *Shifted test split.* ``n_test`` rows drawn as the training sample from
       the same structure (DAG, intercepts, signatures), hence with the same
       label distribution, but with ``test_shortcut_strength``: with the
       default 0, only a fraction ``P(h | t)`` of the rows with ``y_t = 1``
       carry the signature of ``h``.

    Three child generators are seeded from ``random_state``: one draws the
    structure (DAG, calibration, signatures), one the training sample and one
    the test split, so that the structure depends neither on ``n_samples``
    nor on ``n_test``, and the training sample not on ``n_test``.

    References
    ----------
    .. [1] G. K. Zipf, "Human Behavior and the Principle of Least Effort",
       Addison-Wesley, 1949.
    .. [2] R. Geirhos, J.-H. Jacobsen, C. Michaelis, R. Zemel, W. Brendel,
       M. Bethge and F. A. Wichmann, "Shortcut learning in deep neural
       networks", Nature Machine Intelligence, 2, 665-673, 2020.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_longtail_multilabel
    >>> X, Y, X_test, Y_test, structure = make_longtail_multilabel(
    ...     n_samples=500, n_test=200, return_structure=True, random_state=0
    ... )
    >>> X.shape, Y.shape, X_test.shape, Y_test.shape
    ((500, 100), (500, 30), (200, 100), (200, 30))
    >>> int(structure.tail.sum()), int(structure.head.sum())
    (10, 10)

    With the default ``edge_direction="random"``, some edges go from a rarer
    (higher index) to a more frequent label, and all of them follow the
    topological order ``structure.order``:

    >>> parent, child = structure.graph.nonzero()
    >>> bool((parent > child).any()), bool((parent < child).any())
    (True, True)
    >>> rank = structure.order.argsort()
    >>> bool((rank[parent] < rank[child]).all())
    True

    With ``edge_direction="frequent_to_rare"``, every edge goes from a more
    frequent to a rarer label:

    >>> *_, structure = make_longtail_multilabel(
    ...     edge_direction="frequent_to_rare", return_structure=True, random_state=0
    ... )
    >>> parent, child = structure.graph.nonzero()
    >>> bool((parent < child).all())
    True
    """
    if n_informative > n_features:
        raise ValueError(
            f"n_informative={n_informative} exceeds n_features={n_features}."
        )
    # The tolerance keeps round-off such as 0.1 * 30 = 3.0000000000000004 from
    # adding a tail label.
    n_tail = math.ceil(tail_fraction * n_labels - 1e-9)
    n_head = math.ceil(n_labels / 3)
    if n_tail + n_head > n_labels:
        raise ValueError(
            f"tail_fraction={tail_fraction} gives {n_tail} tail labels, which "
            f"overlap the {n_head} head labels of n_labels={n_labels}; lower "
            "tail_fraction."
        )
    rng = check_random_state(random_state)
    structure_seed, train_seed, test_seed = child_seeds(rng, 3)

    # Structure: DAG, intercepts, signatures.
    srng = np.random.default_rng(structure_seed)
    L = n_labels
    frequencies = max_frequency * np.arange(1, L + 1, dtype=np.float64) ** (
        -zipf_exponent
    )
    if frequencies[-1] == 0.0:
        raise ValueError(
            f"zipf_exponent={zipf_exponent} makes the frequency of the last of "
            f"n_labels={n_labels} labels underflow to 0; lower zipf_exponent."
        )
    head = np.arange(L) < n_head
    tail = np.arange(L) >= L - n_tail
    shortcut_parent = np.full(L, -1, dtype=np.int64)
    shortcut_parent[tail] = srng.integers(n_head, size=n_tail)
    if edge_direction == "random":
        order = srng.permutation(L)
        order = _cap_tail_parents_of_heads(srng, order, shortcut_parent, max_parents)
    else:
        # No draw: the frequent_to_rare structure is that of earlier versions.
        order = np.arange(L)
    graph = _plant_graph(
        srng, L, tail, shortcut_parent, order, edge_probability, max_parents
    )
    parents = [np.flatnonzero(col) for col in graph.T]
    intercepts = _calibrate_intercepts(srng, parents, order, frequencies, parent_effect)
    signatures = np.zeros((L, n_features))
    if n_features >= L * n_informative:
        columns = np.arange(L * n_informative).reshape(L, n_informative)
    else:
        columns = np.array(
            [srng.choice(n_features, n_informative, replace=False) for _ in range(L)]
        )
    signatures[np.arange(L)[:, None], columns] = signal
    structure = Bunch(
        graph=graph,
        intercepts=intercepts,
        frequencies=frequencies,
        tail=tail,
        head=head,
        shortcut_parent=shortcut_parent,
        signatures=signatures,
        order=order,
    )

    out = _draw_sample(
        np.random.default_rng(train_seed),
        n_samples,
        structure,
        parent_effect,
        noise,
        shortcut_strength,
    )
    if n_test > 0:
        out += _draw_sample(
            np.random.default_rng(test_seed),
            n_test,
            structure,
            parent_effect,
            noise,
            test_shortcut_strength,
        )
    if return_structure:
        out += (structure,)
    return out
