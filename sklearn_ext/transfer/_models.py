"""The models a task vector moves between: chains of linear layers.

Three kinds are read the same way, as a chain of ``L`` linear layers with
element-wise activations between them:

- a torch ``nn.Sequential`` (nested ones too) of ``nn.Linear`` layers and
  element-wise activations (ReLU, tanh, GELU, ... and Dropout / Identity);
- a fitted estimator of this package whose ``module_`` is such a chain and which
  maps raw rows to the module's input with ``_module_inputs(X, device, dtype)``
  (e.g. :class:`~sklearn_ext.unlearning.UnlearnableMLPClassifier`);
- a fitted scikit-learn ``MLPClassifier`` or ``MLPRegressor``.

A task vector is a dict from parameter names to arrays shaped like the model's
parameters: the state-dict names of the linear layers (``"0.weight"``,
``"0.bias"``, ...) and of the element-wise layers that have parameters
(``PReLU``'s slopes) for torch chains and estimators, ``"coefs_.<i>"`` and
``"intercepts_.<i>"`` for scikit-learn MLPs. Every parameter of a chain is in
its task vector: none is left out silently.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import sys
from dataclasses import dataclass

import numpy as np

from sklearn_ext.transfer._graph import FunctionalModel, trace_spaces
from sklearn_ext.utils._sklearn_compat import MLP_ACTIVATIONS, check_is_fitted

__all__ = ["Chain", "describe", "state_dict", "task_vector", "with_update"]

# Element-wise torch layers a chain may hold between its linear layers.
_ELEMENTWISE = (
    "ReLU",
    "LeakyReLU",
    "ReLU6",
    "PReLU",
    "ELU",
    "SELU",
    "CELU",
    "GELU",
    "SiLU",
    "Mish",
    "Tanh",
    "Hardtanh",
    "Sigmoid",
    "Softplus",
    "Softsign",
    "Tanhshrink",
    "Identity",
    "Dropout",
    "AlphaDropout",
)


@dataclass(frozen=True)
class Chain:
    """What a transport needs to know of one model.

    Parameters
    ----------
    kind : {"torch", "estimator", "sklearn"}
    widths : tuple of int
        ``(n_inputs, hidden_1, ..., n_outputs)``: ``L + 1`` widths for ``L``
        linear layers.
    keys : tuple of (str, str or None)
        The weight and bias names of every linear layer, in order.
    unit_params : tuple of (str, int, int)
        The parameters of element-wise layers (``PReLU``): name, the
        representation space they act on (0 the input, ``k`` the output of
        linear layer ``k - 1``) and their size (1 when shared by all units,
        else the space's width).
    """

    kind: str
    widths: tuple
    keys: tuple
    unit_params: tuple = ()

    @property
    def shapes(self):
        """``{name: shape}`` of every parameter a task vector holds."""
        out = {}
        for i, (w, b) in enumerate(self.keys):
            n_in, n_out = self.widths[i], self.widths[i + 1]
            out[w] = (n_in, n_out) if self.kind == "sklearn" else (n_out, n_in)
            if b is not None:
                out[b] = (n_out,)
        for name, _, size in self.unit_params:
            out[name] = (size,)
        return out


def _torch_module(model):
    """The nn.Module of a torch model, a fitted estimator or a
    :class:`~sklearn_ext.transfer.FunctionalModel`, else None."""
    if hasattr(model, "_module_inputs"):
        check_is_fitted(model, "module_")
        return model.module_
    if isinstance(model, FunctionalModel):
        return model.module()
    nn = getattr(sys.modules.get("torch"), "nn", None)
    if nn is not None and isinstance(model, nn.Module):
        return model
    return None


def is_chain(model):
    """Whether ``model`` is read as a chain (:func:`describe`) rather than a
    traced graph (:func:`describe_graph`)."""
    if hasattr(model, "coefs_") or type(model).__module__.startswith(
        "sklearn.neural_network"
    ):
        return True
    if isinstance(model, FunctionalModel):
        return False
    module = _torch_module(model)
    if module is None:
        return True  # describe names what it is not
    from torch import nn

    if not isinstance(module, nn.Sequential):
        return False
    try:
        layers = _leaves(module, "model")
    except TypeError:
        return False
    return all(
        isinstance(m, nn.Linear) or type(m).__name__ in _ELEMENTWISE for m in layers
    )


def _not_a_model(model, where):
    return TypeError(
        f"{where} must be a torch model, a fitted sklearn_ext estimator with a "
        "module_, a FunctionalModel, or a fitted scikit-learn MLP; got "
        f"{type(model).__name__}."
    )


def describe_graph(model, where, X):
    """Trace a torch model that is not a chain on the calibration rows ``X``.

    Returns its :class:`~sklearn_ext.transfer._graph.GraphSpec`, the traced
    module and the module's input tensor.
    """
    import torch

    module = _torch_module(model)
    if module is None:
        raise _not_a_model(model, where)
    param = next(module.parameters(), None)
    if param is None:
        raise ValueError(f"{where} has no parameters.")
    if hasattr(model, "_module_inputs"):
        inputs = model._module_inputs(X, device=param.device, dtype=param.dtype)
        kind = "estimator"
    else:
        inputs = torch.as_tensor(X, dtype=param.dtype, device=param.device)
        kind = "functional" if isinstance(model, FunctionalModel) else "torch"
    spec, gm = trace_spaces(module, inputs, kind, where)
    if isinstance(model, FunctionalModel):
        spec = spec.renamed(module.original_names)
    return spec, gm, inputs


def _leaves(module, where):
    """The leaf layers of a (nested) nn.Sequential, in execution order."""
    from torch import nn

    if not isinstance(module, nn.Sequential):
        raise TypeError(
            f"{where} must be an nn.Sequential chain of Linear layers and "
            f"element-wise activations; got a {type(module).__name__}, whose "
            "layers' order is not known."
        )
    leaves = []
    for child in module.children():
        if isinstance(child, nn.Sequential):
            leaves += _leaves(child, where)
        else:
            leaves.append(child)
    return leaves


def describe(model, where):
    """The :class:`Chain` of ``model``, or an error naming why it is not one."""
    if type(model).__module__.startswith("sklearn.neural_network"):
        check_is_fitted(model, "coefs_")
    if hasattr(model, "coefs_") and hasattr(model, "intercepts_"):
        coefs = model.coefs_
        widths = (coefs[0].shape[0], *(c.shape[1] for c in coefs))
        keys = tuple((f"coefs_.{i}", f"intercepts_.{i}") for i in range(len(coefs)))
        return Chain("sklearn", widths, keys)
    module = _torch_module(model)
    if module is not None:
        from torch import nn

        layers = _leaves(module, where)
        names = {id(m): name for name, m in module.named_modules()}
        keys, widths, unit_params = [], [], []
        for layer in layers:
            if isinstance(layer, nn.Linear):
                if widths and widths[-1] != layer.in_features:
                    raise ValueError(f"{where}: consecutive Linear widths differ.")
                if not widths:
                    widths.append(layer.in_features)
                widths.append(layer.out_features)
                name = names[id(layer)]
                bias = None if layer.bias is None else f"{name}.bias"
                keys.append((f"{name}.weight", bias))
            elif isinstance(layer, nn.PReLU):
                size = layer.weight.numel()
                space = len(keys)
                if size != 1 and widths and size != widths[-1]:
                    raise ValueError(
                        f"{where}: the PReLU {names[id(layer)]!r} has {size} slopes "
                        f"for a space of {widths[-1]} units."
                    )
                unit_params.append((f"{names[id(layer)]}.weight", space, size))
            elif type(layer).__name__ not in _ELEMENTWISE:
                raise TypeError(
                    f"{where} holds a {type(layer).__name__} layer; a chain may "
                    "hold only Linear layers and element-wise activations "
                    f"({', '.join(_ELEMENTWISE)})."
                )
        if not keys:
            raise ValueError(f"{where} holds no Linear layer.")
        kind = "torch" if isinstance(model, nn.Module) else "estimator"
        return Chain(kind, tuple(widths), tuple(keys), tuple(unit_params))
    raise TypeError(
        f"{where} must be a torch nn.Sequential of Linear layers and activations, "
        "a fitted sklearn_ext estimator with a module_ chain, or a fitted "
        f"scikit-learn MLPClassifier / MLPRegressor; got {type(model).__name__}."
    )


def linear_io(model, chain, X):
    """Inputs and outputs of every linear layer on rows ``X`` (float64 arrays).

    Returns a list of ``(inputs, outputs)`` pairs, one per linear layer: what
    the layer reads and its pre-activation output.
    """
    if chain.kind == "sklearn":
        out, h = [], X
        act = MLP_ACTIVATIONS[model.activation]
        for W, b in zip(model.coefs_, model.intercepts_):
            z = h @ W + b
            out.append((h, z))
            h = z.copy()
            act(h)  # scikit-learn's activations work in place
        return out
    import torch
    from torch import nn

    module = _torch_module(model)
    param = next(module.parameters())
    if chain.kind == "estimator":
        inputs = model._module_inputs(X, device=param.device, dtype=param.dtype)
    else:
        inputs = torch.as_tensor(X, dtype=param.dtype, device=param.device)
    records = []

    def hook(layer, args, output):
        records.append((args[0].detach(), output.detach()))

    handles = [
        m.register_forward_hook(hook)
        for m in _leaves(module, "model")
        if isinstance(m, nn.Linear)
    ]
    was_training = module.training
    try:
        module.eval()
        with torch.no_grad():
            module(inputs)
    finally:
        module.train(was_training)
        for h in handles:
            h.remove()
    return [(a.cpu().double().numpy(), b.cpu().double().numpy()) for a, b in records]


def parameters(model, chain):
    """``{name: float64 array}`` of the model's linear-layer parameters."""
    if chain.kind == "sklearn":
        out = {}
        for i, (w, b) in enumerate(chain.keys):
            out[w] = np.asarray(model.coefs_[i], dtype=np.float64)
            out[b] = np.asarray(model.intercepts_[i], dtype=np.float64)
        return out
    if isinstance(model, FunctionalModel):
        state = model.state_dict
    else:
        state = _torch_module(model).state_dict()
    return {
        k: np.asarray(
            state[k].detach().cpu().double().numpy()
            if hasattr(state[k], "detach")
            else state[k],
            dtype=np.float64,
        )
        for k in chain.shapes
    }


def as_update(arrays, chain):
    """A transported update in the target's format (tensors for torch kinds)."""
    if chain.kind == "sklearn":
        return {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
    import torch

    return {k: torch.as_tensor(v, dtype=torch.float32) for k, v in arrays.items()}


def check_task_vector(task_vector, chain, where):
    """``task_vector`` as float64 arrays, checked against the chain's shapes."""
    if not isinstance(task_vector, dict):
        raise TypeError(
            f"{where} must be a dict from parameter names to arrays; got "
            f"{type(task_vector).__name__}."
        )
    shapes = chain.shapes
    missing = sorted(set(shapes) - set(task_vector))
    extra = sorted(set(task_vector) - set(shapes))
    if missing or extra:
        raise ValueError(
            f"{where} does not match the model's parameters: missing {missing}, "
            f"unexpected {extra}."
        )
    out = {}
    for key, shape in shapes.items():
        value = task_vector[key]
        if hasattr(value, "detach"):
            value = value.detach().cpu().double().numpy()
        value = np.asarray(value, dtype=np.float64)
        if value.shape != shape:
            raise ValueError(
                f"{where}[{key!r}] has shape {value.shape}; the model's parameter "
                f"has shape {shape}."
            )
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{where}[{key!r}] holds NaN or infinite values.")
        out[key] = value
    return out


def task_vector(finetuned, base):
    """The task vector of a fine-tuned model: its parameters minus the base's.

    Parameters
    ----------
    finetuned : model
        The model after fine-tuning: a torch ``nn.Sequential`` chain, a fitted
        sklearn_ext estimator with a ``module_`` chain, or a fitted
        scikit-learn MLP (see :class:`TaskVectorTransporter`).
    base : model
        The same model before fine-tuning (same kind and widths).

    Returns
    -------
    task_vector : dict
        ``{name: finetuned - base}`` for every linear-layer parameter: float32
        CPU tensors for torch models and estimators, float64 arrays for
        scikit-learn MLPs.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ext.transfer import task_vector
    >>> base = torch.nn.Sequential(torch.nn.Linear(3, 2))
    >>> tuned = torch.nn.Sequential(torch.nn.Linear(3, 2))
    >>> sorted(task_vector(tuned, base))
    ['0.bias', '0.weight']
    """
    if not (is_chain(finetuned) and is_chain(base)):
        return _graph_task_vector(finetuned, base)
    chain = describe(finetuned, "finetuned")
    base_chain = describe(base, "base")
    if chain != base_chain:
        raise ValueError(
            "finetuned and base are not the same architecture: widths "
            f"{chain.widths} and {base_chain.widths}."
        )
    a, b = parameters(finetuned, chain), parameters(base, chain)
    return as_update({k: a[k] - b[k] for k in a}, chain)


def _named_tensors(model, where):
    if isinstance(model, FunctionalModel):
        return dict(model.state_dict)
    module = _torch_module(model)
    if module is None:
        raise _not_a_model(model, where)
    return dict(module.named_parameters())


def _graph_task_vector(finetuned, base):
    """``finetuned - base`` over every parameter of two torch models."""
    import torch

    a = _named_tensors(finetuned, "finetuned")
    b = _named_tensors(base, "base")
    shapes_a = {k: tuple(torch.as_tensor(v).shape) for k, v in a.items()}
    shapes_b = {k: tuple(torch.as_tensor(v).shape) for k, v in b.items()}
    if shapes_a != shapes_b:
        raise ValueError(
            "finetuned and base are not the same architecture: their parameters' "
            "names or shapes differ."
        )
    return {
        k: (torch.as_tensor(a[k]) - torch.as_tensor(b[k])).detach().cpu().float()
        for k in a
    }


def with_update(model, chain, update, alpha):
    """A deep copy of ``model`` with ``alpha * update`` added to its parameters."""
    if isinstance(model, FunctionalModel):
        import torch

        state = {}
        for key, value in model.state_dict.items():
            value = torch.as_tensor(value).detach().clone()
            if key in update:
                value = value + alpha * torch.as_tensor(update[key], dtype=value.dtype)
            state[key] = value
        return FunctionalModel(state, model.forward)
    new = copy.deepcopy(model)
    if chain.kind == "sklearn":
        for i, (w, b) in enumerate(chain.keys):
            new.coefs_[i] = new.coefs_[i] + alpha * update[w]
            new.intercepts_[i] = new.intercepts_[i] + alpha * update[b]
        return new
    import torch

    module = _torch_module(new)
    params = dict(module.named_parameters())
    with torch.no_grad():
        for key, value in update.items():
            p = params[key]
            p.add_(alpha * torch.as_tensor(value, dtype=p.dtype, device=p.device))
    return new


def state_dict(model, chain):
    """Every parameter of ``model`` as arrays: its module's state dict (torch
    kinds) or ``{"coefs_.<i>": ..., "intercepts_.<i>": ...}`` (scikit-learn)."""
    if chain.kind == "sklearn":
        return parameters(model, chain)
    if isinstance(model, FunctionalModel):
        state = model.state_dict
    else:
        state = _torch_module(model).state_dict()
    return {
        k: v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)
        for k, v in state.items()
    }
