"""Loader of the UCI Multiple Features data set shipped with the package."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_mfeat"]

MFEAT_VIEWS = ("fou", "fac", "kar", "pix", "zer", "mor")


def load_mfeat(*, return_X_y=False):
    """Load the UCI Multiple Features handwritten digits (6 views, 10 classes).

    2,000 samples, 200 per digit, described by six feature sets (views) with 76,
    216, 64, 240, 47 and 6 columns, concatenated in that order into 649 columns.
    The data ship inside the package; nothing is downloaded.

    =================  =====
    Classes               10
    Samples per class    200
    Samples total       2000
    Views                  6
    Features             649
    =================  =====

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (ndarray of shape (2000, 649), float64), ``target`` (ndarray of
        shape (2000,), int), ``views`` (list of the six view sizes, ready for a
        ``views`` parameter), ``view_names``, ``feature_names`` (``"fou_0"``, ...),
        ``target_names`` and ``DESCR`` (description, source, citation, licence).
    (data, target) : tuple if ``return_X_y`` is True
        The ``data`` and ``target`` arrays described above.

    References
    ----------
    .. [1] R. P. W. Duin, "Multiple Features", UCI Machine Learning Repository,
       1998, https://doi.org/10.24432/C5HC70 (CC BY 4.0).
    .. [2] M. van Breukelen, R. P. W. Duin, D. M. J. Tax and J. E. den Hartog,
       "Handwritten digit recognition by combined classifiers", Kybernetika
       34(4):381-386, 1998.

    Examples
    --------
    >>> from sklearn_ext.datasets import load_mfeat
    >>> mfeat = load_mfeat()
    >>> mfeat.data.shape, mfeat.views
    ((2000, 649), [76, 216, 64, 240, 47, 6])
    """
    files = resources.files("sklearn_ext.datasets") / "data"
    with (files / "mfeat.npz").open("rb") as f, np.load(f) as archive:
        blocks = [archive[name].astype(np.float64) for name in MFEAT_VIEWS]
        target = archive["target"].astype(np.int64)
    data = np.hstack(blocks)
    if return_X_y:
        return data, target
    sizes = [b.shape[1] for b in blocks]
    return Bunch(
        data=data,
        target=target,
        views=sizes,
        view_names=list(MFEAT_VIEWS),
        feature_names=[
            f"{n}_{j}" for n, s in zip(MFEAT_VIEWS, sizes) for j in range(s)
        ],
        target_names=[str(d) for d in range(10)],
        DESCR=(files / "mfeat.rst").read_text(encoding="utf-8"),
    )
