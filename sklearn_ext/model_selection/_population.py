"""The population of an IPBT search: training rounds, exploit/explore, restarts.

:class:`_Population` holds the state of one :class:`IPBTSearchCV` fit: the
members (one estimator per validation split each), one history row per member
per ready step, and a snapshot of the best member seen. It runs the search
loop, the restart optimiser (a time-varying Gaussian process over the
hyperparameters) and, at the end, the best member's lineage: its schedule and
its replay on all the data.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from sklearn_ext.model_selection._incremental import (
    _random_state_keys,
    non_finite_state,
    seeded_start,
    shrink_perturb,
    train,
)
from sklearn_ext.utils._messages import progress, warn
from sklearn_ext.utils._sklearn_compat import _safe_indexing
from sklearn_ext.utils._torch import child_seeds

__all__ = [
    "_Population",
    "_progress_stalled",
    "lineage",
    "propose_settings",
    "slow_horizon",
]

# Defaults from the authors' configuration (github.com/AwesomeLemon/IPBT,
# config/algo/ipbt.yaml and pbt.yaml) unless noted.
# "Too slow": the z-scored best rose less than 1 in 15 ready steps, which at
# the authors' first interval (1% of the budget) is 15% of the schedule. Ours:
# the horizon is that fraction of the schedule, counted in ready steps of the
# first interval, so that it scales with the budget (15 steps at the default
# 1% interval, 3 when the first interval is 5% of the budget); at least 2.
_SLOW_FRACTION = 0.15
_SLOW_STEPS = 15  # the horizon at the authors' first interval
_MIN_SLOW_STEPS = 2
_BO_HISTORY = 128  # most recent starts the restart optimiser fits (ours)
_BO_CANDIDATES = 512
_BO_KAPPA = 2.0
_BO_LENGTH_BOUNDS = (1e-2, 1e2)


def _n_samples(X):
    return X.shape[0] if hasattr(X, "shape") and len(X.shape) else len(X)


def _split_folds(X, y, splits, fit_params, score_params):
    """Per split: training data and fit params, validation data and score params.

    The ``folds`` that :class:`_Population` trains on. Arrays of length
    n_samples among the params are split with the data, as scikit-learn's
    searches split them.
    """
    n_samples = _n_samples(X)

    def part(value, idx):
        if np.ndim(value) >= 1 and _n_samples(value) == n_samples:
            return _safe_indexing(value, idx)
        return value

    def take(data, idx):
        return None if data is None else _safe_indexing(data, idx)

    return [
        (
            take(X, tr),
            take(y, tr),
            {k: part(v, tr) for k, v in fit_params.items()},
            take(X, te),
            take(y, te),
            {k: part(v, te) for k, v in score_params.items()},
        )
        for tr, te in splits
    ]


def _rank_value(score):
    return score if np.isfinite(score) else -np.inf


def slow_horizon(per_member, interval):
    """Ready steps of the "too slow" test for a schedule of ``per_member`` steps.

    15% of the schedule in ready steps of the first ``interval`` (the authors'
    15 steps at their first interval of 1% of the budget), at least 2.
    """
    return max(_MIN_SLOW_STEPS, round(_SLOW_FRACTION * per_member / interval))


def _progress_stalled(best_scores, slow_steps=_SLOW_STEPS):
    """IPBT's stagnation test on the per-step best score of the current run.

    The last ``2 * slow_steps`` best scores (the window) are z-scored and
    smoothed by a Gaussian process over the step index with a length scale of
    one window. The test fails (returns True) when the smoothed best did not
    rise at the last step, or when it rose by less than one standard deviation
    over the last ``slow_steps`` steps. A steady rise never fails: over the
    window a straight line rises by 1.7 standard deviations every
    ``slow_steps`` steps, whatever the window's length.
    """
    window = 2 * slow_steps
    b = np.asarray(best_scores, dtype=float)[-window:]
    b = b[np.isfinite(b)]
    if len(b) < 2:
        return False
    sd = b.std()
    if sd == 0:
        return True
    z = (b - b.mean()) / sd
    # Fixed hyperparameters: unit signal variance (z-scores), a length scale of
    # one window (RBF 3 on steps divided by window / 3) and noise variance 0.3.
    # A smooth trend, cheap at every ready step.
    idx = (np.arange(len(z), dtype=float) - (len(z) - 1) / 2)[:, None]
    idx = idx / (window / 3.0)
    kernel = ConstantKernel(1.0, "fixed") * RBF(3.0, "fixed") + WhiteKernel(
        0.3, "fixed"
    )
    smooth = GaussianProcessRegressor(kernel, optimizer=None).fit(idx, z).predict(idx)
    if smooth[-1] - smooth[-2] <= 0:
        return True
    return len(z) > slow_steps and smooth[-1] - smooth[-1 - slow_steps] < 1.0


def propose_settings(space, params, times, scores, now, k, rng):
    """``k`` (setting, source) pairs from a time-varying GP (UCB, batch).

    The Gaussian process models ``score`` over (setting in CDF coordinates,
    time in fractions of the budget) with an anisotropic Matérn kernel, whose
    time length scale lets old observations count less; proposals maximise the
    upper confidence bound μ + 2σ at time ``now`` over 512 prior draws, in a
    batch by the kriging believer. With fewer than two distinct scores there is
    nothing to model and the settings are prior draws ("random").
    """
    if k == 0:
        return []
    y = np.asarray(scores, dtype=float)
    if len(y) < 2 or np.ptp(y) == 0:
        return [(space.sample(rng), "random") for _ in range(k)]
    X = np.hstack([space.encode_many(params), np.asarray(times, float)[:, None]])
    d = X.shape[1]
    kernel = ConstantKernel(1.0, (1e-2, 1e2)) * Matern(
        np.full(d, 0.5), _BO_LENGTH_BOUNDS, nu=2.5
    ) + WhiteKernel(1e-2, (1e-6, 1.0))
    candidates, Z = space.sample_many(_BO_CANDIDATES, rng)
    Z = np.hstack([Z, np.full((len(Z), 1), float(now))])
    chosen, free = [], np.ones(len(Z), dtype=bool)
    with warnings.catch_warnings():
        # The GP's own hyperparameter fit hitting a bound is not the user's
        # concern: the proposals stay valid draws from the prior.
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp = GaussianProcessRegressor(
            kernel, normalize_y=True, random_state=child_seeds(rng)
        ).fit(X, y)
        for _ in range(k):
            mu, sd = gp.predict(Z, return_std=True)
            ucb = np.where(free, mu + _BO_KAPPA * sd, -np.inf)
            b = int(np.argmax(ucb))
            chosen.append((candidates[b], "bo"))
            free[b] = False
            # Kriging believer: pretend the mean was observed, keep the kernel.
            X, y = np.vstack([X, Z[b]]), np.append(y, mu[b])
            gp = GaussianProcessRegressor(
                gp.kernel_, optimizer=None, normalize_y=True
            ).fit(X, y)
    return chosen


def lineage(parents, row):
    """Rows from a fresh start to ``row``, following ``parents`` (-1 ends)."""
    chain = []
    while row != -1:
        chain.append(int(row))
        row = int(parents[row])
    return chain[::-1]


def _member_step(estimator, protocol, n_steps, fold, classes, scorer, err, metrics):
    """Train one member on one split for ``n_steps`` and score it on validation.

    ``fold`` is ``(X_train, y_train, fit_params, X_val, y_val, score_params)``;
    ``scorer`` returns a number, or a dict of numbers for several ``metrics``.
    """
    X_train, y_train, fit_params, X_val, y_val, score_params = fold
    start = time.perf_counter()
    failure = None
    try:
        train(estimator, protocol, n_steps, X_train, y_train, classes, fit_params)
        fit_time = time.perf_counter() - start
        raw = scorer(estimator, X_val, y_val, **score_params)
        if isinstance(raw, dict):
            scores = {m: float(raw[m]) for m in metrics}
        else:
            scores = {metrics[0]: float(raw)}
    except Exception as exc:
        if err == "raise":
            raise
        fit_time = time.perf_counter() - start
        scores, failure = dict.fromkeys(metrics, float(err)), exc
    return estimator, scores, fit_time, time.perf_counter() - start - fit_time, failure


def _origin(parent, weights_from, params_from, seed=-1):
    return {
        "parent": int(parent),
        "weights_from": weights_from,
        "params_from": params_from,
        "seed": int(seed),
    }


class _Population:
    """State of one IPBT search: members, history rows, best snapshot.

    Members are lists of estimators, one per validation split, trained in
    lockstep and scored by the mean over the splits.

    Parameters
    ----------
    search : IPBTSearchCV
        The search whose parameters drive the population.
    protocol : IncrementalProtocol
        How members train on.
    space : SearchSpace
        The hyperparameter space.
    scorer : callable
        ``scorer(estimator, X, y, **score_params)``, greater is better: a
        number, or a dict with a number per name of ``metrics``.
    folds : list of tuple
        ``(X_train, y_train, fit_params, X_val, y_val, score_params)`` per split.
    classes : array-like or None
        Passed to every ``partial_fit`` call when the protocol needs it.
    rng : RandomState
        Every random choice and every derived seed comes from it.
    metrics : list of str, default=None
        Names of the scores, the one that ranks the population first; None is
        one score named "score".
    """

    def __init__(
        self, search, protocol, space, scorer, folds, classes, rng, metrics=None
    ):
        self.owner = search
        self.protocol = protocol
        self.space = space
        self.scorer = scorer
        # Names of the scores; the first ranks the population.
        self.metrics = list(metrics or ["score"])
        self.rank_metric = self.metrics[0]
        self.folds = folds
        self.classes = classes
        self.rng = rng
        self.rows = []
        self.best_row, self.best_score, self.best_snapshot = -1, -np.inf, None
        self.seeded = [
            k
            for k, v in search.estimator.get_params(deep=True).items()
            if (k == "random_state" or k.endswith("__random_state")) and v is None
        ]

    # --- members ------------------------------------------------------------------

    def _fresh_estimator(self, seed):
        est = clone(self.owner.estimator)
        if self.seeded:
            est.set_params(**dict.fromkeys(self.seeded, seed))
        return seeded_start(est, seed)

    def _fresh(self, seed):
        return [self._fresh_estimator(seed) for _ in self.folds]

    def _train_all(self, parallel, members, params, n_steps):
        s = self.owner
        jobs = []
        for member, hp in zip(members, params):
            for est, fold in zip(member, self.folds):
                est.set_params(**hp)
                jobs.append(
                    delayed(_member_step)(
                        est,
                        self.protocol,
                        n_steps,
                        fold,
                        self.classes,
                        self.scorer,
                        s.error_score,
                        self.metrics,
                    )
                )
        out = parallel(jobs)
        failures = [c[4] for c in out if c[4] is not None]
        if not self.rows and len(failures) == len(out):
            # Nothing trained at all: the data or the estimator is at fault, so
            # say what the estimator said instead of scoring a dead population.
            raise failures[0]
        k = len(self.folds)
        trained, results = [], []
        for i in range(len(members)):
            chunk = out[i * k : (i + 1) * k]
            trained.append([c[0] for c in chunk])
            results.append(chunk)
        for failure in failures:
            warn(
                f"A member failed to train or score; its score is set to "
                f"{s.error_score}. {type(failure).__name__}: {failure}",
                FitFailedWarning,
            )
        return trained, results

    def _record(self, members, params, origins, results, run, ready_step, start, stop):
        current = []
        k = self.owner.selection_window
        for i, (hp, origin, res) in enumerate(zip(params, origins, results)):
            split_scores = {m: [c[1][m] for c in res] for m in self.metrics}
            score = float(np.mean(split_scores[self.rank_metric]))
            # The scores of the same weights at their last k ready steps: the
            # member's own rows and, through exploit copies, those it copied.
            # Fresh and shrunk-and-perturbed weights start a new trajectory.
            recent = [score]
            if origin["weights_from"] in ("continue", "exploit"):
                recent = (self.rows[origin["parent"]]["recent"] + recent)[-k:]
            row = {
                "run": run,
                "ready_step": ready_step,
                "member": i,
                "start": start,
                "stop": stop,
                "score": score,
                "recent": recent,
                "selection": float(np.mean([_rank_value(v) for v in recent])),
                "split_scores": split_scores,
                "params": dict(hp),
                "fit_times": [c[2] for c in res],
                "score_times": [c[3] for c in res],
                **origin,
            }
            self.rows.append(row)
            current.append(len(self.rows) - 1)
            # The pick is re-evaluated: ranked by the mean of its last k scores,
            # not by one score, the best of hundreds of noisy ones.
            if row["selection"] > self.best_score or self.best_row < 0:
                self.best_score = row["selection"]
                self.best_row = len(self.rows) - 1
                self.best_snapshot = copy.deepcopy(members[i])
        return current

    # --- the search loop ------------------------------------------------------------

    def _start_size(self, t, horizon, n):
        """Members to start a run with at step ``t`` and the per-member cost.

        With restarts, each run starts ``init_multiplier`` times the population
        (the authors' ``n_init_mul``) when the budget affords it: the extra
        members' first interval is charged to every member's horizon.
        """
        s = self.owner
        pop = s.population_size
        m = pop * s.init_multiplier if s.restarts else pop
        if m == pop:
            return pop, 0
        cost = -(-(m - pop) * n // pop)  # ceil: extra steps per member
        if horizon - t - cost < 2 * n:
            return pop, 0
        return m, cost

    def search(self, per_member, interval):
        """Train the population for ``per_member`` steps each, from scratch."""
        s = self.owner
        pop = s.population_size
        self.per_member = per_member
        self.intervals = [interval]
        self.slow_steps = slow_horizon(per_member, interval)
        horizon = per_member
        size, cost = self._start_size(0, horizon, interval)
        horizon -= cost
        seeds = child_seeds(self.rng, size)
        members = [self._fresh(seed) for seed in seeds]
        params = [self.space.sample(self.rng) for _ in range(size)]
        origins = [_origin(-1, "init", "random", seed) for seed in seeds]
        t, run, ready_step, fails, run_best = 0, 0, 0, 0, []
        bar = progress(
            total=per_member, desc="IPBTSearchCV: steps per member", verbose=s.verbose
        )
        # max_nbytes=None: no read-only memmaps of large weight arrays in workers,
        # which train those arrays in place.
        with Parallel(n_jobs=s.n_jobs, max_nbytes=None) as parallel, bar:
            bar.update(cost)  # the enlarged start's steps, charged up front
            while t < horizon:
                n = min(interval, horizon - t)
                members, results = self._train_all(parallel, members, params, n)
                current = self._record(
                    members, params, origins, results, run, ready_step, t, t + n
                )
                t += n
                ready_step += 1
                scores = np.array([_rank_value(self.rows[r]["score"]) for r in current])
                if len(members) > pop:  # an enlarged start keeps its best
                    keep = np.sort(np.argsort(-scores, kind="stable")[:pop])
                    members = [members[i] for i in keep]
                    params = [params[i] for i in keep]
                    current = [current[i] for i in keep]
                    scores = scores[keep]
                    run_best.append(scores.max())
                    origins = [_origin(r, "continue", "kept") for r in current]
                    bar.update(n)
                    continue
                run_best.append(scores.max())
                bar.update(n)
                bar.set_postfix(
                    best=f"{self.best_score:.4g}", restarts=run, interval=interval
                )
                if t >= horizon:
                    break
                if s.restarts:
                    stalled = _progress_stalled(run_best, self.slow_steps)
                    fails = fails + 1 if stalled else 0
                    longer = interval * s.interval_multiplier
                    if fails >= s.patience and horizon - t >= 2 * longer:
                        interval = longer
                        run += 1
                        self.intervals.append(interval)
                        size, cost = self._start_size(t, horizon, interval)
                        horizon -= cost
                        bar.update(cost)
                        members, params, origins = self._restart(size, t)
                        fails, run_best = 0, []
                        continue
                origins = self._exploit_explore(members, params, scores, current)

    def _exploit_explore(self, members, params, scores, current):
        """PBT's truncation selection, in place; returns the members' origins.

        Each member of the bottom quantile copies the weights of a random member
        of the top quantile and a perturbation of its hyperparameters.
        """
        s = self.owner
        pop = len(members)
        n_top = max(1, int(s.quantile * pop))
        order = np.argsort(scores, kind="stable")
        bottom, top = set(order[:n_top].tolist()), order[-n_top:]
        origins = []
        for i in range(pop):
            if i in bottom:
                j = int(self.rng.choice(top))
                members[i] = copy.deepcopy(members[j])
                params[i] = self.space.perturb(params[j], s.perturb_factor, self.rng)
                origins.append(_origin(current[j], "exploit", "explore"))
            else:
                origins.append(_origin(current[i], "continue", "kept"))
        return origins

    def _restart(self, pop, t):
        """A new population: shrink-and-perturb of the best or fresh weights."""
        s = self.owner
        n_fresh = int(round(s.random_weight_fraction * pop))
        n_random = int(round(s.random_hp_fraction * pop))
        sources = self.rng.permutation(
            ["random"] * n_random + ["bo"] * (pop - n_random)
        )
        proposals = iter(self._propose(int((sources == "bo").sum()), t))
        members, params, origins = [], [], []
        for i in range(pop):
            source = str(sources[i])
            if source == "random":
                params.append(self.space.sample(self.rng))
            else:
                hp, source = next(proposals)
                params.append(hp)
            seed = child_seeds(self.rng)
            if i >= n_fresh:
                member = copy.deepcopy(self.best_snapshot)
                if all(shrink_perturb(e, s.shrink, s.perturb, seed) for e in member):
                    members.append(member)
                    origins.append(
                        _origin(self.best_row, "shrink_perturb", source, seed)
                    )
                    continue
            members.append(self._fresh(seed))
            origins.append(_origin(-1, "init", source, seed))
        return members, params, origins

    def _restart_observations(self):
        """Every start of every run so far, scored by its best descendant.

        A start is a member's first row in a run (fresh or shrink-and-perturb
        weights); its descendants are the rows whose lineage passes through it,
        exploit copies included. Returns ``(params, start_times, scores)``: the
        restart optimiser's data, as in the paper.
        """
        root, best = {}, {}
        for idx, r in enumerate(self.rows):
            if r["weights_from"] in ("init", "shrink_perturb"):
                root[idx] = idx
            else:
                root[idx] = root[r["parent"]]
            if np.isfinite(r["score"]):
                start = root[idx]
                best[start] = max(best.get(start, -np.inf), r["score"])
        starts = sorted(best)[-_BO_HISTORY:]
        params = [self.rows[i]["params"] for i in starts]
        times = np.array([self.rows[i]["start"] / self.per_member for i in starts])
        return params, times, np.array([best[i] for i in starts])

    def _propose(self, k, t):
        """``k`` (setting, source) pairs from the time-varying GP over starts."""
        params, times, scores = self._restart_observations()
        return propose_settings(
            self.space, params, times, scores, t / self.per_member, k, self.rng
        )

    # --- results ----------------------------------------------------------------------

    def _lineage(self, row):
        return lineage([r["parent"] for r in self.rows], row)

    def schedule(self, row):
        """The hyperparameter schedule along the lineage of ``row``."""
        out, own = [], 0
        for idx in self._lineage(row):
            r = self.rows[idx]
            n = r["stop"] - r["start"]
            joins = (
                out
                and r["weights_from"] in ("continue", "exploit")
                and r["params"] == out[-1]["params"]
                and r["run"] == out[-1]["run"]
            )
            if joins:
                out[-1]["stop"] += n
            else:
                out.append(
                    {
                        "start": own,
                        "stop": own + n,
                        "params": dict(r["params"]),
                        "run": r["run"],
                        "weights_from": r["weights_from"],
                    }
                )
            own += n
        return out

    def replay(self, row, X, y, fit_params):
        """Retrain the lineage of ``row`` on (X, y) from its initialisation."""
        s = self.owner
        est = None
        lineage = self._lineage(row)
        for idx in progress(lineage, desc="IPBTSearchCV: refit", verbose=s.verbose):
            r = self.rows[idx]
            if r["weights_from"] == "init":
                est = self._fresh_estimator(r["seed"])
                seeds = {k: est.get_params()[k] for k in _random_state_keys(est)}
            elif r["weights_from"] == "shrink_perturb":
                shrink_perturb(est, s.shrink, s.perturb, r["seed"])
            est.set_params(**r["params"])
            train(
                est,
                self.protocol,
                r["stop"] - r["start"],
                X,
                y,
                self.classes,
                fit_params,
            )
        broken = non_finite_state(est)
        if broken is not None:
            # Divergence that did not raise (a NaN loss in skorch or an MLP).
            raise FloatingPointError(f"the replay diverged: {broken}.")
        # Give back the user's iteration count and warm_start, and the integer
        # seeds that training turned into streams (fitted state is untouched),
        # so that the refit model reads like the estimator.
        original = s.estimator.get_params(deep=True)
        est.set_params(**{k: original[k] for k in self.protocol.reserved}, **seeds)
        return est

    def _param_columns(self, prefix):
        out = {}
        for name in self.space.names:
            column = np.ma.MaskedArray(
                np.empty(len(self.rows), dtype=object),
                mask=[name not in r["params"] for r in self.rows],
            )
            for i, r in enumerate(self.rows):
                if name in r["params"]:
                    column[i] = r["params"][name]
            out[f"{prefix}{name}"] = column
        params = np.empty(len(self.rows), dtype=object)
        params[:] = [dict(r["params"]) for r in self.rows]
        out["params"] = params
        return out

    def _lineage_columns(self):
        rows = self.rows
        out = {
            key: np.array([r[key] for r in rows], dtype=int)
            for key in ("run", "ready_step", "member", "start", "stop")
        }
        for key in ("parent", "seed"):
            out[key] = np.array([r[key] for r in rows], dtype=int)
        for key in ("weights_from", "params_from"):
            out[key] = np.array([r[key] for r in rows])
        return out

    def history(self):
        """The history rows as a dict of numpy arrays (``history_``)."""
        rows = self.rows
        out = self._lineage_columns()
        out["score"] = np.array([r["score"] for r in rows])
        out["selection_score"] = np.array([r["selection"] for r in rows])
        for k in range(len(self.folds)):
            out[f"split{k}_score"] = np.array(
                [r["split_scores"][self.rank_metric][k] for r in rows]
            )
        out.update(self._param_columns("param_"))
        out["fit_time"] = np.array([sum(r["fit_times"]) for r in rows])
        out["score_time"] = np.array([sum(r["score_times"]) for r in rows])
        return out

    def cv_results(self, multimetric):
        """The rows in ``cv_results_``'s layout (scikit-learn's keys).

        One row per member per ready step. ``split<k>_test_<metric>`` is the
        score on validation split k, its mean and standard deviation over the
        splits, ``rank_test_<metric>`` ranks the rows (1 is best; NaN last);
        ``<metric>`` is "score" for one scorer. Fit and score times are per
        split. ``selection_score`` is the mean of the ranking metric over the
        row's last ``selection_window`` ready steps (see ``IPBTSearchCV``).
        The lineage columns (``run``, ``ready_step``, ``member``,
        ``start``, ``stop``, ``parent``, ``weights_from``, ``params_from``,
        ``seed``) give the schedules.
        """
        from scipy.stats import rankdata

        rows = self.rows
        out = {}
        for key, col in (("fit", "fit_times"), ("score", "score_times")):
            times = np.array([r[col] for r in rows], dtype=float)
            out[f"mean_{key}_time"] = times.mean(axis=1)
            out[f"std_{key}_time"] = times.std(axis=1)
        out.update(self._param_columns("param_"))
        for metric in self.metrics:
            suffix = metric if multimetric else "score"
            split = np.array([r["split_scores"][metric] for r in rows], dtype=float)
            for k in range(split.shape[1]):
                out[f"split{k}_test_{suffix}"] = split[:, k]
            mean = split.mean(axis=1)
            out[f"mean_test_{suffix}"] = mean
            out[f"std_test_{suffix}"] = split.std(axis=1)
            ranked = np.where(np.isfinite(mean), -mean, np.inf)
            out[f"rank_test_{suffix}"] = rankdata(ranked, method="min").astype(np.int32)
        out["selection_score"] = np.array([r["selection"] for r in rows])
        out.update(self._lineage_columns())
        return out
