"""Loader of the MULAN bibtex multi-label text data set shipped with the package."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from importlib import resources

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

__all__ = ["load_bibtex"]

_SUBSETS = ("train", "test", "all")


def load_bibtex(*, subset="train", return_X_y=False):
    """Load the bibtex data set: BibSonomy entries tagged with 159 tags.

    7,395 BibTeX entries from the social bookmarking site BibSonomy, each
    described by the presence or absence of 1,836 words and tagged by its user
    with one or more of 159 tags (2.40 per entry on average). Tag frequencies
    are long-tailed: in the training set the most frequent tag has 691
    entries, the median tag 54 and the rarest 28. The training/test split is
    the one the data set is distributed with (MULAN). The data ship inside the
    package; nothing is downloaded.

    ====================  ========================
    Labels (tags)         159
    Features (words)      1,836, binary
    Samples               4,880 train, 2,515 test
    Labels per sample     2.40 on average, 1 to 28
    Positives per label   28 to 691 in train
    ====================  ========================

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Which part to load: the 4,880 training entries, the 2,515 test entries,
        or all 7,395 (the training entries first, then the test entries).
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes below.

        data : scipy.sparse.csr_matrix of shape (n_samples, 1836), float64
            Word indicators: 1.0 where the word occurs in the entry.
        target : ndarray of shape (n_samples, 159), int64
            Binary label indicator matrix: ``target[i, j]`` is 1 if entry ``i``
            has tag ``j``. Every entry has at least one tag.
        feature_names : ndarray of shape (1836,), str
            ``"word_0000"`` to ``"word_1835"``: the source carries no
            vocabulary, only the column order.
        target_names : ndarray of shape (159,), str
            ``"tag_000"`` to ``"tag_158"``: the source carries no tag names,
            only the column order.
        DESCR : str
            Description of the data, their source, citation and licence.

    (data, target) : tuple if ``return_X_y`` is True
        The ``data`` and ``target`` arrays described above.

    Notes
    -----
    The arrays were converted, unaltered, from the files that the
    scikit-multilearn 0.0.1 source distribution on PyPI (BSD licence) carries;
    scikit-multilearn is not needed. ``tools/convert_bibtex.py`` in the
    repository redoes the conversion. The data set states no licence of its
    own; cite the paper below. ``DESCR`` gives the details.

    References
    ----------
    .. [1] I. Katakis, G. Tsoumakas and I. Vlahavas, "Multilabel Text
       Classification for Automated Tag Suggestion", Proceedings of the
       ECML/PKDD 2008 Discovery Challenge, Antwerp, Belgium, 2008.
    .. [2] G. Tsoumakas, E. Spyromitros-Xioufis, J. Vilcek and I. Vlahavas,
       "MULAN: A Java Library for Multi-Label Learning", Journal of Machine
       Learning Research 12:2411-2414, 2011.

    Examples
    --------
    >>> from sklearn_ext.datasets import load_bibtex
    >>> bibtex = load_bibtex(subset="train")
    >>> bibtex.data.shape, bibtex.target.shape
    ((4880, 1836), (4880, 159))
    >>> X_test, Y_test = load_bibtex(subset="test", return_X_y=True)
    >>> X_test.shape, int(Y_test.sum(axis=0).min()), int(Y_test.sum(axis=0).max())
    ((2515, 1836), 11, 351)
    """
    if not isinstance(subset, str) or subset not in _SUBSETS:
        raise ValueError(
            f"subset must be one of 'train', 'test' or 'all'; got {subset!r}."
        )
    files = resources.files("sklearn_ext.datasets") / "data"
    with (files / "bibtex.npz").open("rb") as f, np.load(f) as archive:
        arrays = {key: archive[key] for key in archive.files}
    n_train = int(arrays["n_train"])
    n_features = int(arrays["n_features"])
    n_labels = int(arrays["n_labels"])
    matrices = []
    for key, n_columns in (("data", n_features), ("target", n_labels)):
        indices = arrays[f"{key}_indices"].astype(np.int32)
        indptr = arrays[f"{key}_indptr"]
        matrices.append(
            sp.csr_matrix(
                (np.ones(indices.shape[0]), indices, indptr),
                shape=(indptr.shape[0] - 1, n_columns),
            )
        )
    rows = {
        "train": slice(0, n_train),
        "test": slice(n_train, None),
        "all": slice(None),
    }[subset]
    data, target = (M[rows] for M in matrices)
    target = target.toarray().astype(np.int64)
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        feature_names=np.array([f"word_{j:04d}" for j in range(n_features)]),
        target_names=np.array([f"tag_{j:03d}" for j in range(n_labels)]),
        DESCR=(files / "bibtex.rst").read_text(encoding="utf-8"),
    )
