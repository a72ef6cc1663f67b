"""Shared parameter docstrings, filled into estimators' docstrings in one place.

A docstring names a shared entry with a line holding only ``%(name)s`` at the
indentation of a parameter; :func:`fill_doc` replaces that line with the entry,
re-indented. The entries are numpydoc parameter blocks written once here, so a
change of wording (or of a default's meaning) reaches every estimator.
The markers are replaced literally (not with ``%``-formatting), so a docstring
may contain ``%`` and braces freely.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import re
import textwrap

__all__ = ["SHARED_PARAMS", "fill_doc"]

SHARED_PARAMS = {
    "batch_size": """
batch_size : int or "auto", default="auto"
    Samples per minibatch; "auto" uses ``min(200, n_samples)``. A trailing
    batch of a single sample joins the previous one.
""",
    "learning_rate_init": """
learning_rate_init : float, default=1e-3
    Adam's step size.
""",
    "max_iter": """
max_iter : int, default=200
    Maximum number of epochs. Reaching it before the loss settles raises a
    :class:`~sklearn.exceptions.ConvergenceWarning`.
""",
    "tol": """
tol : float, default=1e-4
    Training stops when the epoch loss has not improved by at least ``tol``
    for ``n_iter_no_change`` consecutive epochs (scikit-learn's MLP rule).
""",
    "n_iter_no_change": """
n_iter_no_change : int, default=10
    Epochs without an improvement of ``tol`` before training stops.
""",
    "warm_start": """
warm_start : bool, default=False
    Continue the fitted network on the next ``fit`` instead of starting anew;
    ``n_iter_`` and ``loss_curve_`` then extend. A change of what fixes the
    network's shape (features, layer sizes, ...) raises a ValueError.
""",
    "device": """
device : str or torch.device, default="auto"
    Where torch computes: "auto" (CUDA when available, else the CPU), "cpu",
    "cuda", "cuda:N", "mps" or a ``torch.device``. Fitted weights are kept on
    the CPU, so a model fitted on a GPU pickles and predicts on a machine
    without one. On the CPU, each call computes on one torch thread, whatever
    the machine's load, so a busy and an idle machine fit the same floats
    (see the user guide on threads).
""",
    "random_state": """
random_state : int, RandomState instance or None, default=None
    Seeds the initialisation and the minibatch order (through a
    ``torch.Generator``; no global seed is set). An int gives the same result
    on the same data and hardware.
""",
    "verbose": """
verbose : int, default=0
    0 is silent; 1 or more shows a labelled tqdm progress bar for each phase.
""",
    "sample_weight": """
sample_weight : array-like of shape (n_samples,), default=None
    Weights of the samples in the loss; None weighs them equally. Integer
    weights act as repeated rows.
""",
}

_MARKER = re.compile(r"^(?P<indent>[ \t]*)%\((?P<name>\w+)\)s[ \t]*$", re.MULTILINE)


def fill_doc(obj):
    """Replace each ``%(name)s`` line of ``obj.__doc__`` by ``SHARED_PARAMS[name]``.

    Parameters
    ----------
    obj : class or function

    Returns
    -------
    obj
        The same object, its docstring filled.

    Raises
    ------
    KeyError
        If a marker names no shared entry.

    Examples
    --------
    >>> from sklearn_ext.utils._docstrings import fill_doc
    >>> @fill_doc
    ... def f(random_state=None):
    ...     '''Do something.
    ...
    ...     Parameters
    ...     ----------
    ...     %(random_state)s
    ...     '''
    >>> "RandomState instance" in f.__doc__
    True
    """
    if obj.__doc__ is None:
        return obj

    def replace(match):
        name = match.group("name")
        if name not in SHARED_PARAMS:
            raise KeyError(
                f"{obj.__qualname__}'s docstring names %({name})s, which is not "
                f"among the shared parameters {sorted(SHARED_PARAMS)}."
            )
        text = SHARED_PARAMS[name].strip("\n")
        return textwrap.indent(text, match.group("indent"))

    obj.__doc__ = _MARKER.sub(replace, obj.__doc__)
    return obj
