"""Differential privacy: the Gaussian mechanism, its accounting, DP-SGD.

The package's one place for privacy: every estimator that promises an
(epsilon, delta) guarantee records each mechanism it runs in a
:class:`PrivacyLedger` and reports the ledger's epsilon, so that the figure
covers every release and nothing else has to be trusted.

- :func:`gaussian_release` adds Gaussian noise calibrated to an L2
  sensitivity (the Gaussian mechanism) and records it.
- :func:`private_quantile` picks a clipping radius as a noisy quantile of
  per-sample norms (a noised histogram on a fixed geometric grid: one
  count per sample, sensitivity 1), so that the noise of a later release can
  follow the data's scale (adaptive clipping).
- :func:`private_training` wraps a module and its optimiser with opacus
  (per-sample gradients, clipping, noise); the steps are recorded as
  Poisson-subsampled Gaussian events.
- :meth:`PrivacyLedger.epsilon` composes everything with the Renyi-DP
  accountant of Google's ``dp-accounting``.
- :func:`calibrate_noise` finds the common scale of a plan's noise
  multipliers that spends a given epsilon.

The unit of privacy is one record (add/remove adjacency): a mechanism's
sensitivity is what one record can change.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "PrivacyLedger",
    "calibrate_noise",
    "clip_rows",
    "gaussian_release",
    "import_dp_accounting",
    "private_quantile",
    "private_training",
]

# Renyi orders of the accountant: integers (the fractional orders near 1 do
# not converge for large sampling rates, and the optimum of the budgets used
# here lies well above 2).
RDP_ORDERS = tuple(range(2, 65)) + (80, 96, 128, 160, 192, 256, 384, 512)


def import_dp_accounting():
    """Google's dp-accounting, with an error that names the package."""
    try:
        import dp_accounting
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ImportError(
            "Privacy accounting needs Google's dp-accounting "
            "(`pip install dp-accounting`)."
        ) from exc
    return dp_accounting


@dataclass
class PrivacyLedger:
    """Every mechanism one record's owner is exposed to, in order.

    Each entry is ``(what, kind, multiplier, count, rate)``: ``kind`` is
    ``"gaussian"`` (``count`` releases of the Gaussian mechanism with noise
    standard deviation ``multiplier`` times the sensitivity) or
    ``"poisson_gaussian"`` (``count`` steps of DP-SGD, each sampling every
    record with probability ``rate``). A multiplier of ``inf`` is a release
    without information about the records (it costs nothing); 0 is a release
    without noise (the ledger's epsilon is then infinite).
    """

    entries: list = field(default_factory=list)

    def gaussian(self, what, multiplier, count=1):
        """Record ``count`` Gaussian-mechanism releases."""
        self.entries.append((what, "gaussian", float(multiplier), int(count), 1.0))

    def poisson_gaussian(self, what, rate, multiplier, steps):
        """Record ``steps`` Poisson-subsampled Gaussian steps (DP-SGD)."""
        self.entries.append(
            (what, "poisson_gaussian", float(multiplier), int(steps), float(rate))
        )

    def merged(self):
        """The entries with equal (what, kind, multiplier, rate) summed."""
        out = {}
        for what, kind, mult, count, rate in self.entries:
            key = (what, kind, mult, rate)
            out[key] = out.get(key, 0) + count
        return [(w, k, m, c, r) for (w, k, m, r), c in out.items()]

    def epsilon(self, delta):
        """Epsilon of the whole ledger at ``delta`` (RDP composition)."""
        if not 0 < delta < 1:
            raise ValueError(f"delta must be in (0, 1); got {delta!r}.")
        events = []
        dp = None
        for _, kind, mult, count, rate in self.merged():
            if count == 0 or mult == math.inf or (kind != "gaussian" and rate == 0):
                continue
            if mult <= 0:
                return math.inf
            dp = dp or import_dp_accounting()
            event = dp.GaussianDpEvent(mult)
            if kind == "poisson_gaussian" and rate < 1:
                event = dp.PoissonSampledDpEvent(rate, event)
            events.append(dp.SelfComposedDpEvent(event, count))
        if not events:
            return 0.0
        accountant = dp.rdp.RdpAccountant(list(RDP_ORDERS))
        accountant.compose(dp.ComposedDpEvent(events))
        return float(accountant.get_epsilon(delta))

    def report(self):
        """The merged entries as dicts (for an estimator's fitted report)."""
        return [
            {"what": w, "kind": k, "noise_multiplier": m, "count": c, "rate": r}
            for w, k, m, c, r in self.merged()
        ]


def clip_rows(A, radius):
    """Rows of ``A`` scaled to an L2 norm of at most ``radius`` (a copy)."""
    A = np.asarray(A, dtype=np.float64)
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    return A * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def gaussian_release(values, sensitivity, multiplier, rng, ledger, what):
    """The Gaussian mechanism: ``values`` plus N(0, (multiplier * sensitivity)^2).

    ``values`` is what the records determine together (e.g. a sum of
    clipped per-record vectors), ``sensitivity`` the most one record can move
    it in L2. ``multiplier=0`` returns the values exactly (and makes the
    ledger's epsilon infinite). The release is recorded in ``ledger``.
    """
    values = np.asarray(values, dtype=np.float64)
    ledger.gaussian(what, multiplier)
    if multiplier == 0:
        return values.copy()
    scale = multiplier * sensitivity
    return values + rng.normal(0.0, scale, size=values.shape)


def private_quantile(
    norms, quantile, low, high, multiplier, rng, ledger, what, n_bins=40
):
    """A noisy ``quantile`` of non-negative ``norms`` on a geometric grid.

    Each record adds 1 to the bin of its norm among ``n_bins`` geometric bins
    between ``low`` and ``high`` (norms outside fall in the end bins), so the
    histogram has sensitivity 1; it is released with the Gaussian mechanism
    and the returned radius is the upper edge of the first bin at which the
    noisy cumulative count reaches ``quantile`` of the noisy total. The grid
    is fixed before the data are seen, so the result depends on the records
    only through the noisy histogram.
    """
    edges = np.geomspace(low, high, n_bins + 1)
    norms = np.asarray(norms, dtype=np.float64)
    which = np.clip(np.searchsorted(edges, norms, side="left") - 1, 0, n_bins - 1)
    counts = np.bincount(which, minlength=n_bins).astype(np.float64)
    noisy = np.maximum(gaussian_release(counts, 1.0, multiplier, rng, ledger, what), 0)
    total = noisy.sum()
    if total <= 0:
        return float(high)
    reached = np.flatnonzero(np.cumsum(noisy) >= quantile * total)
    return float(edges[1:][reached[0] if reached.size else -1])


def private_training(module, optimizer, noise_multiplier, max_grad_norm, batch, gen):
    """``module`` and ``optimizer`` made differentially private by opacus.

    Returns ``(wrapped_module, dp_optimizer)``: the wrapped module computes
    per-sample gradients (opacus' ``GradSampleModule``), the optimiser clips
    each sample's gradient to ``max_grad_norm``, sums them, adds Gaussian
    noise of standard deviation ``noise_multiplier * max_grad_norm`` drawn from
    the torch generator ``gen`` and divides by the expected batch size
    ``batch`` (``loss_reduction="sum"``: the caller's loss is a sum of
    per-sample losses). The caller draws Poisson batches and records the
    steps in its ledger.
    """
    try:
        from opacus import GradSampleModule
        from opacus.optimizers import DPOptimizer
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ImportError(
            "Private training needs opacus (`pip install opacus`)."
        ) from exc
    wrapped = GradSampleModule(module)
    dp_optimizer = DPOptimizer(
        optimizer,
        noise_multiplier=float(noise_multiplier),
        max_grad_norm=float(max_grad_norm),
        expected_batch_size=int(batch),
        loss_reduction="sum",
        generator=gen,
    )
    return wrapped, dp_optimizer


def calibrate_noise(plan_ledger, epsilon, delta, low=1e-2, high=1e4, tol=1e-3):
    """The scale ``t`` at which ``plan_ledger(t)`` spends ``epsilon`` at ``delta``.

    ``plan_ledger(t)`` builds the ledger of a whole run whose noise
    multipliers are ``t`` times fixed base multipliers; epsilon falls as
    ``t`` grows, and the smallest ``t`` (least noise) whose epsilon is at
    most the target is found by bisection on a log scale. Raises a
    ValueError when even ``high`` does not reach the target.
    """
    if plan_ledger(high).epsilon(delta) > epsilon:
        raise ValueError(
            f"epsilon={epsilon} cannot be reached at delta={delta}: even noise "
            f"{high:g} times the base multipliers spends more. Lower the "
            "number of rounds or epochs, or raise epsilon."
        )
    if plan_ledger(low).epsilon(delta) <= epsilon:
        return low
    lo, hi = math.log(low), math.log(high)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if plan_ledger(math.exp(mid)).epsilon(delta) > epsilon:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)
