"""Search spaces for population-based searches: sampling, perturbation, encoding.

A search space is a dict (or a list of dicts, a union of sub-spaces) from an
estimator parameter to either a frozen ``scipy.stats`` distribution (continuous
or discrete) or a non-empty list of values. Every dimension maps to the unit
interval through its distribution's CDF (a list through the position of its
value), which gives the encoding the Bayesian optimiser works in.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy import stats
from sklearn.base import clone

__all__ = ["SearchSpace"]

_EPS = 1e-9


def _kind(name, value):
    if isinstance(value, (str, bytes)) or isinstance(value, dict):
        raise ValueError(
            f"param_distributions[{name!r}] must be a list of values or a frozen "
            f"scipy.stats distribution; got {type(value).__name__} {value!r}."
        )
    dist = getattr(value, "dist", None)
    if hasattr(value, "rvs"):
        if isinstance(dist, stats.rv_continuous):
            return "continuous"
        if isinstance(dist, stats.rv_discrete):
            return "integer"
        raise ValueError(
            f"param_distributions[{name!r}] has an rvs method but is not a frozen "
            "scipy.stats distribution: population-based search needs its cdf and "
            "ppf to perturb values and to encode them for Bayesian optimisation."
        )
    if isinstance(value, (list, tuple, np.ndarray)):
        if (isinstance(value, np.ndarray) and value.ndim != 1) or len(value) == 0:
            raise ValueError(
                f"param_distributions[{name!r}] must be a non-empty 1-D list of "
                f"values; got {value!r}."
            )
        return "choice"
    raise ValueError(
        f"param_distributions[{name!r}] must be a list of values or a frozen "
        f"scipy.stats distribution; got {type(value).__name__} {value!r}."
    )


def _index_of(values, value):
    for i, v in enumerate(values):
        if v is value:
            return i
    for i, v in enumerate(values):
        try:
            if bool(v == value):
                return i
        except (TypeError, ValueError):
            continue
    raise ValueError(f"{value!r} is not among the listed values {list(values)!r}.")


class _Dimension:
    def __init__(self, name, value):
        self.name = name
        self.kind = _kind(name, value)
        self.value = list(value) if self.kind == "choice" else value
        if self.kind != "choice":
            lo, hi = (float(v) for v in value.support())
            # scipy freezes invalid arguments (loguniform(1, 1), randint(5, 5))
            # without complaint and gives them a NaN support.
            empty = np.isnan(lo) or np.isnan(hi) or hi < lo
            if empty or (self.kind == "continuous" and hi == lo):
                raise ValueError(
                    f"param_distributions[{name!r}] has an empty range: its "
                    f"support is [{lo}, {hi}]. Give a distribution whose low is "
                    "below its high, or a one-value list to fix the parameter."
                )
            self.low, self.high = lo, hi

    def _cast(self, x):
        if self.kind == "integer":
            return int(round(float(x)))
        return float(x)

    def sample(self, rng):
        if self.kind == "choice":
            return self.value[rng.randint(len(self.value))]
        return self._cast(self.value.rvs(random_state=rng))

    def encode_many(self, xs):
        """Map values to [0, 1]: their CDF (mid-step for integers, slot for lists)."""
        if self.kind == "choice":
            k = len(self.value)
            return np.array([(_index_of(self.value, x) + 0.5) / k for x in xs])
        xs = np.asarray(xs, dtype=float)
        if self.kind == "integer":
            return 0.5 * (self.value.cdf(xs) + self.value.cdf(xs - 1))
        return np.clip(self.value.cdf(xs), 0.0, 1.0)

    def decode_many(self, u):
        """Map unit coordinates back to values (inverse CDF, slot for lists)."""
        u = np.clip(np.asarray(u, dtype=float), _EPS, 1.0 - _EPS)
        if self.kind == "choice":
            k = len(self.value)
            return [self.value[i] for i in np.minimum((u * k).astype(int), k - 1)]
        return [self._cast(x) for x in self.value.ppf(u)]

    def contains(self, x):
        """Whether ``x`` is one of the listed values or inside the support."""
        if self.kind == "choice":
            try:
                _index_of(self.value, x)
            except ValueError:
                return False
            return True
        try:
            return bool(self.low <= float(x) <= self.high)
        except (TypeError, ValueError):
            return False

    def perturb(self, x, factor, rng):
        """PBT's explore step for one value (PBT-Zoo's rule, see IPBTSearchCV).

        Continuous values are multiplied or divided by ``factor`` (with
        probability 1/2 each): in value space when the support is non-negative and
        wide enough (log-scaled parameters such as learning rates, and scales
        like momentum in [0, 1)), otherwise in CDF space. Integers and listed
        values are resampled from the prior.
        """
        if self.kind != "continuous":
            return self.sample(rng)
        up = rng.rand() < 0.5
        if self.low >= 0 and x > 0 and self.low * factor <= self.high:
            new = x * factor if up else x / factor
            return float(np.clip(new, self.low, self.high))
        u = self.encode_many([x])[0]
        u = u * factor if up else u / factor
        return self.decode_many([min(u, 1.0)])[0]


class SearchSpace:
    """The dimensions of ``param_distributions``, validated against an estimator.

    Parameters
    ----------
    param_distributions : dict or list of dict
        Parameter name to a frozen ``scipy.stats`` distribution or a list. A
        list of dicts is a union of sub-spaces, as for scikit-learn's
        ``RandomizedSearchCV``: a draw picks a sub-space uniformly at random
        and then draws its dimensions; a setting is perturbed within the
        sub-space it belongs to (the first that holds its names and values).
    estimator : estimator
        Every name must be accepted by ``estimator.set_params``.
    reserved : dict of str to str, default=None
        Parameter names the search sets itself, with the reason, refused here.
    """

    def __init__(self, param_distributions, estimator, reserved=None):
        if isinstance(param_distributions, list):
            if not param_distributions:
                raise ValueError(
                    "param_distributions is an empty list: give at least one dict "
                    "of parameters to tune."
                )
            grids = param_distributions
        else:
            grids = [param_distributions]
        self.subspaces = [self._dimensions(g, reserved) for g in grids]
        self.names = list(dict.fromkeys(d.name for sub in self.subspaces for d in sub))
        # set_params is the authority on names (skorch also takes prefixed ones
        # such as optimizer__momentum that get_params does not list).
        probe = clone(estimator)
        for d in (d for sub in self.subspaces for d in sub):
            value = d.sample(np.random.RandomState(0))
            try:
                probe.set_params(**{d.name: value})
            except ValueError as exc:
                raise ValueError(
                    f"param_distributions names {d.name!r}, which is not a "
                    f"parameter of {type(estimator).__name__}; valid parameters "
                    f"are {sorted(estimator.get_params(deep=True))}."
                ) from exc

    @staticmethod
    def _dimensions(param_distributions, reserved):
        if not isinstance(param_distributions, dict):
            raise ValueError(
                "param_distributions must be a dict (or a list of dicts) of "
                "parameter name to a list or a frozen scipy.stats distribution; "
                f"got {type(param_distributions).__name__}."
            )
        if not param_distributions:
            raise ValueError(
                "param_distributions is empty: give at least one parameter to tune."
            )
        for name in param_distributions:
            if not isinstance(name, str):
                raise ValueError(
                    f"param_distributions keys must be parameter names; got {name!r}."
                )
            if reserved and name in reserved:
                raise ValueError(
                    f"param_distributions cannot tune {name!r}: {reserved[name]}."
                )
        return [_Dimension(k, v) for k, v in param_distributions.items()]

    @property
    def dimensions(self):
        """The dimensions of the first (for a dict, the only) sub-space."""
        return self.subspaces[0]

    def _subspace_of(self, params):
        keys = set(params)
        candidates = [
            i for i, sub in enumerate(self.subspaces) if {d.name for d in sub} == keys
        ]
        for i in candidates:
            if all(d.contains(params[d.name]) for d in self.subspaces[i]):
                return i
        if candidates:
            return candidates[0]
        raise ValueError(f"{params!r} belongs to no sub-space of param_distributions.")

    def sample(self, rng):
        sub = self.subspaces[0]
        if len(self.subspaces) > 1:  # a single space draws no sub-space index
            sub = self.subspaces[rng.randint(len(self.subspaces))]
        return {d.name: d.sample(rng) for d in sub}

    def perturb(self, params, factor, rng):
        sub = self.subspaces[self._subspace_of(params)]
        return {d.name: d.perturb(params[d.name], factor, rng) for d in sub}

    def encode_many(self, params):
        """Unit-cube coordinates of a list of settings, shape (n, n_coordinates).

        One coordinate per parameter name; with several sub-spaces, a name a
        setting lacks sits at 0.5, and a last coordinate is the sub-space's slot.
        """
        if len(self.subspaces) == 1:
            return np.column_stack(
                [d.encode_many([p[d.name] for p in params]) for d in self.dimensions]
            )
        k = len(self.subspaces)
        out = np.full((len(params), len(self.names) + 1), 0.5)
        column = {name: j for j, name in enumerate(self.names)}
        for i, p in enumerate(params):
            which = self._subspace_of(p)
            for d in self.subspaces[which]:
                out[i, column[d.name]] = d.encode_many([p[d.name]])[0]
            out[i, -1] = (which + 0.5) / k
        return out

    def decode_many(self, U, subspace=0):
        """Settings of one sub-space from unit coordinates (n, its dimensions)."""
        U = np.asarray(U, dtype=float)
        dims = self.subspaces[subspace]
        values = [d.decode_many(U[:, j]) for j, d in enumerate(dims)]
        return [
            {d.name: values[j][i] for j, d in enumerate(dims)} for i in range(len(U))
        ]

    def sample_many(self, n, rng):
        """``n`` prior draws (by inverse CDF) and their coordinates."""
        if len(self.subspaces) == 1:
            params = self.decode_many(rng.uniform(size=(n, len(self.dimensions))))
        else:
            which = rng.randint(len(self.subspaces), size=n)
            params = [
                self.decode_many(rng.uniform(size=(1, len(self.subspaces[w]))), w)[0]
                for w in which
            ]
        return params, self.encode_many(params)
