"""Driving an estimator a few training steps at a time, and editing its weights.

Population-based training needs three things from an estimator that scikit-learn
does not name in one API: continue training for ``n`` more steps *exactly as one
longer fit would*, copy its whole state, and reach its weights.

Training continues through ``partial_fit`` where the estimator (or the last step
of a pipeline) has it, and otherwise through ``warm_start`` with ``max_iter``
(``max_epochs`` for skorch). Continuing means keeping the optimiser: scikit-learn's
MLP keeps its optimiser (momentum, Adam moments, learning-rate schedule) across
``partial_fit`` calls, and :func:`train` hands it the estimator's current
hyperparameters before each call, since MLP reads ``learning_rate_init`` and
``momentum`` only when it builds that optimiser; SGD models read ``eta0`` and
``alpha`` at every call and carry their step count ``t_``; skorch keeps its
optimiser across ``partial_fit`` and sets ``lr``/``optimizer__*`` on it in
place; this package's torch estimators keep the optimiser state and the
shuffling generator across warm-started fits (``TorchMixin._train``). An integer
``random_state`` becomes one ``RandomState`` stream per member, because
scikit-learn re-seeds from an integer at every ``partial_fit`` call (every epoch
would see the first epoch's order). Copying is ``copy.deepcopy``; weights are the
usual fitted arrays of scikit-learn's linear models and networks (``coef_``,
``intercept_``, ``coefs_``, ``intercepts_``) and the parameters of every fitted
``torch.nn.Module`` attribute (this package's torch estimators, skorch nets).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import inspect
import sys
import warnings
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from sklearn import get_config
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.pipeline import Pipeline
from sklearn.utils.metadata_routing import process_routing
from sklearn.utils.validation import check_is_fitted

from sklearn_ext.utils._sklearn_compat_mlp import sync_mlp_optimizer

__all__ = [
    "IncrementalProtocol",
    "incremental_protocol",
    "non_finite_state",
    "seeded_start",
    "shrink_perturb",
    "train",
]

_ITERATION_PARAMS = ("max_iter", "max_epochs")
_WEIGHT_ATTRIBUTES = ("coef_", "intercept_", "coefs_", "intercepts_")
_BIAS_ATTRIBUTES = ("intercept_", "intercepts_")
# Warm-startable estimators whose iteration parameter counts the total.
_TOTAL_ITERATIONS = ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor")


@dataclass(frozen=True)
class IncrementalProtocol:
    """How an estimator trains for ``n`` more steps.

    ``mode`` is "partial_fit" or "warm_start". ``iter_param`` is the iteration
    parameter the search sets: the number of iterations of a warm-started
    ``fit``, or, for ``partial_fit`` (skorch's ``max_epochs``), the epochs of one
    call, set to 1. ``final_step`` names the pipeline step that trains by
    ``partial_fit`` while the steps before it are fitted once, by the first call.
    """

    mode: str
    iter_param: str | None = None
    warm_param: str | None = None
    pass_classes: bool = False
    final_step: str | None = None

    @property
    def reserved(self):
        """Parameters the search sets itself, with the reason."""
        why = "the search sets it to train each member for its ready interval"
        names = [n for n in (self.iter_param, self.warm_param) if n is not None]
        return dict.fromkeys(names, why)


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


def _partial_fit_protocol(estimator, prefix=""):
    """The partial_fit protocol of ``estimator`` (a pipeline's last step when
    ``prefix`` is its name plus ``__``)."""
    accepts = inspect.signature(estimator.partial_fit).parameters
    params = estimator.get_params(deep=False)
    # skorch's partial_fit trains max_epochs epochs per call: one step is one.
    iter_param = prefix + "max_epochs" if "max_epochs" in params else None
    return IncrementalProtocol(
        "partial_fit",
        iter_param=iter_param,
        pass_classes=is_classifier(estimator) and "classes" in accepts,
        final_step=prefix[:-2] or None,
    )


def _partial_fit_target(estimator):
    """``(estimator_with_partial_fit, prefix)`` or None.

    The estimator itself, or the last step of a pipeline. An MLP with
    ``early_stopping=True`` (which its ``partial_fit`` refuses) has none.
    """
    target, prefix = estimator, ""
    if isinstance(estimator, Pipeline) and not hasattr(estimator, "partial_fit"):
        name, target = estimator.steps[-1]
        prefix = name + "__"
    if not hasattr(target, "partial_fit"):  # also "passthrough" and None
        return None
    mlp = type(target).__module__.startswith("sklearn.neural_network")
    if mlp and target.get_params(deep=False).get("early_stopping") is True:
        return None
    return target, prefix


def incremental_protocol(estimator, requested="auto"):
    """Choose how to train ``estimator`` incrementally, or say why it cannot be.

    ``"auto"`` prefers ``partial_fit`` (of the estimator, or of the last step of
    a pipeline), which keeps the optimiser's state between calls, and falls back
    to ``warm_start`` with ``max_iter``/``max_epochs``.
    """
    name = type(estimator).__name__
    target = _partial_fit_target(estimator)
    if requested in ("auto", "partial_fit") and target is not None:
        return _partial_fit_protocol(*target)
    if requested == "partial_fit":
        raise ValueError(
            f"incremental='partial_fit' needs an estimator (or a pipeline whose "
            f"last step is one) with partial_fit; {name} has none usable."
        )
    pairs = _warm_start_pairs(estimator)
    if len(pairs) == 1:
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
    if len(pairs) > 1:
        raise ValueError(
            f"{name} has several warm-startable parts ({[w for _, w in pairs]}); "
            "IPBTSearchCV trains exactly one. Wrap the others outside the search."
        )
    if requested == "warm_start":
        raise ValueError(
            f"incremental='warm_start' needs an estimator with a warm_start "
            f"parameter and one of {list(_ITERATION_PARAMS)}; {name} has none."
        )
    raise ValueError(
        f"{name} cannot train incrementally: population-based training continues "
        "each member's training, so the estimator needs partial_fit, or a "
        f"warm_start parameter with one of {list(_ITERATION_PARAMS)}."
    )


def _random_state_keys(estimator):
    return [
        k
        for k in estimator.get_params(deep=True)
        if k == "random_state" or k.endswith("__random_state")
    ]


def _one_stream(estimator):
    """Give every integer ``random_state`` a persistent ``RandomState``.

    scikit-learn re-creates its generator from an integer ``random_state`` at
    every ``partial_fit`` call, so each epoch would shuffle in the first epoch's
    order; one ``RandomState`` per member continues the stream instead.
    """
    params = estimator.get_params(deep=True)
    streams = {
        k: np.random.RandomState(int(params[k]))
        for k in _random_state_keys(estimator)
        if isinstance(params[k], Integral) and not isinstance(params[k], bool)
    }
    if streams:
        estimator.set_params(**streams)


def seeded_start(estimator, seed):
    """Initialise a skorch-like net from ``seed`` when nothing else seeds it.

    skorch nets have no ``random_state``: their weights come from torch's global
    generator at the first ``partial_fit``. A member (and its replay on all the
    data) would then start from whatever state the generator is in. An
    estimator with ``initialize()`` and no ``random_state`` parameter anywhere
    is initialised here, under a forked global generator seeded with ``seed``
    (the caller's generator state is restored). Returns ``estimator``.
    """
    target = _partial_fit_target(estimator)
    net = estimator if target is None else target[0]
    if (
        _random_state_keys(estimator)
        or not callable(getattr(net, "initialize", None))
        or getattr(net, "initialized_", True)
    ):
        return estimator
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        net.initialize()
    return estimator


def _sync_live_optimisers(estimator):
    """Hand scikit-learn MLPs' running optimisers their current hyperparameters.

    Every MLP inside ``estimator`` (a pipeline's steps included) goes through
    :func:`sklearn_ext.utils._sklearn_compat_mlp.sync_mlp_optimizer`, the one
    place that touches scikit-learn's private optimiser.
    """
    for obj in _holders(estimator):
        if type(obj).__module__.startswith("sklearn.neural_network"):
            sync_mlp_optimizer(obj)


def _split_pipeline_params(pipeline, params, final_step):
    """Metadata per step, as the pipeline's ``fit`` would route it.

    With metadata routing enabled, by the steps' requests (the last step gets
    what it requests for ``fit``); otherwise by ``step__param`` names.
    """
    if get_config()["enable_metadata_routing"]:
        routed = process_routing(pipeline, "fit", **params)
        out = {}
        for name, _ in pipeline.steps[:-1]:
            if name in routed:
                out[name] = dict(routed[name].get("fit_transform", {}))
        out[final_step] = dict(routed[final_step]["fit"])
        return out
    out = {}
    for key, value in params.items():
        step, sep, name = key.partition("__")
        if not sep:
            raise ValueError(
                f"Pipeline fit parameters are named <step>__<parameter>; got "
                f"{key!r}. Pass e.g. {final_step}__{key}."
            )
        out.setdefault(step, {})[name] = value
    return out


def _transform_head(pipeline, X, y, step_params):
    """The pipeline's transformers applied to X, fitted by the first call."""
    for name, step in pipeline.steps[:-1]:
        if step is None or step == "passthrough":
            continue
        try:
            check_is_fitted(step)
        except NotFittedError:
            X = step.fit_transform(X, y, **step_params.get(name, {}))
        else:
            X = step.transform(X)
    return X


def train(estimator, protocol, n_steps, X, y, classes=None, fit_params=None):
    """Train ``estimator`` in place for ``n_steps`` more steps; return it.

    A step is one ``partial_fit`` call (one epoch for networks and SGD models),
    or one iteration (epoch) of a warm-started ``fit``. Before training, the
    estimator's current hyperparameters reach a scikit-learn MLP's running
    optimiser and an integer ``random_state`` becomes a persistent stream, so
    that ``k`` calls of one step with fixed hyperparameters train as one call of
    ``k`` steps (exactly for deterministic estimators, e.g. ``shuffle=False``;
    with shuffling, each epoch draws a fresh permutation from the continued
    stream). In a pipeline trained by its last step's ``partial_fit``, the
    steps before it are fitted by the first call and only transform afterwards.
    Convergence warnings are silenced: stopping early is the point.
    """
    fit_params = dict(fit_params or {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if protocol.mode == "warm_start":
            estimator.set_params(
                **{protocol.iter_param: int(n_steps), protocol.warm_param: True}
            )
            estimator.fit(X, y, **fit_params)
            return estimator
        _one_stream(estimator)
        _sync_live_optimisers(estimator)
        if protocol.iter_param is not None:
            estimator.set_params(**{protocol.iter_param: 1})
        learner = estimator
        if protocol.final_step is not None:
            step_params = _split_pipeline_params(
                estimator, fit_params, protocol.final_step
            )
            X = _transform_head(estimator, X, y, step_params)
            learner = estimator.named_steps[protocol.final_step]
            fit_params = step_params.get(protocol.final_step, {})
        if protocol.pass_classes:
            fit_params["classes"] = classes
        for _ in range(int(n_steps)):
            learner.partial_fit(X, y, **fit_params)
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


def non_finite_state(estimator):
    """Where a trained estimator went non-finite, or None if nowhere.

    Training can diverge without raising: scikit-learn's MLPs and skorch nets
    keep going on a NaN loss. Checked: the weights (numpy ``coef_``-style
    arrays and torch modules, as :func:`shrink_perturb` finds them), an MLP's
    ``loss_``, and the last ``train_loss`` of a skorch net's history.
    """
    slots, modules = _weights(estimator)
    for obj, name, i in slots:
        value = getattr(obj, name) if i is None else getattr(obj, name)[i]
        if not np.all(np.isfinite(value)):
            return f"{type(obj).__name__}.{name} holds NaN or infinity"
    for module in modules:
        for pname, param in module.named_parameters():
            if not bool(param.detach().isfinite().all()):
                return f"the torch parameter {pname} holds NaN or infinity"
    for obj in _holders(estimator):
        loss = vars(obj).get("loss_")
        if isinstance(loss, float) and not np.isfinite(loss):
            return f"{type(obj).__name__}.loss_ is {loss}"
        history = vars(obj).get("history_", vars(obj).get("history"))
        if history is not None and type(history).__module__.startswith("skorch"):
            last = history[-1].get("train_loss") if len(history) else None
            if last is not None and not np.isfinite(last):
                return f"the last train_loss of {type(obj).__name__} is {last}"
    return None


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
