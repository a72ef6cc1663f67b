"""Warnings that point at the user's line, and the labelled progress bar.

Every warning that sklearn_ext raises goes through :func:`warn`, which sets the
``stacklevel`` to the first frame outside the libraries that sit between the
user's code and ours (sklearn_ext, scikit-learn, joblib, threadpoolctl), so that
the warning names the line of the user's script whatever the call depth. Every
long loop shows its progress through :func:`progress`: a tqdm bar labelled with
the estimator and the phase, shown when ``verbose >= 1``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import os
import sys
import warnings

import joblib
import sklearn

import sklearn_ext

__all__ = ["progress", "warn"]


def _package_dir(module):
    return os.path.dirname(os.path.abspath(module.__file__)) + os.sep


# Frames in these directories are "ours": the warning skips them.
_INTERNAL_DIRS = (
    _package_dir(sklearn_ext),
    _package_dir(sklearn),
    _package_dir(joblib),
)


def _user_stacklevel():
    """Stack level of the first frame outside the internal packages.

    Counted as ``warnings.warn`` counts from the caller of :func:`warn`; when the
    whole stack is internal (e.g. inside a joblib worker), the outermost frame.
    """
    frame = sys._getframe(2)  # the caller of warn()
    level = 2
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_INTERNAL_DIRS) and "<frozen" not in filename:
            return level
        if frame.f_back is None:
            return level
        frame = frame.f_back
        level += 1
    return level  # pragma: no cover - the loop always returns


def warn(message, category=UserWarning):
    """Issue ``message`` as a warning attributed to the user's line of code.

    Parameters
    ----------
    message : str
    category : type of Warning, default=UserWarning
    """
    warnings.warn(message, category, stacklevel=_user_stacklevel())


def progress(iterable=None, *, total=None, desc, verbose=0, leave=False):
    """A tqdm progress bar labelled ``desc``, shown only when ``verbose >= 1``.

    Parameters
    ----------
    iterable : iterable, default=None
    total : int, default=None
    desc : str
        The label, ``"<Estimator>: <phase>"`` by convention.
    verbose : int, default=0
    leave : bool, default=False

    Returns
    -------
    tqdm.tqdm
        Use it as an iterable or as a context manager (``bar.update(k)``).
    """
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, disable=verbose < 1, leave=leave)
