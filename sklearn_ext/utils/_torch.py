"""The private PyTorch backend shared by every torch estimator.

One device helper, one seeding helper (and its child seeds), one numpy/tensor
converter, one batch iterator, one minibatch training loop, one full-batch
L-BFGS helper, one scoped CPU-thread policy and one portable pickling format.
torch is imported lazily, inside the functions, so that importing this module
stays cheap.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import contextvars
import io
import math
import numbers
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_ext.utils._messages import progress, warn
from sklearn_ext.utils._sklearn_compat import StrOptions

__all__ = [
    "DeviceConstraint",
    "ModuleState",
    "TrainResult",
    "batch_bounds",
    "child_seeds",
    "conjugate_gradient",
    "cpu_threads",
    "cpu_thread_limit",
    "import_torch",
    "init_parameters",
    "iter_batches",
    "lbfgs_minimize",
    "make_generator",
    "module_from_bytes",
    "module_to_bytes",
    "resolve_device",
    "restore_training_state",
    "to_numpy",
    "to_tensor",
    "train_loop",
    "training_state_to_bytes",
    "weighted_mean",
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


def resolve_device(device, *, param="device", strict=True, size=None, min_size=None):
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
    size, min_size : float, default=None
        The size of the work (the estimator's measure, e.g. flops per step) and
        the smallest size worth a GPU: with ``device="auto"`` a problem smaller
        than ``min_size`` runs on the CPU, where copies to the device and kernel
        launches would cost more than they save. An explicit device is always
        honoured.

    Returns
    -------
    torch.device
    """
    torch = import_torch()
    if _is_torch_device(device):
        dev = device
    elif isinstance(device, str) and _DEVICE_PATTERN.match(device):
        if device == "auto":
            small = size is not None and min_size is not None and size < min_size
            use_cuda = torch.cuda.is_available() and not small
            return torch.device("cuda" if use_cuda else "cpu")
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
    warn(f"{param}={str(device)!r} was requested, but {problem}; using the CPU.")
    return torch.device("cpu")


def child_seeds(random_state, n=None):
    """Draw independent integer seeds from ``random_state``.

    The package's one way to derive seeds for sub-steps (a torch generator, a
    k-means start, a member of a population): ``check_random_state`` then
    ``randint(2**31 - 1)``, so an integer ``random_state`` gives the same seeds
    on every call and a ``RandomState`` instance advances.

    Parameters
    ----------
    random_state : int, RandomState instance or None
    n : int, default=None
        Number of seeds; None returns one int.

    Returns
    -------
    int or list of int
    """
    rng = check_random_state(random_state)
    if n is None:
        return int(rng.randint(np.iinfo(np.int32).max))
    return [int(s) for s in rng.randint(np.iinfo(np.int32).max, size=n)]


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
    seed = child_seeds(random_state)
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
    validation_curve: list = field(default_factory=list)


def batch_bounds(n_samples, batch_size):
    """Minibatch boundaries ``[(start, stop), ...]`` covering ``range(n_samples)``.

    A trailing batch of one sample joins the previous one: layers such as
    BatchNorm cannot train on a single sample, so no batch has size one unless
    the whole data set does. ``len(batch_bounds(n, b))`` is the number of
    optimiser steps per epoch of :func:`train_loop`.

    Parameters
    ----------
    n_samples : int
    batch_size : int

    Returns
    -------
    list of (int, int)
    """
    bounds = list(range(0, n_samples, batch_size)) + [n_samples]
    if len(bounds) > 2 and bounds[-1] - bounds[-2] == 1:
        del bounds[-2]
    return list(zip(bounds[:-1], bounds[1:]))


def iter_batches(X, batch_size):
    """Yield ``(start, stop, dense_rows)`` over the rows of ``X`` in order.

    ``X`` may be a numpy array or a scipy sparse matrix; a sparse batch is
    densified alone, so memory stays at one dense batch. At least one (possibly
    empty) batch is yielded, so that a caller concatenating the outputs gets an
    array of the right width for zero rows.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    batch_size : int

    Yields
    ------
    start, stop : int
    rows : ndarray of shape (stop - start, n_features)
    """
    import scipy.sparse as sp

    n = X.shape[0]
    for start in range(0, max(n, 1), batch_size):
        stop = min(start + batch_size, n)
        chunk = X[start:stop]
        yield start, stop, chunk.toarray() if sp.issparse(chunk) else chunk


def weighted_mean(losses, weights=None):
    """Mean of per-sample ``losses`` under ``sample_weight`` scaled to mean one.

    The package's one rule for weights in a minibatch loss: with ``weights``
    the per-sample weights of the batch, divided beforehand by the mean weight
    of the whole training set (see ``TorchMixin._sample_weight``), the batch
    loss is ``sum(w * loss) / len(batch)``. Its expectation over batches is the
    weighted objective, and integer weights act as repeated rows.

    Parameters
    ----------
    losses : tensor of shape (batch,) or (batch, k)
        Per-sample losses; with k columns (e.g. one loss per task), each
        column is averaged alike, in one kernel.
    weights : tensor of shape (batch,) or None

    Returns
    -------
    tensor of shape () or (k,)
    """
    if weights is None:
        return losses.mean(0)
    return weights @ losses / losses.shape[0]


def dataset_mean(per_sample, n_samples, batch_size, weights=None, device="cpu"):
    """The weighted mean of a per-sample loss over a whole data set, by batches.

    For a loss evaluated outside training (a validation loss, the initial
    loss): ``per_sample(idx)`` returns the losses of the rows ``idx`` (a long
    tensor on ``device``), of shape (batch,) or (batch, k); it runs under
    ``torch.no_grad`` over :func:`batch_bounds`.

    Parameters
    ----------
    per_sample : callable
    n_samples, batch_size : int
    weights : tensor of shape (n_samples,), default=None
        Sample weights (any scale); None weighs the rows equally.
    device : torch.device or str, default="cpu"

    Returns
    -------
    tensor of shape () or (k,)
    """
    torch = import_torch()
    total, mass = 0.0, 0.0
    with torch.no_grad():
        for start, stop in batch_bounds(n_samples, batch_size):
            idx = torch.arange(start, stop, device=device)
            losses = per_sample(idx)
            if weights is None:
                total = total + losses.sum(0)
                mass += stop - start
            else:
                total = total + weights[idx] @ losses
                mass += float(weights[idx].sum())
    return total / mass


def adam(params, lr, weight_decay=0.0):
    """The package's Adam: multi-tensor (``foreach``) updates on every device.

    torch uses the multi-tensor implementation by default only on CUDA; on the
    CPU its per-tensor loop is a large part of the step of a model made of
    many small networks (such as CorrelatedVariationalIMVC's twelve). The
    update is the same.

    Parameters
    ----------
    params : iterable of torch.Tensor
    lr : float
    weight_decay : float, default=0.0

    Returns
    -------
    torch.optim.Adam
    """
    torch = import_torch()
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, foreach=True)


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
    phase="training",
    max_iter_param="max_iter",
    warn_at_max_iter=True,
    validation_loss=None,
    max_grad_norm=None,
    poisson_rate=None,
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
        Name used in warnings, errors and the progress bar's label.
    phase : str, default="training"
        What this loop trains (e.g. ``"pretraining"``): labels the progress bar
        and the warnings.
    max_iter_param : str, default="max_iter"
        The estimator parameter that sets ``max_iter``, named by the
        ConvergenceWarning so that it tells the user what to change.
    warn_at_max_iter : bool, default=True
        Whether stopping at ``max_iter`` raises a ConvergenceWarning; False for
        a fixed budget of epochs.
    max_grad_norm : float, default=None
        Rescale each minibatch's gradient (over all parameters the optimiser
        holds) to at most this Euclidean norm before the step; None leaves
        gradients as they are.
    poisson_rate : float, default=None
        Draw every batch by Poisson sampling, as differentially private SGD
        assumes: each sample joins a step's batch with this probability, and
        an epoch is ``round(1 / poisson_rate)`` steps (``batch_size`` is then
        not used). ``batch_loss`` returns the batch's *sum* of per-sample
        losses (it may be given an empty batch); the reported epoch loss is
        that sum per expected sample. None: shuffled fixed-size batches.

    Returns
    -------
    TrainResult
        Number of epochs run, the loss per epoch and whether the stopping rule
        was met.
    """
    torch = import_torch()
    if shuffle and generator is None:
        raise ValueError("train_loop needs a generator to shuffle the samples.")
    bounds = batch_bounds(n_samples, batch_size)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    best = math.inf if best_loss is None else float(best_loss)
    no_improvement = 0
    result = TrainResult(n_iter=0)
    order = torch.arange(n_samples, device=device)
    bar = progress(range(max_iter), desc=f"{estimator_name}: {phase}", verbose=verbose)
    if poisson_rate is not None:
        if generator is None:
            raise ValueError("train_loop needs a generator for Poisson sampling.")
        steps = max(1, round(1.0 / poisson_rate))
    for _ in bar:
        total = torch.zeros((), device=device)
        if poisson_rate is not None:
            batches = (
                torch.nonzero(torch.rand(n_samples, generator=generator) < poisson_rate)
                .flatten()
                .to(device)
                for _ in range(steps)
            )
            weight, expected = 1.0, steps * poisson_rate * n_samples
        else:
            if shuffle:
                order = torch.randperm(n_samples, generator=generator).to(device)
            batches = (order[start:stop] for start, stop in bounds)
            weight, expected = None, n_samples
        for idx in batches:
            optimizer.zero_grad(set_to_none=True)
            loss = batch_loss(idx)
            loss.backward()
            if max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
            optimizer.step()
            total = total + loss.detach() * (len(idx) if weight is None else weight)
        epoch_loss = float(total) / expected
        if not math.isfinite(epoch_loss):
            raise ValueError(
                f"{estimator_name}: the {phase} loss became {epoch_loss} at epoch "
                f"{result.n_iter + 1}. Scale the features or lower the learning rate."
            )
        result.n_iter += 1
        result.loss_curve.append(epoch_loss)
        bar.set_postfix(loss=f"{epoch_loss:.4g}")
        watched = epoch_loss
        if validation_loss is not None:
            watched = float(validation_loss())
            result.validation_curve.append(watched)
        if watched > best - tol:
            no_improvement += 1
        else:
            no_improvement = 0
        best = min(best, watched)
        if no_improvement >= n_iter_no_change:
            result.converged = True
            break
    bar.close()
    if warn_at_max_iter and not result.converged:
        warn(
            f"{estimator_name}: {phase} stopped at {max_iter_param}={max_iter} "
            f"epochs before the loss settled (tol={tol}, n_iter_no_change="
            f"{n_iter_no_change}). Increase {max_iter_param} or tol.",
            ConvergenceWarning,
        )
    return result


def lbfgs_minimize(
    params,
    loss_fn,
    *,
    max_iter,
    tolerance_grad=1e-7,
    tolerance_change=1e-9,
    history_size=100,
):
    """Minimise ``loss_fn()`` over the tensors ``params`` with full-batch L-BFGS.

    The package's one full-batch optimiser: torch's L-BFGS with a strong-Wolfe
    line search, run for at most ``max_iter`` iterations from the current
    values of ``params`` (updated in place).

    Parameters
    ----------
    params : list of torch.Tensor
        Leaf tensors with ``requires_grad=True``.
    loss_fn : callable
        ``loss_fn() -> scalar tensor``, the whole objective; it is re-evaluated
        by the line search, so it must be a pure function of ``params``.
    max_iter : int
    tolerance_grad, tolerance_change : float
        torch's stopping rules on the gradient's largest entry and on the
        change of the loss or of the parameters.
    history_size : int, default=100

    Returns
    -------
    float
        The final loss.
    """
    torch = import_torch()
    optimizer = torch.optim.LBFGS(
        params,
        max_iter=max_iter,
        line_search_fn="strong_wolfe",
        tolerance_grad=tolerance_grad,
        tolerance_change=tolerance_change,
        history_size=history_size,
    )

    def closure():
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        return float(loss_fn())


# The policy's count, one unless the caller asks for more in a block
# (:func:`cpu_threads`); a context variable, so that nothing global changes.
_CPU_THREADS = contextvars.ContextVar("sklearn_ext_cpu_threads", default=1)


def _policy_threads():
    """The thread policy's count: one, or what :func:`cpu_threads` set; never
    the machine's load.

    A function, so that ``benchmarks/bench_backend.py`` can put the policies
    it compares in its place.
    """
    return _CPU_THREADS.get()


@contextmanager
def cpu_threads(n_threads):
    """Let the package's torch calls in a block use up to ``n_threads`` threads.

    The package's fits run torch on one CPU thread (see
    :func:`cpu_thread_limit`); on a machine of your own with a large model,
    ``with cpu_threads(8): model.fit(X)`` lets torch use up to 8 (never more
    than ``torch.get_num_threads()``). The count is still yours, never the
    machine's load: the same count gives the same floats on a busy and on an
    idle machine, while another count may change the last bits, since the
    number of threads changes the order of floating-point sums. The setting
    holds in this thread (and asyncio task) only; worker processes (joblib,
    dask) keep one thread.

    Parameters
    ----------
    n_threads : int
        At least 1.

    Yields
    ------
    None
        The block runs with the count set; the previous count is restored
        when it ends, also when it raises.

    Examples
    --------
    >>> from sklearn_ext.utils import cpu_threads
    >>> with cpu_threads(2):
    ...     pass  # fit large torch models here
    """
    if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral):
        raise TypeError(f"n_threads must be an integer, got {n_threads!r}.")
    if n_threads < 1:
        raise ValueError(f"n_threads must be at least 1, got {n_threads}.")
    token = _CPU_THREADS.set(int(n_threads))
    try:
        yield
    finally:
        _CPU_THREADS.reset(token)


@contextmanager
def cpu_thread_limit(n_threads=None):
    """Run a block with torch's CPU intra-op threads limited (one by default).

    The package's thread policy: inside the block torch uses
    ``min(torch.get_num_threads(), n_threads)`` threads, one unless
    ``n_threads`` says otherwise, and the previous setting is restored on
    exit. The count never depends on the load of the machine, for two reasons:

    - the number of threads changes the order of floating-point sums in
      torch's kernels (a layer norm's backward splits its rows among the
      threads, a small matrix product its sums), so a count that followed the
      load would make the same ``random_state`` give different floats on a
      busy and on an idle machine;
    - torch's OpenMP threads busy-wait at the end of every parallel region,
      so beside a busy process a second thread makes a training loop of many
      small operations several times slower, while on an idle machine it
      speeds the package's fits up only modestly (``benchmarks/bench_backend.py
      --part threads``). To use several cores, fit several models at once
      (``GridSearchCV(n_jobs=...)``, joblib, dask).

    So torch's share of a fit computes the same floats whatever the load and
    whatever torch's own setting (``OMP_NUM_THREADS``,
    ``torch.set_num_threads``, joblib's limits in its workers), which the
    limit only ever lowers.

    Parameters
    ----------
    n_threads : int, default=None
        None: the policy's count, one (or what :func:`cpu_threads` set).

    Yields
    ------
    int
        The number of threads in force inside the block.
    """
    torch = import_torch()
    before = torch.get_num_threads()
    wanted = _policy_threads() if n_threads is None else int(n_threads)
    inside = max(1, min(before, wanted))
    if inside != before:
        torch.set_num_threads(inside)
    try:
        yield inside
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


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


def training_state_to_bytes(optimizer, generator):
    """Serialise an optimiser's state and a generator's state, on the CPU.

    What a warm-started fit needs to continue exactly where the last one
    stopped: the optimiser's running statistics (momentum buffers, Adam moments
    and step counts) and the shuffling generator's position. Stored by
    ``TorchMixin._train`` under ``warm_start`` as a :class:`ModuleState`, read
    back by :func:`restore_training_state` with ``weights_only=True``.
    """
    torch = import_torch()

    def to_cpu(value):
        if torch.is_tensor(value):
            return value.detach().cpu().clone()
        if isinstance(value, dict):
            return {k: to_cpu(v) for k, v in value.items()}
        return value

    state = {
        "optimizer": to_cpu(optimizer.state_dict()),
        "generator": generator.get_state(),
    }
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def restore_training_state(optimizer, generator, data):
    """Continue ``optimizer`` and ``generator`` from :func:`training_state_to_bytes`.

    The optimiser's running statistics come back; its hyperparameters (``lr``,
    ``weight_decay``, betas, ... of every parameter group) stay those it was
    built with, i.e. the estimator's current ones, so that a hyperparameter
    changed between two warm-started fits acts on the continued state.
    """
    torch = import_torch()
    state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    current = [
        {k: v for k, v in group.items() if k != "params"}
        for group in optimizer.param_groups
    ]
    try:
        optimizer.load_state_dict(state["optimizer"])
    except ValueError as exc:
        raise ValueError(
            "warm_start=True cannot continue the optimiser of the previous fit: "
            f"its parameter groups changed ({exc}). Set warm_start=False to fit "
            "anew."
        ) from None
    for group, hyper in zip(optimizer.param_groups, current):
        group.update(hyper)
    generator.set_state(state["generator"])


def conjugate_gradient(matvec, rhs, *, max_iter, rtol=1e-10):
    """Solve ``A x = rhs`` for a symmetric positive definite operator ``A``.

    ``matvec`` and ``rhs`` work on tuples of tensors (the blocks of one
    vector), so that a parameter set of several tensors is one unknown. The
    iterations stop after ``max_iter``, when the residual's squared norm falls
    below ``rtol`` times the right-hand side's, or when the operator meets a
    direction of non-positive curvature.

    Parameters
    ----------
    matvec : callable
        ``matvec(v) -> A v``, tuples of tensors shaped like ``rhs``.
    rhs : tuple of torch.Tensor
    max_iter : int
    rtol : float, default=1e-10

    Returns
    -------
    tuple of torch.Tensor
        The approximate solution, starting from zero.
    """

    def dot(u, v):
        return float(sum((a * b).sum() for a, b in zip(u, v)))

    x = tuple(b.new_zeros(b.shape) for b in rhs)
    r, d = rhs, rhs
    rr = target = dot(r, r)
    for _ in range(max_iter):
        if rr <= rtol * target or rr == 0.0:
            break
        Ad = matvec(d)
        curvature = dot(d, Ad)
        if curvature <= 0:
            break
        step = rr / curvature
        x = tuple(xi + step * di for xi, di in zip(x, d))
        r = tuple(ri - step * ai for ri, ai in zip(r, Ad))
        rr_new = dot(r, r)
        d = tuple(ri + (rr_new / rr) * di for ri, di in zip(r, d))
        rr = rr_new
    return x
