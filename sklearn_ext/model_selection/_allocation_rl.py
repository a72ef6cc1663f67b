"""Learned allocation policies: fitted Q-iteration, and a learned stop.

The rule of :func:`~sklearn_ext.model_selection._allocation.allocate` scores
an action by its optimistic hypervolume gain per predicted cost and stops
below a threshold. Two designs learn the policy instead, by reinforcement
learning on meta-training problems (recorded learning curves); both earn,
for each action, the reward

    r = (hypervolume ratio after it - before it) - lam * cost / exhaustive cost

(the true hypervolume of the candidates evaluated in full, as a share of the
exhaustive front's), so that the return maximised is the final hypervolume
ratio minus ``lam`` times the share of the exhaustive cost spent.

- :func:`fit_q_policy`: episodes are replayed with an exploring behaviour
  policy (the rule, with random actions and random continuations past its
  stop), and an action-value function Q(state, action) over the scale-free
  features of :func:`~sklearn_ext.model_selection._allocation.
  action_features` is fitted by fitted Q-iteration with gradient-boosted
  trees. The policy takes the action of highest Q and stops when no
  action's Q is positive.
- :func:`fit_stop_policy`: the actions are the rule's (its score, over the
  candidates whose optimistic gain clears a lower floor than its threshold,
  so that the search can go on past where the rule stops); what is learned
  is when to stop (optimal stopping on that fixed trajectory: the value of
  going on, regressed on the state).
  :func:`hindsight_stop` is its bound: the best stop chosen knowing the
  future.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils import check_random_state

from sklearn_ext.model_selection._allocation import _table_deltas, allocate
from sklearn_ext.model_selection._landmarks import finish

__all__ = [
    "fit_q_policy",
    "fit_stop_policy",
    "hindsight_stop",
    "q_search",
    "search_return",
    "stop_search",
]


def _rule_action(feats, actions, threshold, explore):
    """The rule's choice, read from the action features: among candidates
    whose optimistic gain clears ``explore``, each goes to the full set when
    its expected gain clears ``threshold`` (or when its next landmark is the
    full set), else to its next landmark; the action of best optimistic gain
    per share of cost is taken (-1 when no candidate clears ``explore``).
    With ``explore == threshold`` this is the rule of
    :func:`~sklearn_ext.model_selection._allocation.allocate` at
    ``cost_exponent=1``, action for action."""
    if not len(actions):
        return -1
    cand = np.array([a[0] for a in actions])
    only = np.bincount(cand)[cand] == 1
    to_full = (feats[:, 1] > threshold) | only
    ok = (feats[:, 0] > explore) & (to_full == (feats[:, 2] == 1.0))
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


def search_return(result, lam=0.02):
    """The return of a search: its hypervolume ratio minus ``lam`` times the
    share of the exhaustive cost it spent."""
    return result.hv_ratio - lam * (1.0 - result.time_saved)


def _rewards(problem, actions, lam):
    """Each action's reward along a search: the true hypervolume ratio it
    adds (of the candidates in full) minus ``lam`` times its share of the
    exhaustive cost. ``actions`` are ``(candidate, level, ...)`` in order."""
    top = problem.n_levels - 1
    best = problem.hypervolume(range(problem.n_candidates))
    ex_cost = problem.exhaustive_cost()
    full, hv, out = [], 0.0, []
    for i, lv, *_ in actions:
        if lv == top:
            full.append(i)
        now = problem.hypervolume(full) / best if best > 0 else 1.0
        out.append((now - hv) - lam * float(problem.costs[i, lv]) / ex_cost)
        hv = now
    return np.array(out)


def _regressor(seed):
    """The value regressor of both learned policies."""
    from sklearn.ensemble import HistGradientBoostingRegressor  # not at import

    return HistGradientBoostingRegressor(
        max_iter=200, learning_rate=0.05, max_leaf_nodes=15, random_state=seed
    )


def _episode(problem, models, quantile, threshold, eps, rng, lam):
    """One exploring episode: transitions (features, reward, next features)."""
    decisions = []

    def choose(feats, actions):
        if not len(actions) or len(decisions) > 3 * problem.n_candidates:
            j = -1
        else:
            j = _rule_action(feats, actions, threshold, threshold)
            if rng.rand() < eps or (j < 0 and rng.rand() < 0.5):
                j = int(rng.randint(len(actions)))
        decisions.append((feats, j, actions[j] if j >= 0 else None))
        return j

    _run(problem, models, quantile, choose)
    # only the last decision can be the stop (j < 0): no action, no reward;
    # the state it saw is still the last action's next state
    acted = [d for d in decisions if d[1] >= 0]
    rewards = _rewards(problem, [action for _, _, action in acted], lam)
    return [
        (
            feats[j],
            rewards[t],
            decisions[t + 1][0] if t + 1 < len(decisions) else None,
        )
        for t, (feats, j, _) in enumerate(acted)
    ]


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
        q = _regressor(seed).fit(X, y)
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


def _stop_state(feats, j):
    """Features of a stopping decision: the state (every action's
    features summarised) and the action the rule would take next (``j``)."""
    g_opt, g_mean, ratio = feats[:, 0], feats[:, 1], feats[:, 7]
    return np.array(
        [
            np.log10(max(g_opt.max(), 1e-9)),
            np.log10(max(g_opt.sum(), 1e-9)),
            np.log10(max(g_mean.max(), 1e-9)),
            feats[0, 5],
            feats[0, 6],
            float(np.sum(g_opt > 1e-3)),
            float(np.sum(g_opt > 1e-2)),
            ratio.max(),
            feats[j, 0],
            feats[j, 2],
            feats[j, 3],
            feats[j, 4],
            feats[j, 7],
            float(len(feats)),
        ]
    )


def _stopped_run(problem, models, quantile, threshold, explore, stop=None):
    """The rule's choices with ``explore`` as the floor of the optimistic
    gain (``threshold`` still decides between a landmark and the full set);
    ``stop(state)`` ends the search before an action (never while no
    candidate is in full).
    Returns the SearchResult and the decisions taken: (state, action)."""
    taken = []

    def choose(feats, actions):
        j = _rule_action(feats, actions, threshold, explore)
        if j < 0:
            return -1
        state = _stop_state(feats, j)
        if stop is not None and state[4] > 0 and stop(state):
            return -1
        taken.append((state, actions[j]))
        return j

    return _run(problem, models, quantile, choose), taken


def _stop_episode(problem, models, quantile, threshold, explore, lam):
    """The trajectory of :func:`_stopped_run` without a stop: its states,
    each action's reward, the value of going on from each state (the best
    sum of rewards of any later stopping point, 0 for stopping now) and the
    search's result."""
    result, taken = _stopped_run(problem, models, quantile, threshold, explore)
    rewards = _rewards(problem, [action for _, action in taken], lam)
    value, to_go = np.zeros(len(rewards)), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        to_go = max(0.0, rewards[t] + to_go)
        value[t] = to_go
    return [s for s, _ in taken], rewards, value, result


def hindsight_stop(problem, models, quantile, threshold, explore=0.002, lam=0.02):
    """The best return any stop reaches on the trajectory of
    :func:`stop_search` (the same choices, whatever the stop),
    chosen in hindsight (knowing every later reward): the bound a learned
    stop can approach. The return is the hypervolume ratio minus ``lam``
    times the share of the exhaustive cost spent."""
    _, rewards, value, result = _stop_episode(
        problem, models, quantile, threshold, explore, lam
    )
    whole = search_return(result, lam)
    # stopping before step t drops the rewards from t on
    return whole - rewards.sum() + (value[0] if len(value) else 0.0)


def fit_stop_policy(
    groups, quantile, threshold, explore=0.002, lam=0.02, random_state=None
):
    """Learn when to stop: the value of going on, regressed on the state.

    The actions are the rule's, with ``explore`` (below the rule's
    ``threshold``) as the floor of the optimistic gain, so that the search
    can go on past where the rule stops; the stop never changes which action
    comes next, only whether there is one. Along each
    meta-training problem's trajectory every action earns ``r`` (the
    hypervolume ratio gained minus ``lam`` times its share of the exhaustive
    cost), and the target of each state is the best sum of rewards of any
    later stopping point, 0 for stopping now: an optimal-stopping problem on
    a fixed trajectory, solved by regression on the state. The target is the
    best continuation in hindsight, which overstates the value of going on;
    Longstaff and Schwartz's target (the return realised under the fitted
    stop, iterated) did worse on the development seeds.
    ``groups`` is a list of ``(problems, models)``, as for
    :func:`fit_q_policy`. Returns the fitted regressor of the value of going
    on (see :func:`stop_search`).
    """
    rng = check_random_state(random_state)
    states, values = [], []
    for problems, models in groups:
        for p in problems:
            s, _, v, _ = _stop_episode(p, models, quantile, threshold, explore, lam)
            states += s
            values.append(v)
    return _regressor(rng.randint(np.iinfo(np.int32).max)).fit(
        np.array(states), np.concatenate(values)
    )


def stop_search(problem, models, quantile, threshold, value, margin, explore=0.002):
    """Replay the rule's choices (floor ``explore``) with the learned stop:
    the search ends before an action when the predicted value of going on
    is at most ``margin`` (and at least one candidate is in full)."""
    return _stopped_run(
        problem,
        models,
        quantile,
        threshold,
        explore,
        stop=lambda state: value.predict(state[None])[0] <= margin,
    )[0]
