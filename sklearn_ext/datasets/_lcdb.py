"""Loader of the LCDB learning curves shipped with the package."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_lcdb_curves"]

_ARRAYS = (
    "error",
    "test_error",
    "fit_time",
    "final_size",
    "final_error",
    "final_test_error",
    "final_fit_time",
)


def load_lcdb_curves():
    """Load learning curves of 20 classifiers on 248 data sets (LCDB 1.0).

    The meta-dataset of model-selection methods that learn from past
    searches: for each OpenML data set and scikit-learn learner, the
    validation error, test error and training time at geometric training
    sizes, and at the full training size. The data ship inside the package
    (0.7 MB); nothing is downloaded.

    =================  ===========================
    Data sets          248 (OpenML ids)
    Learners           20 scikit-learn classifiers
    Anchors            35 sizes, 16 to 2,097,152
    Values             averages over 125 seed pairs
    =================  ===========================

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``openmlid`` (248,), ``learners`` (20 names), ``anchors`` (35
        training sizes); ``error``, ``test_error`` and ``fit_time``, float64
        arrays of shape (248, 20, 35), NaN where the database has no run;
        ``final_size``, ``final_error``, ``final_test_error`` and
        ``final_fit_time`` of shape (248, 20), at the largest training size
        of each pair; ``DESCR`` (source, citation, licence).

    References
    ----------
    .. [1] F. Mohr, T. J. Viering, M. Loog and J. N. van Rijn, "LCDB 1.0: An
       Extensive Learning Curves Database for Classification Tasks", ECML
       PKDD 2022.

    Examples
    --------
    >>> from sklearn_ext.datasets import load_lcdb_curves
    >>> lcdb = load_lcdb_curves()
    >>> lcdb.error.shape, lcdb.anchors[:4].tolist()
    ((248, 20, 35), [16, 23, 32, 45])
    """
    files = resources.files("sklearn_ext.datasets") / "data"
    with (files / "lcdb_curves.npz").open("rb") as f, np.load(f) as archive:
        out = {k: archive[k].astype(np.float64) for k in _ARRAYS}
        out["openmlid"] = archive["openmlid"].astype(np.int64)
        out["learners"] = [str(v) for v in archive["learners"]]
        out["anchors"] = archive["anchors"].astype(np.int64)
    return Bunch(**out, DESCR=(files / "lcdb_curves.rst").read_text("utf-8"))
