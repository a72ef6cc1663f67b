"""Landmark evaluations of candidates, replayed from recorded learning curves.

A *problem* holds, for each candidate, its objectives and the cost of
evaluating it at every fidelity: the landmarks (fractions of the training
set) then the full training set. A search evaluates (candidate, fidelity)
pairs as its policy decides and keeps the Pareto front of the candidates it
evaluated in full. Objectives are minimised. An objective is of the *error*
kind (compared as it is) or of the *cost* kind (a time, compared on its
log10); the first objective is an error and the cost of an evaluation is its
fit time.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import dataclass, field

import numpy as np

from sklearn_ext.model_selection._pareto import hypervolume, pareto_mask

__all__ = ["LandmarkProblem", "SearchResult", "check_landmarks", "comparable"]

#: Reference point of every normalised hypervolume, in each objective.
REFERENCE = 1.1


def check_landmarks(landmarks, where="the training set"):
    """Landmark fractions as an array, or a ValueError naming the problem."""
    fractions = np.asarray(landmarks, dtype=np.float64)
    if (
        fractions.ndim != 1
        or not len(fractions)
        or np.any(fractions <= 0)
        or np.any(fractions >= 1)
        or np.any(np.diff(fractions) <= 0)
    ):
        raise ValueError(
            f"landmarks must be increasing fractions of {where} in (0, 1); got "
            f"{landmarks!r}."
        )
    return fractions


def comparable(values, kinds):
    """Objectives on the scale they are compared on: times in log10."""
    v = np.array(values, dtype=np.float64, copy=True)
    for j, kind in enumerate(kinds):
        if kind == "cost":
            v[..., j] = np.log10(np.maximum(v[..., j], 1e-6))
    return v


def normalised_hypervolume(points, low, high):
    """Hypervolume of comparable ``points`` scaled to [0, 1] by ``low``/``high``
    with the reference point at 1.1 in every objective."""
    if len(points) == 0:
        return 0.0
    span = np.where(high > low, high - low, 1.0)
    scaled = (np.asarray(points) - low) / span
    return hypervolume(np.minimum(scaled, REFERENCE), [REFERENCE] * len(low))


@dataclass
class LandmarkProblem:
    """Objectives and costs of every candidate at every fidelity.

    Parameters
    ----------
    objectives : ndarray of shape (n_candidates, n_levels, n_objectives)
        Objective values at each landmark, then at the full training set
        (the last level).
    costs : ndarray of shape (n_candidates, n_levels)
        Cost (seconds) of evaluating the candidate at that fidelity.
    sizes : ndarray of shape (n_candidates, n_levels)
        Training rows of each fidelity.
    kinds : tuple of str
        ``"error"`` or ``"cost"`` per objective; the first is an error.
    spent : float, default=0.0
        Cost paid so far by :meth:`evaluate`.
    evaluated : dict, default={}
        ``(candidate, level) -> objectives`` paid for so far.
    """

    objectives: np.ndarray
    costs: np.ndarray
    sizes: np.ndarray
    kinds: tuple = ("error", "cost")
    spent: float = 0.0
    evaluated: dict = field(default_factory=dict)

    @property
    def n_candidates(self):
        return self.objectives.shape[0]

    @property
    def n_levels(self):
        return self.objectives.shape[1]

    def evaluate(self, candidate, level):
        """Read a candidate's objectives at a fidelity, paying its cost once.

        Parameters
        ----------
        candidate : int
            Row of the candidate.
        level : int
            Fidelity: a landmark, or ``n_levels - 1`` for the full set.

        Returns
        -------
        objectives : ndarray of shape (n_objectives,)
            The recorded objectives.
        cost : float
            The cost of that evaluation.
        """
        key = (int(candidate), int(level))
        if key not in self.evaluated:
            self.spent += float(self.costs[key])
            self.evaluated[key] = self.objectives[key]
        return self.evaluated[key], float(self.costs[key])

    def reset(self):
        """Forget every evaluation and the cost paid.

        Returns
        -------
        self : LandmarkProblem
            The problem, as before any evaluation.
        """
        self.spent, self.evaluated = 0.0, {}
        return self

    def exhaustive_cost(self):
        """Compute the cost of evaluating every candidate in full.

        Returns
        -------
        cost : float
            Sum of the full-level costs (no landmarks).
        """
        return float(self.costs[:, -1].sum())

    def true_front(self):
        """Find the candidates on the exhaustive Pareto front.

        Returns
        -------
        front : ndarray of int
            Rows of the candidates no other candidate dominates in full.
        """
        return np.flatnonzero(
            pareto_mask(comparable(self.objectives[:, -1], self.kinds))
        )

    def hypervolume(self, candidates):
        """Compute the normalised hypervolume of candidates' full objectives.

        Each objective (times on their log10) is scaled by the range of every
        candidate's full value (the exhaustive search's), reference point 1.1.

        Parameters
        ----------
        candidates : iterable of int
            Rows of the candidates evaluated in full.

        Returns
        -------
        hv : float
            Their hypervolume; the exhaustive front's is the maximum.
        """
        full = comparable(self.objectives[:, -1], self.kinds)
        idx = np.asarray(list(candidates), dtype=int)
        return normalised_hypervolume(full[idx], full.min(axis=0), full.max(axis=0))

    @classmethod
    def from_lcdb(cls, lcdb, dataset, landmarks=(0.05, 0.1, 0.25), min_candidates=2):
        """The problem of one LCDB data set: its learners as candidates.

        Each landmark fraction is mapped to the LCDB anchor nearest (in log
        size) to that fraction of the learner's full training size; later
        landmarks take the next anchor when two would coincide. Learners
        without a run at every landmark or in full are left out. Fit times
        are floored at 1 ms (LCDB rounds fast fits to 0).

        Parameters
        ----------
        lcdb : Bunch
            :func:`~sklearn_ext.datasets.load_lcdb_curves`.
        dataset : int
            Row of the data set in ``lcdb``.
        landmarks : tuple of float, default=(0.05, 0.1, 0.25)
            Training fractions.
        min_candidates : int, default=2
            Return None when fewer learners remain.

        Returns
        -------
        problem : LandmarkProblem or None
            Objectives (validation error, fit time).
        learners : ndarray of int
            Learner indices, in the problem's order.
        """
        anchors = np.asarray(lcdb.anchors, dtype=np.float64)
        rows, learners = [], []
        for learner in range(lcdb.error.shape[1]):
            n = lcdb.final_size[dataset, learner]
            fe = lcdb.final_error[dataset, learner]
            ft = lcdb.final_fit_time[dataset, learner]
            if not np.isfinite([n, fe, ft]).all():
                continue
            idx = []
            for frac in landmarks:
                j = int(np.argmin(np.abs(np.log(anchors / max(frac * n, 16.0)))))
                if idx and j <= idx[-1]:
                    j = idx[-1] + 1
                idx.append(j)
            if idx[-1] >= len(anchors) or anchors[idx[-1]] >= n:
                continue
            e = lcdb.error[dataset, learner, idx]
            t = lcdb.fit_time[dataset, learner, idx]
            if not np.isfinite(np.r_[e, t]).all():
                continue
            rows.append(
                (np.r_[e, fe], np.maximum(np.r_[t, ft], 1e-3), np.r_[anchors[idx], n])
            )
            learners.append(learner)
        if len(rows) < min_candidates:
            return None, np.zeros(0, dtype=int)
        err, time, sizes = (np.array([r[k] for r in rows]) for k in range(3))
        obj = np.stack([err, time], axis=-1)
        return cls(obj, time.copy(), sizes), np.array(learners)


@dataclass
class SearchResult:
    """What a search spent and found.

    Parameters
    ----------
    full : list of int
        Candidates evaluated in full, in order.
    front : ndarray of int
        The Pareto front among them (full objectives).
    spent : float
        Total cost, landmarks included.
    hv_ratio : float
        Hypervolume of the front over that of the exhaustive front.
    time_saved : float
        ``1 - spent / exhaustive cost``.
    """

    full: list
    front: np.ndarray
    spent: float
    hv_ratio: float
    time_saved: float


def finish(problem, full):
    """The :class:`SearchResult` of a search that evaluated ``full`` in full."""
    full = list(dict.fromkeys(int(i) for i in full))
    best = problem.hypervolume(range(problem.n_candidates))
    if full:
        pts = comparable(problem.objectives[full, -1], problem.kinds)
        front = np.asarray(full)[pareto_mask(pts)]
    else:
        front = np.zeros(0, dtype=int)
    return SearchResult(
        full=full,
        front=front,
        spent=problem.spent,
        hv_ratio=problem.hypervolume(full) / best if best > 0 else 1.0,
        time_saved=1.0 - problem.spent / problem.exhaustive_cost(),
    )
