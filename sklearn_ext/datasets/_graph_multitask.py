"""Multi-task linear data whose tasks form planted groups on a collaboration graph."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from scipy.sparse.csgraph import connected_components
from sklearn.utils import Bunch, check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, StrOptions, validate_params

__all__ = ["make_graph_multitask"]


@validate_params(
    {
        "n_tasks": [Interval(Integral, 1, None, closed="left")],
        "n_groups": [Interval(Integral, 1, None, closed="left")],
        "n_samples_per_task": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "p_in": [Interval(Real, 0, 1, closed="both")],
        "p_out": [Interval(Real, 0, 1, closed="both")],
        "group_scale": [Interval(Real, 0, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "noise_dist": [StrOptions({"gaussian", "student_t"})],
        "df": [Interval(Real, 0, None, closed="neither")],
        "task_type": [StrOptions({"regression", "binary"})],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_graph_multitask(
    n_tasks=30,
    n_groups=3,
    n_samples_per_task=200,
    n_features=20,
    *,
    p_in=0.5,
    p_out=0.01,
    group_scale=1.0,
    noise=1.0,
    noise_dist="gaussian",
    df=2.5,
    task_type="regression",
    random_state=None,
):
    """Generate multi-task linear data with planted task groups on an SBM graph.

    Tasks are split into ``n_groups`` groups of (nearly) equal size. All tasks of
    a group share the same true weights, drawn from ``N(0, group_scale**2 I)``,
    and intercept 0. The collaboration graph is a stochastic block model: two
    tasks of the same group are linked with probability ``p_in``, of different
    groups with probability ``p_out``; it is redrawn until connected. Each task
    has ``n_samples_per_task`` samples with standard normal features. Targets
    are ``x . w + noise * e`` with Gaussian or Student-t (``df`` degrees of
    freedom, heavy-tailed) ``e`` for regression, or Bernoulli draws of
    ``sigmoid(x . w)`` for ``task_type="binary"``. Rows are shuffled, so that any
    split keeps every task on both sides.

    Parameters
    ----------
    n_tasks : int, default=30
        Number of tasks (graph nodes); task labels are ``0 .. n_tasks - 1``.
    n_groups : int, default=3
        Number of planted groups.
    n_samples_per_task : int, default=200
        Samples of each task.
    n_features : int, default=20
        Features, besides the task column.
    p_in : float, default=0.5
        Edge probability within a group.
    p_out : float, default=0.01
        Edge probability between groups.
    group_scale : float, default=1.0
        Standard deviation of the groups' true weights.
    noise : float, default=1.0
        Scale of the regression noise.
    noise_dist : {"gaussian", "student_t"}, default="gaussian"
        Distribution of the regression noise.
    df : float, default=2.5
        Degrees of freedom of the Student-t noise.
    task_type : {"regression", "binary"}, default="regression"
        Kind of target.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of every random draw.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (ndarray of shape (n_tasks * n_samples_per_task, 1 + n_features),
        the task label in column 0), ``target``, ``task_column`` (0),
        ``adjacency`` (ndarray of shape (n_tasks, n_tasks), 0/1), ``groups``
        (group of each task), ``coef`` (true weights, (n_tasks, n_features)).

    Examples
    --------
    >>> from sklearn_ext.datasets import make_graph_multitask
    >>> data = make_graph_multitask(n_tasks=6, n_groups=2, random_state=0)
    >>> data.data.shape, data.adjacency.shape
    ((1200, 21), (6, 6))
    """
    if n_groups > n_tasks:
        raise ValueError(f"n_groups={n_groups} exceeds n_tasks={n_tasks}.")
    rng = check_random_state(random_state)
    groups = np.concatenate(
        [
            np.full(len(part), g)
            for g, part in enumerate(np.array_split(np.arange(n_tasks), n_groups))
        ]
    )
    same = groups[:, None] == groups[None, :]
    prob = np.where(same, p_in, p_out)
    for _ in range(1000):
        upper = np.triu(rng.random_sample((n_tasks, n_tasks)) < prob, k=1)
        adjacency = (upper | upper.T).astype(float)
        if n_tasks == 1 or connected_components(adjacency, directed=False)[0] == 1:
            break
    else:
        raise ValueError(
            f"could not draw a connected graph with p_in={p_in}, p_out={p_out}; "
            "raise the probabilities."
        )
    group_coef = rng.normal(scale=group_scale, size=(n_groups, n_features))
    coef = group_coef[groups]
    task = np.repeat(np.arange(n_tasks), n_samples_per_task)
    X = rng.normal(size=(len(task), n_features))
    signal = np.einsum("ij,ij->i", X, coef[task])
    if task_type == "binary":
        y = (rng.random_sample(len(task)) < 1.0 / (1.0 + np.exp(-signal))).astype(int)
    else:
        e = (
            rng.normal(size=len(task))
            if noise_dist == "gaussian"
            else rng.standard_t(df, size=len(task))
        )
        y = signal + noise * e
    perm = rng.permutation(len(task))
    return Bunch(
        data=np.column_stack([task, X])[perm],
        target=y[perm],
        task_column=0,
        adjacency=adjacency,
        groups=groups,
        coef=coef,
    )
