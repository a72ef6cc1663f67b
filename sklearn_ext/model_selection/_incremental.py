"""Driving an estimator a few training steps at a time, and editing its weights.

Population-based training needs three things from an estimator that scikit-learn
does not name in one API: continue training for ``n`` more steps, copy its whole
state, and reach its weights. Training continues through ``partial_fit`` or
through ``warm_start`` with ``max_iter`` (or skorch's ``max_epochs``), also when
the estimator sits inside a pipeline; copying is ``copy.deepcopy``; weights are
the usual fitted arrays of scikit-learn's linear models and networks
(``coef_``, ``intercept_``, ``coefs_``, ``intercepts_``) and the parameters of
every fitted ``torch.nn.Module`` attribute (this package's torch estimators,
skorch nets).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import inspect
import sys
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import ConvergenceWarning

__all__ = ["IncrementalProtocol", "incremental_protocol", "shrink_perturb", "train"]

_ITERATION_PARAMS = ("max_iter", "max_epochs")
_WEIGHT_ATTRIBUTES = ("coef_", "intercept_", "coefs_", "intercepts_")
_BIAS_ATTRIBUTES = ("intercept_", "intercepts_")
# Warm-startable estimators whose iteration parameter counts the total.
_TOTAL_ITERATIONS = ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor")


@dataclass(frozen=True)
class IncrementalProtocol:
    """How an estimator trains for ``n`` more steps."""

    mode: str  # "warm_start" or "partial_fit"
    iter_param: str | None = None
    warm_param: str | None = None
    pass_classes: bool = False

    @property
    def reserved(self):
        """Parameters the search sets itself, with the reason."""
        if self.mode != "warm_start":
            return {}
        why = "the search sets it to train each member for its ready interval"
        return {self.iter_param: why, self.warm_param: why}


def _warm_start_pairs(estimator):
    params = estimator.get_params(deep=True)
    pairs = []
    for key in params:
        if key != "warm_start" and not key.endswith("__warm_start"):
            continue
        prefix = key[: -len("warm_start")]
        for it in _ITERATION_PARAMS:
            if prefix + it in params:
                pairs.append((prefix + it, key))
                break
    return pairs


def incremental_protocol(estimator, requested="auto"):
    """Choose how to train ``estimator`` incrementally, or say why it cannot be.

    ``"auto"`` prefers ``warm_start`` with ``max_iter``/``max_epochs`` (each call
    re-reads every hyperparameter, e.g. a new learning rate) and falls back to
    ``partial_fit``.
    """
    pairs = _warm_start_pairs(estimator)
    can_partial = hasattr(estimator, "partial_fit")
    name = type(estimator).__name__
    if requested in ("auto", "warm_start") and len(pairs) == 1:
        it, warm = pairs[0]
        prefix = warm[: -len("warm_start")]
        owner = estimator.get_params()[prefix[:-2]] if prefix else estimator
        if type(owner).__name__ in _TOTAL_ITERATIONS:
            raise ValueError(
                f"{type(owner).__name__} cannot train incrementally here: its "
                f"{it.rsplit('__', 1)[-1]} counts the total number of iterations, "
                "so a warm-started fit would not train any further."
            )
        return IncrementalProtocol("warm_start", iter_param=it, warm_param=warm)
    if requested in ("auto", "warm_start") and len(pairs) > 1:
        raise ValueError(
            f"{name} has several warm-startable parts ({[w for _, w in pairs]}); "
            "IPBTSearchCV trains exactly one. Wrap the others outside the search."
        )
    if requested == "warm_start":
        raise ValueError(
            f"incremental='warm_start' needs an estimator with a warm_start "
            f"parameter and one of {list(_ITERATION_PARAMS)}; {name} has none."
        )
    if can_partial:
        accepts = inspect.signature(estimator.partial_fit).parameters
        return IncrementalProtocol(
            "partial_fit",
            pass_classes=is_classifier(estimator) and "classes" in accepts,
        )
    raise ValueError(
        f"{name} cannot train incrementally: population-based training continues "
        "each member's training, so the estimator needs partial_fit, or a "
        f"warm_start parameter with one of {list(_ITERATION_PARAMS)}."
    )


def train(estimator, protocol, n_steps, X, y, classes=None, fit_params=None):
    """Train ``estimator`` in place for ``n_steps`` more steps; return it.

    A step is one ``partial_fit`` call, or one iteration (epoch) of a warm-started
    ``fit``. Convergence warnings are silenced: stopping early is the point.
    """
    fit_params = dict(fit_params or {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if protocol.mode == "warm_start":
            estimator.set_params(
                **{protocol.iter_param: int(n_steps), protocol.warm_param: True}
            )
            estimator.fit(X, y, **fit_params)
        else:
            if protocol.pass_classes:
                fit_params["classes"] = classes
            for _ in range(int(n_steps)):
                estimator.partial_fit(X, y, **fit_params)
    return estimator


def _torch_module_type():
    torch = sys.modules.get("torch")
    return None if torch is None else torch.nn.Module


def _holders(estimator):
    seen, out = set(), []
    nested = estimator.get_params(deep=True).values()
    for obj in [estimator, *[v for v in nested if isinstance(v, BaseEstimator)]]:
        if id(obj) not in seen:
            seen.add(id(obj))
            out.append(obj)
    return out


def _weights(estimator):
    """``(numpy_slots, torch_modules)``: where the fitted weights live.

    A numpy slot is ``(owner, attribute, index)`` with ``index`` None for an
    array attribute or the position in a list of arrays.
    """
    module_type = _torch_module_type()
    slots, modules = [], []
    for obj in _holders(estimator):
        for name, value in vars(obj).items():
            if name in _WEIGHT_ATTRIBUTES:
                if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                    slots.append((obj, name, None))
                elif isinstance(value, list):
                    slots += [
                        (obj, name, i)
                        for i, v in enumerate(value)
                        if isinstance(v, np.ndarray) and v.dtype.kind == "f"
                    ]
            elif (
                module_type is not None
                and name.endswith("_")
                and isinstance(value, module_type)
                and any(True for _ in value.parameters())
            ):
                modules.append(value)
    return slots, modules


def _fresh_array(name, shape, rng):
    """A Glorot-uniform draw for weights; zeros for biases (``intercept*_``)."""
    if name in _BIAS_ATTRIBUTES:
        return np.zeros(shape)
    if len(shape) < 2:  # a 1-D coef_ (SGDRegressor): n inputs, one output
        fan_out, fan_in = 1, int(np.prod(shape))
    else:
        fan_out, fan_in = shape[0], int(np.prod(shape[1:]))
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, size=shape)


def shrink_perturb(estimator, shrink, perturb, seed):
    """Apply θ ← shrink·θ + perturb·θ_fresh to every weight, in place.

    ``θ_fresh`` is a fresh initialisation: the package's ``init_parameters`` of a
    CPU copy of each torch module (PyTorch's default scheme, drawn from a
    generator seeded with ``seed``; no global RNG is touched), or a
    Glorot-uniform draw for numpy weights (``coef_``, ``coefs_``) and zero for
    biases (``intercept_``, ``intercepts_``), as
    scikit-learn's linear models start. Returns False, and changes nothing, when
    no weights are found. SGD models with ``average=True`` continue from their
    internal unaveraged weights, which this does not reach.
    """
    slots, modules = _weights(estimator)
    if not slots and not modules:
        return False
    rng = np.random.RandomState(seed)
    for obj, name, index in slots:
        value = getattr(obj, name)
        arr = value if index is None else value[index]
        fresh = _fresh_array(name, arr.shape, rng).astype(arr.dtype)
        new = shrink * arr + perturb * fresh
        if arr.flags.writeable:
            arr[...] = new  # in place: optimisers may hold references to it
        elif index is None:
            setattr(obj, name, new)
        else:
            value[index] = new
    if modules:
        import torch

        from sklearn_ext.utils._torch import init_parameters, make_generator

        # Drawn on a CPU copy from a seeded generator: a member draws the same
        # noise on any device.
        generator = make_generator(int(seed))
        for module in modules:
            fresh = init_parameters(copy.deepcopy(module).to("cpu"), generator)
            with torch.no_grad():
                for p, q in zip(module.parameters(), fresh.parameters()):
                    p.mul_(shrink).add_(q.to(p.device), alpha=perturb)
    return True
