"""A learned allocation policy: fitted Q-iteration over allocation actions.

The rule of :func:`~sklearn_ext.model_selection._allocation.allocate` scores
an action by its optimistic hypervolume gain per predicted cost and stops
below a threshold. Here the policy itself is learned by reinforcement
learning on meta-training problems (recorded learning curves): episodes are
replayed with an exploring behaviour policy (the rule, with random actions
and random continuations past its stop), each action earns the reward

    r = (hypervolume ratio after it - before it) - lam * cost / exhaustive cost

(the true hypervolume of the candidates evaluated in full, as a share of the
exhaustive front's), and an action-value function Q(state, action) over the
scale-free features of :func:`~sklearn_ext.model_selection._allocation.
action_features` is fitted by fitted Q-iteration with gradient-boosted
trees. The learned policy takes the action of highest Q and stops when no
action's Q is positive: the return it maximises is the final hypervolume
ratio minus ``lam`` times the share of the exhaustive cost spent.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils import check_random_state

from sklearn_ext.model_selection._allocation import _table_deltas, allocate
from sklearn_ext.model_selection._landmarks import finish

__all__ = ["fit_q_policy", "q_search"]


def _behaviour(feats, threshold):
    """The exploring episodes' base policy: the action of best optimistic gain
    per share of cost among those whose optimistic gain clears ``threshold``
    (the rule's score with ``cost_exponent=1``, without its choice between a
    landmark and the full set); -1 when none does."""
    ok = feats[:, 0] > threshold
    if not ok.any():
        return -1
    return int(np.argmax(np.where(ok, feats[:, 7], -np.inf)))


def _run(problem, models, quantile, choose):
    problem.reset()
    allocate(
        problem.evaluate,
        problem.sizes,
        problem.kinds,
        models,
        quantile,
        0.0,
        1.0,
        deltas=_table_deltas(models, quantile, problem),
        choose=choose,
    )
    full = [i for (i, lv) in problem.evaluated if lv == problem.n_levels - 1]
    return finish(problem, full)


def _episode(problem, models, quantile, threshold, eps, rng, lam):
    """One exploring episode: transitions (features, reward, next features)."""
    decisions = []

    def choose(feats, actions):
        if not len(actions) or len(decisions) > 3 * problem.n_candidates:
            j = -1
        else:
            j = _behaviour(feats, threshold)
            if rng.rand() < eps or (j < 0 and rng.rand() < 0.5):
                j = int(rng.randint(len(actions)))
        decisions.append((feats, j, actions[j] if j >= 0 else None))
        return j

    _run(problem, models, quantile, choose)
    top = problem.n_levels - 1
    best = problem.hypervolume(range(problem.n_candidates))
    ex_cost = problem.exhaustive_cost()
    full, hv, out = [], 0.0, []
    for t, (feats, j, action) in enumerate(decisions):
        if j < 0:
            break
        i, lv, _ = action
        if lv == top:
            full.append(i)
        now = problem.hypervolume(full) / best if best > 0 else 1.0
        reward = (now - hv) - lam * float(problem.costs[i, lv]) / ex_cost
        hv = now
        nxt = decisions[t + 1][0] if t + 1 < len(decisions) else None
        out.append((feats[j], reward, nxt))
    return out


def fit_q_policy(
    groups,
    quantile,
    threshold,
    lam=0.02,
    epsilons=(0.0, 0.2, 0.5),
    n_iter=4,
    random_state=None,
):
    """Fitted Q-iteration on exploring episodes of meta-training problems.

    ``groups`` is a list of ``(problems, models)``: the problems are replayed
    with those predictors (fitted on other problems, so that the features
    carry the prediction errors a new problem will see). ``threshold`` is the
    behaviour policy's; ``lam`` prices the exhaustive cost in hypervolume
    ratio. Returns the fitted action-value regressor.
    """
    from sklearn.ensemble import HistGradientBoostingRegressor  # not at import

    rng = check_random_state(random_state)
    data = []
    for problems, models in groups:
        for p in problems:
            for eps in epsilons:
                data += _episode(p, models, quantile, threshold, eps, rng, lam)
    X = np.array([d[0] for d in data])
    R = np.array([d[1] for d in data])
    nxt = [d[2] for d in data]
    stacked = [f for f in nxt if f is not None and len(f)]
    owner = np.concatenate(
        [np.full(len(f), k) for k, f in enumerate(nxt) if f is not None and len(f)]
    )
    F = np.vstack(stacked) if stacked else np.zeros((0, X.shape[1]))
    q, y = None, R
    seed = rng.randint(np.iinfo(np.int32).max)
    for _ in range(n_iter):
        q = HistGradientBoostingRegressor(
            max_iter=200, learning_rate=0.05, max_leaf_nodes=15, random_state=seed
        ).fit(X, y)
        v = np.zeros(len(R))
        if len(F):
            pred = q.predict(F)
            np.maximum.at(v, owner, pred)
        y = R + np.maximum(v, 0.0)
    return q


def q_search(problem, models, quantile, q):
    """Replay the learned policy on a recorded problem (a SearchResult)."""

    def choose(feats, actions):
        if not len(feats):
            return -1
        values = q.predict(feats)
        j = int(np.argmax(values))
        return j if values[j] > 0 else -1

    return _run(problem, models, quantile, choose)
