"""Synthetic brain-network cohorts on a mouse connectome template."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from scipy.sparse.csgraph import shortest_path
from sklearn.utils import Bunch, check_random_state
from threadpoolctl import threadpool_limits

from sklearn_ext.datasets._mice import load_mice_connectomes
from sklearn_ext.utils._connectivity import matrices_to_vec
from sklearn_ext.utils._sklearn_compat import Interval, StrOptions, validate_params

__all__ = ["make_brain_cohort"]

_EFFECTS = ("higher_order", "none", "pairwise")
# Number of atlas nodes of the template.
_N_ATLAS_NODES = 332
# Visits whose adjacency matrices and eigendecompositions are held at once.
_CHUNK_ROWS = 256

_DESCR = """\
Synthetic brain-network cohort (make_brain_cohort)
--------------------------------------------------

Each row is one visit of one subject: the vectorised lower triangle (nilearn's
layout, diagonal discarded) of a weighted brain network, then n_frames signal
values per node. The networks are noisy copies, template * exp(edge_noise * E), of a
sparsified template: the mean log1p connectome of 32 mice (Wang et al. 2020)
restricted to its n_nodes strongest regions. The node signals are heat-kernel
diffusions of white noise on each visit's network (n_frames frames per node),
scaled to unit variance.
effect="higher_order": only patients have frames where all n_planted far-apart
planted regions activate together; controls have as many activations of each
planted region, and of each pair, but never of all at once. effect="pairwise":
n_planted // 2 planted edges are (1 + effect_size) times stronger in patients.
effect="none": the labels are noise.
"""


def _template(n_nodes, knn):
    """Sparsified mean log1p mouse connectome on its ``n_nodes`` strongest nodes.

    Returns the template (zero diagonal, maximum 1), the indices of the kept
    nodes in the atlas, in increasing order, and their names.
    """
    mice = load_mice_connectomes()
    full = np.log1p(mice.graphs).mean(axis=0)
    np.fill_diagonal(full, 0.0)
    strength = full.sum(axis=1)
    # Stable sort: ties in strength keep the lower node index.
    nodes = np.sort(np.argsort(-strength, kind="stable")[:n_nodes])
    weights = full[np.ix_(nodes, nodes)]
    strongest = np.argsort(-weights, axis=1, kind="stable")[:, :knn]
    support = np.zeros((n_nodes, n_nodes), dtype=bool)
    support[np.arange(n_nodes)[:, None], strongest] = True
    support |= support.T
    support &= weights > 0
    template = np.where(support, weights, 0.0)
    template /= template.max()
    return template, nodes, mice.node_names[nodes]


def _hop_distances(support):
    """Hop distances on the graph ``support``; ``n_nodes`` between components."""
    n_nodes = support.shape[0]
    hops = shortest_path(support.astype(np.float64), unweighted=True, directed=False)
    hops[~np.isfinite(hops)] = n_nodes
    return hops.astype(np.int64)


def _min_pairwise(hops, nodes):
    """Smallest hop distance between two distinct nodes of ``nodes``."""
    sub = hops[np.ix_(nodes, nodes)]
    return int(sub[~np.eye(len(nodes), dtype=bool)].min())


def _far_apart_nodes(hops, n_planted, rng):
    """Farthest-point draw: a uniform first node, then max-min hop distance.

    Each further node maximises the smallest hop distance to the nodes chosen
    so far; ties are broken uniformly at random.
    """
    n_nodes = hops.shape[0]
    chosen = [int(rng.randint(n_nodes))]
    nearest = hops[chosen[0]].copy()
    for _ in range(n_planted - 1):
        candidates = nearest.copy()
        candidates[chosen] = -1
        best = np.flatnonzero(candidates == candidates.max())
        node = int(best[rng.randint(best.size)])
        chosen.append(node)
        nearest = np.minimum(nearest, hops[node])
    return np.sort(np.asarray(chosen, dtype=np.int64))


def _diffused_signals(adjacency, heat_time, z):
    """Unit-variance heat-kernel signals ``K z / sqrt(diag(K K^T))``, per visit.

    ``K = expm(-heat_time * L)`` with ``L`` the symmetric normalised Laplacian
    of each adjacency matrix of the stack (an isolated node has ``L_ii = 1``);
    ``z`` has shape (n_visits, n_nodes, n_frames). Returns the signals, of
    the shape of ``z``, and the kernels (n_visits, n_nodes, n_nodes).
    """
    n_nodes = adjacency.shape[-1]
    degree = adjacency.sum(axis=-1)
    inv_sqrt = np.zeros_like(degree)
    np.divide(1.0, np.sqrt(degree), out=inv_sqrt, where=degree > 0)
    laplacian = -adjacency * inv_sqrt[:, :, None] * inv_sqrt[:, None, :]
    laplacian[:, np.arange(n_nodes), np.arange(n_nodes)] += 1.0
    # One BLAS thread, for this call only (as scikit-learn's KMeans does): the
    # matrices are small, and threads only add synchronisation, which costs
    # 10-100x when another process holds a core.
    with threadpool_limits(limits=1, user_api="blas"):
        eigval, eigvec = np.linalg.eigh(laplacian)
        decay = np.exp(-heat_time * eigval)
        kernel = np.einsum("rij,rj,rkj->rik", eigvec, decay, eigvec)
        signal = kernel @ z
    std = np.sqrt(np.einsum("rij,rij->ri", kernel, kernel))
    return signal / std[:, :, None], kernel


def _event_frames(labels, n_planted, n_rounds, n_frames, rng):
    """Which planted nodes co-activate at which frame, per visit.

    Per round, a patient has ``n_planted - 2`` frames where every planted
    node activates and ``n_planted`` frames where one does, a control
    ``n_planted`` frames where all but one do. Both give every planted node
    ``n_planted - 1`` activations and every pair ``n_planted - 2``
    co-activations per round; only patients have frames where all of them
    are active together. Returns a bool array (n_visits, n_frames,
    n_planted), the frames drawn uniformly without replacement.
    """
    p = n_planted
    joint = np.ones((p - 2, p), dtype=bool)
    singles = np.eye(p, dtype=bool)
    all_but_one = ~np.eye(p, dtype=bool)
    patient = np.concatenate([joint, singles] * n_rounds)
    control = np.concatenate([all_but_one] * n_rounds)
    out = np.zeros((labels.size, n_frames, p), dtype=bool)
    for r, label in enumerate(labels):
        events = patient if label == 1 else control
        frames = rng.permutation(n_frames)[: events.shape[0]]
        out[r, frames] = events
    return out


@validate_params(
    {
        "n_subjects": [Interval(Integral, 2, None, closed="left")],
        "n_nodes": [Interval(Integral, 10, _N_ATLAS_NODES, closed="both")],
        "effect": [StrOptions(set(_EFFECTS))],
        "n_planted": [Interval(Integral, 3, None, closed="left")],
        "n_frames": [Interval(Integral, 1, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "effect_size": [Interval(Real, 0, None, closed="left")],
        "n_visits": [Interval(Integral, 1, None, closed="left")],
        "edge_noise": [Interval(Real, 0, None, closed="left")],
        "knn": [Interval(Integral, 1, None, closed="left")],
        "heat_time": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_brain_cohort(
    n_subjects=200,
    *,
    n_nodes=100,
    effect="higher_order",
    n_planted=3,
    n_frames=12,
    n_rounds=1,
    effect_size=3.0,
    n_visits=1,
    edge_noise=0.25,
    knn=8,
    heat_time=1.0,
    random_state=None,
):
    """Generate a cohort of labelled brain networks with a planted group effect.

    A benchmark for brain-network classifiers, in particular those that model
    higher-order interactions between regions, such as multi-scale hypergraph
    learning (MuHL) [2]_. Every visit is one row: a weighted network on a
    realistic connectome template, followed by ``n_frames`` signal values
    (time frames) per node. In the order of the random draws:

    1. Template (no random draw): the mean of ``log1p`` of the 32 mouse
       connectomes of :func:`~sklearn_ext.datasets.load_mice_connectomes` [1]_,
       restricted to the ``n_nodes`` nodes of largest strength (row sum), in
       increasing atlas order. Each node keeps its ``knn`` strongest edges
       (edges of zero weight excepted); the support is the union of these
       choices, and the template is the mean weight on the support divided by
       its maximum, with a zero diagonal.
    2. Planted nodes. ``effect="higher_order"`` or ``"none"``: a set ``S`` of
       ``n_planted`` nodes far apart on the support graph: the first is
       uniform, each further one maximises the smallest hop distance to those
       already chosen (ties broken uniformly at random). ``effect="pairwise"``:
       ``n_planted // 2`` distinct support edges drawn uniformly, and ``S`` is
       the set of their ends.
    3. Labels: each subject is a patient (``y = 1``) with probability 1/2.
    4. Visits: every visit draws its own noise. The adjacency is
       ``A = template * exp(edge_noise * E)`` on the support, with ``E``
       symmetric and standard normal, and zero elsewhere; with
       ``effect="pairwise"`` the planted edges of patients are multiplied by
       ``1 + effect_size``. The node signals are ``n_frames`` frames
       ``x = K z / sqrt(diag(K K^T))``, ``z ~ N(0, I)`` drawn per frame and
       ``K = expm(-heat_time * L)`` the heat kernel of the symmetric
       normalised Laplacian ``L`` of ``A``: spatially smooth noise with unit
       variance at every node.
    5. ``effect="higher_order"``: co-activations. In each of ``n_rounds``
       rounds a patient has ``n_planted - 2`` frames where all the planted
       nodes activate together and ``n_planted`` frames where a single one
       does; a control has ``n_planted`` frames where all planted nodes but
       one activate together (the frames drawn uniformly without
       replacement, per visit). An activation of node ``i`` adds
       ``effect_size * K[:, i] / K[i, i]`` to the frame: ``effect_size`` at
       ``i``, spreading into its neighbourhood.

    Parameters
    ----------
    n_subjects : int, default=200
        Number of subjects, at least 2.
    n_nodes : int, default=100
        Number of brain regions kept from the 332 of the atlas, from 10 to 332.
    effect : {"higher_order", "pairwise", "none"}, default="higher_order"
        What carries the label: the joint co-activation of the planted nodes,
        single edges, or nothing.
    n_planted : int, default=3
        Number of planted nodes ``S`` (``"higher_order"``, ``"none"``), or twice
        the number of planted edges (``"pairwise"``); from 3 to
        ``n_nodes // 4``.
    n_frames : int, default=12
        Signal frames per node (the node features of a row); at least
        ``n_rounds * (2 * n_planted - 2)`` for ``effect="higher_order"``.
    n_rounds : int, default=1
        Rounds of co-activation frames per visit (``"higher_order"``).
    effect_size : float, default=3.0
        Peak of an activation (signals have unit variance), or the relative
        increase of a planted edge's weight; at least 0.
    n_visits : int, default=1
        Rows per subject: repeated visits with the same label but fresh
        noise and frames; at least 1.
    edge_noise : float, default=0.25
        Standard deviation of the log-normal noise of the edge weights, at
        least 0.
    knn : int, default=8
        Strongest edges kept per node in the template's support, from 1 to
        ``n_nodes - 1``.
    heat_time : float, default=1.0
        Diffusion time of the heat kernel, greater than 0; larger values give
        smoother node signals.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of every random draw.

    Returns
    -------
    dataset : :class:`~sklearn.utils.Bunch`
        With the fields:

        - ``data``: ndarray of shape (n_subjects * n_visits,
          n_nodes * (n_nodes - 1) // 2 + n_nodes * n_frames), float64: the
          lower triangle of ``A`` row by row (diagonal discarded), then the
          node signals, node by node (node 0's ``n_frames`` frames first).
          Rows go subject by subject, visits consecutive.
        - ``target``: ndarray of shape (n_subjects * n_visits,), int, 0 or 1.
        - ``groups``: ndarray of shape (n_subjects * n_visits,), int, the
          subject of each row (for grouped cross-validation).
        - ``planted_nodes``: ndarray of shape (n_planted,) (``"pairwise"``: up
          to ``2 * (n_planted // 2)``), int, sorted. With ``effect="none"``,
          the nodes a higher-order effect would use; nothing is activated.
        - ``planted_edges``: ndarray of shape (n_planted // 2, 2), int, node
          pairs ``i < j`` in increasing order (``"pairwise"``); shape (0, 2)
          otherwise.
        - ``planted_min_hops``: int, the smallest hop distance on the
          support graph between two planted nodes (``n_nodes`` when they lie
          in different components).
        - ``activations``: ndarray of shape (n_subjects * n_visits, n_frames,
          n_nodes), bool, the nodes activated at each frame of each row.
        - ``template``: ndarray of shape (n_nodes, n_nodes), the template.
        - ``node_names``: ndarray of shape (n_nodes,), str, atlas names of the
          kept nodes.
        - ``nodes``: ndarray of shape (n_nodes,), int, indices of the kept
          nodes among the 332 of the atlas.
        - ``n_nodes``, ``n_node_features`` (``n_frames``) and
          ``discard_diagonal`` (True): the layout of ``data``.
        - ``DESCR``: a description of the model.

    Notes
    -----
    With ``effect="higher_order"`` the label is a property of the planted
    set as a whole, not of any region or connection, nor of any pair of
    regions: every planted region activates equally often in both classes,
    and every pair of planted regions co-activates equally often, so the
    node means and variances and the correlations between regions (the
    functional connectivity) have the same distribution in patients and
    controls (up to noise), as have the networks. Only patients have frames
    where all the planted regions are active together: a third- (or
    higher-) order moment. As the planted regions are spread apart on the
    network (no two share an edge at the defaults), a model must read a
    group of distant regions jointly, frame by frame, as a hyperedge does
    [2]_; a linear model on the node signals, on the connections or on the
    correlations between regions sits at chance. ``effect="pairwise"`` is
    the contrasting case of a classical edge-wise effect, and
    ``effect="none"`` a null benchmark.

    References
    ----------
    .. [1] N. Wang, R. J. Anderson, D. G. Ashbrook, V. Gopalakrishnan, Y. Park,
       C. E. Priebe, ... and G. A. Johnson, "Variability and heritability of
       mouse brain structure: Microscopic MRI atlases and connectomes for
       diverse strains", NeuroImage 222:117274, 2020,
       https://doi.org/10.1016/j.neuroimage.2020.117274.
    .. [2] D. Sim, S. Hwang, J. Baek, G. Wu and W. H. Kim, "Learning
       Multi-Scale Hypergraph for High-Order Brain Connectivity Analysis",
       ICML, 2026.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_brain_cohort
    >>> cohort = make_brain_cohort(20, n_nodes=40, n_visits=2, random_state=0)
    >>> cohort.data.shape, cohort.groups[:4].tolist()
    ((40, 1260), [0, 0, 1, 1])
    >>> joint = cohort.activations[:, :, cohort.planted_nodes].all(axis=2)
    >>> bool((joint.any(axis=1) == (cohort.target == 1)).all())
    True
    """
    if knn > n_nodes - 1:
        raise ValueError(
            f"knn={knn} must be at most n_nodes - 1 = {n_nodes - 1}: a node has "
            "no more neighbours."
        )
    if n_planted > n_nodes // 4:
        raise ValueError(
            f"n_planted={n_planted} must be at most n_nodes // 4 = {n_nodes // 4} "
            f"for n_nodes={n_nodes}, so that the planted nodes can lie far apart."
        )
    needed = n_rounds * (2 * n_planted - 2)
    if effect == "higher_order" and n_frames < needed:
        raise ValueError(
            f"n_frames={n_frames} is too few: {n_rounds} round(s) of co-activations "
            f"of {n_planted} planted nodes take n_rounds * (2 * n_planted - 2) = "
            f"{needed} frames."
        )
    rng = check_random_state(random_state)

    # 1. Template.
    template, nodes, node_names = _template(n_nodes, knn)
    support = template > 0
    rows_up, cols_up = np.nonzero(np.triu(support, k=1))
    hops = _hop_distances(support)

    # 2. Planted nodes or edges.
    if effect == "pairwise":
        picked = rng.choice(rows_up.size, size=n_planted // 2, replace=False)
        planted_edges = np.column_stack([rows_up[picked], cols_up[picked]])
        planted_edges = planted_edges[np.lexsort(planted_edges.T[::-1])]
        planted_nodes = np.unique(planted_edges)
    else:
        planted_nodes = _far_apart_nodes(hops, n_planted, rng)
        planted_edges = np.empty((0, 2), dtype=np.int64)
    planted_edges = planted_edges.astype(np.int64)
    planted_min_hops = _min_pairwise(hops, planted_nodes)

    # 3. Labels.
    labels = rng.randint(2, size=n_subjects)

    # 4-5. Visits.
    n_rows = n_subjects * n_visits
    groups = np.repeat(np.arange(n_subjects, dtype=np.int64), n_visits)
    target = labels[groups].astype(np.int64)
    activations = np.zeros((n_rows, n_frames, n_nodes), dtype=bool)
    base = template[rows_up, cols_up]
    # Positions of the planted edges among the support edges (pairwise effect).
    edge_pos = np.flatnonzero(
        np.isin(rows_up * n_nodes + cols_up, planted_edges @ [n_nodes, 1])
    )

    n_edge_cols = n_nodes * (n_nodes - 1) // 2
    data = np.empty((n_rows, n_edge_cols + n_nodes * n_frames))
    for start in range(0, n_rows, _CHUNK_ROWS):
        stop = min(start + _CHUNK_ROWS, n_rows)
        noise = rng.standard_normal(size=(stop - start, rows_up.size))
        weights = base * np.exp(edge_noise * noise)
        weights[np.ix_(target[start:stop] == 1, edge_pos)] *= 1.0 + effect_size
        adjacency = np.zeros((stop - start, n_nodes, n_nodes))
        adjacency[:, rows_up, cols_up] = weights
        adjacency[:, cols_up, rows_up] = weights
        z = rng.standard_normal(size=(stop - start, n_nodes, n_frames))
        signal, kernel = _diffused_signals(adjacency, heat_time, z)
        if effect == "higher_order":
            events = _event_frames(
                target[start:stop], n_planted, n_rounds, n_frames, rng
            )
            activations[start:stop][:, :, planted_nodes] = events
            # Bumps K[:, i] / K[i, i] of height effect_size at each active node.
            bumps = (
                kernel[:, :, planted_nodes]
                / np.diagonal(kernel, axis1=1, axis2=2)[:, None, planted_nodes]
            )
            signal += effect_size * np.einsum("rnp,rfp->rnf", bumps, events)
        # The row: nilearn's lower-triangle layout, then the node signals.
        data[start:stop, :n_edge_cols] = matrices_to_vec(adjacency)
        data[start:stop, n_edge_cols:] = signal.reshape(stop - start, -1)

    return Bunch(
        data=data,
        target=target,
        groups=groups,
        planted_nodes=planted_nodes.astype(np.int64),
        planted_edges=planted_edges,
        planted_min_hops=planted_min_hops,
        activations=activations,
        template=template,
        node_names=node_names,
        nodes=nodes.astype(np.int64),
        n_nodes=int(n_nodes),
        n_node_features=int(n_frames),
        discard_diagonal=True,
        DESCR=_DESCR,
    )
