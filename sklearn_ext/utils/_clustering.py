"""Clustering accuracy under the best matching of labels; the demos' baseline."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import confusion_matrix
from sklearn.utils import column_or_1d

__all__ = ["clustering_accuracy"]


def clustering_accuracy(labels_true, labels_pred):
    """Accuracy of cluster labels after the best matching to the true classes.

    Clusters are matched one-to-one to classes by the Hungarian algorithm on the
    contingency table (unmatched clusters, when there are more clusters than
    classes, count as errors). This is the ACC of the clustering literature.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        True class labels.
    labels_pred : array-like of shape (n_samples,)
        Cluster labels.

    Returns
    -------
    accuracy : float
        Fraction of samples whose matched cluster is their class, in [0, 1].

    Examples
    --------
    >>> from sklearn_ext.utils import clustering_accuracy
    >>> clustering_accuracy([0, 0, 1, 1, 2], [1, 1, 0, 0, 0])
    0.8
    """
    labels_true = column_or_1d(labels_true)
    labels_pred = column_or_1d(labels_pred)
    if labels_true.shape != labels_pred.shape:
        raise ValueError(
            "labels_true and labels_pred must have the same length; got "
            f"{labels_true.shape[0]} and {labels_pred.shape[0]}."
        )
    if labels_true.size == 0:
        raise ValueError("clustering_accuracy needs at least one sample.")
    _, true_idx = np.unique(labels_true, return_inverse=True)
    _, pred_idx = np.unique(labels_pred, return_inverse=True)
    table = confusion_matrix(true_idx, pred_idx)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / labels_true.size)


def spectral_baseline_labels(X, n_clusters, random_state=0):
    """Labels of the demos' strongest plain baseline for multi-view data.

    Spectral clustering of a 15-nearest-neighbour graph of the standardised,
    mean-imputed columns (QR label assignment), as the multi-view clustering
    demos run it beside their model.
    """
    from sklearn.cluster import SpectralClustering
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = make_pipeline(
        StandardScaler(),
        SimpleImputer(),
        SpectralClustering(
            n_clusters,
            affinity="nearest_neighbors",
            n_neighbors=15,
            assign_labels="cluster_qr",
            random_state=random_state,
        ),
    ).fit(X)
    return pipe[-1].labels_
