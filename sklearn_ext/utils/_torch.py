"""The private PyTorch backend shared by every torch estimator.

One device helper, one seeding helper, one numpy/tensor converter, one minibatch
training loop and one portable pickling format. torch is imported lazily, inside
the functions, so that importing this module stays cheap.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import io
import math
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_ext.utils._sklearn_compat import StrOptions

__all__ = [
    "DeviceConstraint",
    "ModuleState",
    "TrainResult",
    "import_torch",
    "init_parameters",
    "make_generator",
    "module_from_bytes",
    "module_to_bytes",
    "resolve_device",
    "to_numpy",
    "to_tensor",
    "train_loop",
]

_DEVICE_PATTERN = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def import_torch():
    """Import torch, or raise an ImportError that says how to install it."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a hard dependency
        raise ImportError(
            "This estimator needs PyTorch. Install the CPU build with "
            "`pip install torch==2.13.0` (or a CUDA build for a GPU)."
        ) from exc
    return torch


def _is_torch_device(value):
    return type(value).__name__ == "device" and type(value).__module__ == "torch"


class DeviceConstraint(StrOptions):
    """Parameter constraint for ``device``, usable in ``_parameter_constraints``.

    Accepts ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or a
    ``torch.device``; it checks the form only, so that it never imports torch.
    Whether the device exists is checked by :func:`resolve_device` in ``fit``.
    """

    def __init__(self):
        super().__init__({"auto", "cpu", "cuda", "mps"})

    def is_satisfied_by(self, val):
        if isinstance(val, str):
            return bool(_DEVICE_PATTERN.match(val))
        return _is_torch_device(val)

    def __str__(self):
        return "a device: 'auto', 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device"


def resolve_device(device, *, param="device", strict=True):
    """Turn a ``device`` parameter into a ``torch.device``.

    Parameters
    ----------
    device : str or torch.device
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``,
        ``"cuda:N"``, ``"mps"`` or a ``torch.device``.
    param : str, default="device"
        Name of the parameter, used in error messages.
    strict : bool, default=True
        If True (in ``fit``), asking for a device that this machine lacks raises a
        ValueError. If False (at inference, e.g. after unpickling a model fitted on
        a GPU on a machine without one), fall back to the CPU with a warning.

    Returns
    -------
    torch.device
    """
    torch = import_torch()
    if _is_torch_device(device):
        dev = device
    elif isinstance(device, str) and _DEVICE_PATTERN.match(device):
        if device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        dev = torch.device(device)
    else:
        raise ValueError(
            f"The '{param}' parameter must be 'auto', 'cpu', 'cuda', 'cuda:N', 'mps' "
            f"or a torch.device; got {device!r}."
        )

    problem = None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            problem = "CUDA is not available on this machine"
        elif dev.index is not None and dev.index >= torch.cuda.device_count():
            problem = (
                f"this machine has {torch.cuda.device_count()} CUDA device(s), "
                f"so index {dev.index} does not exist"
            )
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            problem = "MPS is not available on this machine"
    elif dev.type != "cpu":
        problem = f"device type {dev.type!r} is not supported"

    if problem is None:
        return dev
    if strict:
        raise ValueError(
            f"The '{param}' parameter is {str(device)!r}, but {problem}. "
            f"Use {param}='cpu' or {param}='auto'."
        )
    warnings.warn(
        f"{param}={str(device)!r} was requested, but {problem}; using the CPU.",
        UserWarning,
        stacklevel=3,
    )
    return torch.device("cpu")


def make_generator(random_state, device="cpu"):
    """Return a ``torch.Generator`` seeded from ``random_state``.

    The seed is drawn from ``check_random_state(random_state)``, so an integer
    ``random_state`` gives the same generator on every call and a ``RandomState``
    instance advances as with any scikit-learn estimator. No global RNG is seeded.

    Parameters
    ----------
    random_state : int, RandomState instance or None
    device : str or torch.device, default="cpu"
        Device of the generator; random tensors drawn on a device need a
        generator on that device.

    Returns
    -------
    torch.Generator
    """
    torch = import_torch()
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


def to_tensor(X, *, dtype=None, device="cpu"):
    """Copy a numpy array (or array-like) into a new tensor.

    The tensor never shares memory with ``X``: read-only arrays (memmaps, arrays
    owned by pandas) and user arrays are safe, since training never writes into
    the caller's data. Floating input becomes ``dtype`` (float32 by default).

    Parameters
    ----------
    X : array-like
    dtype : torch.dtype, default=None
        Defaults to ``torch.float32``.
    device : str or torch.device, default="cpu"

    Returns
    -------
    torch.Tensor
    """
    torch = import_torch()
    if dtype is None:
        dtype = torch.float32
    # torch.tensor always copies (and, unlike torch.from_numpy, accepts
    # non-writable arrays without a warning).
    # C order: torch.tensor keeps a Fortran-ordered array's strides, and some
    # consumers (e.g. L-BFGS's flattening of gradients) need contiguous tensors.
    return torch.tensor(np.ascontiguousarray(X), dtype=dtype, device=device)


def to_numpy(tensor, dtype=np.float64):
    """Return a new numpy array (float64 by default) holding ``tensor``'s values."""
    array = tensor.detach().cpu().numpy()
    return array.astype(dtype, copy=True) if dtype is not None else array.copy()


def init_parameters(module, generator):
    """Initialise every parameter of ``module`` from ``generator``.

    PyTorch layers initialise themselves from the global RNG; this redraws their
    parameters from ``generator`` so that ``random_state`` alone fixes the result.
    Linear and convolution layers get PyTorch's default scheme (Kaiming-uniform
    weights, uniform biases in +-1/sqrt(fan_in)), embeddings a standard normal,
    normalisation layers ones and zeros. A custom module initialises its own
    parameters by defining ``init_parameters(self, generator)``, which is called
    instead of the rules above for that module's direct parameters.

    Parameters
    ----------
    module : torch.nn.Module
    generator : torch.Generator
        A CPU generator; parameters are drawn on the CPU and copied in place.

    Returns
    -------
    module : torch.nn.Module
        The same module.
    """
    torch = import_torch()
    nn = torch.nn
    norm_types = (nn.LayerNorm, nn.GroupNorm, nn.modules.batchnorm._NormBase)

    def draw_uniform(param, bound):
        values = torch.rand(param.shape, generator=generator) * (2 * bound) - bound
        param.copy_(values.to(dtype=param.dtype))

    with torch.no_grad():
        for sub in module.modules():
            if hasattr(sub, "init_parameters"):
                sub.init_parameters(generator)
                continue
            own = dict(sub.named_parameters(recurse=False))
            if not own:
                continue
            if isinstance(sub, nn.Embedding):
                own["weight"].copy_(
                    torch.randn(own["weight"].shape, generator=generator)
                )
                continue
            if isinstance(sub, norm_types):
                for name, param in own.items():
                    param.fill_(1.0 if name == "weight" else 0.0)
                continue
            weight = own.get("weight")
            fan_in = None
            if weight is not None and weight.dim() >= 2:
                fan_in = weight.shape[1] * math.prod(weight.shape[2:])
            for param in own.values():
                if param.dim() >= 2:
                    fin = param.shape[1] * math.prod(param.shape[2:])
                    # Kaiming-uniform with a=sqrt(5), PyTorch's default for Linear.
                    draw_uniform(param, math.sqrt(6.0 / ((1 + 5.0) * fin)))
                elif fan_in:
                    draw_uniform(param, 1.0 / math.sqrt(fan_in))
                else:
                    param.zero_()
    return module


@dataclass
class TrainResult:
    """What :func:`train_loop` returns."""

    n_iter: int
    loss_curve: list = field(default_factory=list)
    converged: bool = False


def _batch_bounds(n_samples, batch_size):
    """Minibatch boundaries; a trailing batch of one sample joins the previous one.

    Layers such as BatchNorm cannot train on a single sample, so no batch has
    size one unless the whole data set does.
    """
    bounds = list(range(0, n_samples, batch_size)) + [n_samples]
    if len(bounds) > 2 and bounds[-1] - bounds[-2] == 1:
        del bounds[-2]
    return list(zip(bounds[:-1], bounds[1:]))


def train_loop(
    batch_loss,
    n_samples,
    optimizer,
    *,
    batch_size,
    max_iter,
    tol=1e-4,
    n_iter_no_change=10,
    generator=None,
    device="cpu",
    verbose=0,
    shuffle=True,
    best_loss=None,
    estimator_name="estimator",
):
    """Run minibatch training epochs until the loss settles or ``max_iter``.

    The one training loop of the package. An epoch is one pass over the samples
    in minibatches (shuffled with ``generator``). Training stops when the epoch
    loss has not improved by at least ``tol`` for ``n_iter_no_change``
    consecutive epochs (scikit-learn's MLP rule); reaching ``max_iter`` first
    raises a ``ConvergenceWarning``.

    Parameters
    ----------
    batch_loss : callable
        ``batch_loss(idx) -> scalar tensor``: the mean loss of the samples whose
        indices are in the 1-D long tensor ``idx`` (on ``device``). It computes
        the forward pass; the loop calls ``backward`` and ``optimizer.step``.
    n_samples : int
    optimizer : torch.optim.Optimizer
    batch_size : int
    max_iter : int
        Maximum number of epochs.
    tol : float, default=1e-4
    n_iter_no_change : int, default=10
    generator : torch.Generator, default=None
        CPU generator for the shuffling; None means no randomness is drawn
        (``shuffle`` must then be False).
    device : torch.device or str, default="cpu"
    verbose : int, default=0
        ``>= 1`` shows a tqdm progress bar with the current loss.
    shuffle : bool, default=True
    best_loss : float, default=None
        Best loss of previous training (``warm_start``), so that a continued fit
        counts improvement from where it stopped.
    estimator_name : str, default="estimator"
        Name used in warnings and errors.

    Returns
    -------
    TrainResult
        Number of epochs run, the loss per epoch and whether the stopping rule
        was met.
    """
    torch = import_torch()
    from tqdm.auto import tqdm

    if shuffle and generator is None:
        raise ValueError("train_loop needs a generator to shuffle the samples.")
    bounds = _batch_bounds(n_samples, batch_size)
    best = math.inf if best_loss is None else float(best_loss)
    no_improvement = 0
    result = TrainResult(n_iter=0)
    order = torch.arange(n_samples, device=device)
    progress = tqdm(
        range(max_iter), desc=estimator_name, disable=verbose < 1, leave=False
    )
    for _ in progress:
        if shuffle:
            order = torch.randperm(n_samples, generator=generator).to(device)
        total = torch.zeros((), device=device)
        for start, stop in bounds:
            idx = order[start:stop]
            optimizer.zero_grad(set_to_none=True)
            loss = batch_loss(idx)
            loss.backward()
            optimizer.step()
            total = total + loss.detach() * (stop - start)
        epoch_loss = float(total) / n_samples
        if not math.isfinite(epoch_loss):
            raise ValueError(
                f"{estimator_name}: the training loss became {epoch_loss} at epoch "
                f"{result.n_iter + 1}. Scale the features or lower the learning rate."
            )
        result.n_iter += 1
        result.loss_curve.append(epoch_loss)
        progress.set_postfix(loss=f"{epoch_loss:.4g}")
        if epoch_loss > best - tol:
            no_improvement += 1
        else:
            no_improvement = 0
        best = min(best, epoch_loss)
        if no_improvement >= n_iter_no_change:
            result.converged = True
            break
    progress.close()
    if not result.converged:
        warnings.warn(
            f"{estimator_name}: stopped at max_iter={max_iter} epochs before the loss "
            f"settled (tol={tol}, n_iter_no_change={n_iter_no_change}). "
            "Increase max_iter or tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return result


class ModuleState:
    """Pickled form of a fitted ``torch.nn.Module``: its CPU state dict, as bytes.

    Unpickling it needs no GPU and runs no arbitrary code: the bytes are read
    with ``torch.load(..., weights_only=True)`` into a module that the estimator
    rebuilds from its own fitted attributes.
    """

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data

    def __getstate__(self):
        return {"data": self.data}

    def __setstate__(self, state):
        self.data = state["data"]


def module_to_bytes(module):
    """Serialise ``module``'s parameters and buffers, moved to the CPU."""
    torch = import_torch()
    cpu_state = {k: v.detach().cpu() for k, v in module.state_dict().items()}
    buffer = io.BytesIO()
    torch.save(cpu_state, buffer)
    return buffer.getvalue()


def module_from_bytes(module, data):
    """Load bytes from :func:`module_to_bytes` into ``module`` (weights only)."""
    torch = import_torch()
    state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    module.load_state_dict(state)
    return module.eval()
