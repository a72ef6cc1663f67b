"""Baselines and data settings of bench_fedmvc: federated and central k-means.

Every client standardises its own columns (NaN-aware) and fills a missing
value with the column mean, i.e. 0 after standardisation; a view a client
lacks entirely is 0 there. The views are weighted equally (each standardised
block divided by the square root of its width), as k-means on mfeat's
concatenation is otherwise dominated by its widest views.
"""

import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.cluster import KMeans

from sklearn_ext.cluster._fedmvc import dirichlet_partition, iid_partition


def standardise(X, views):
    """Columns standardised over their observed values, NaN -> 0, views alike."""
    with warnings.catch_warnings():
        # A view a client lacks is all-NaN there: its columns get mean 0, scale 1.
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(X, axis=0)
        std = np.nanstd(X, axis=0)
    mean = np.where(np.isnan(mean), 0.0, mean)
    std = np.where(np.isnan(std) | (std < 1e-12), 1.0, std)
    Z = np.nan_to_num((X - mean) / std)
    start = 0
    for size in views:
        Z[:, start : start + size] /= np.sqrt(size)
        start += size
    return Z


def central_kmeans(X, views, k, seed):
    """k-means (n_init=10) on all data in one place."""
    return KMeans(k, n_init=10, random_state=seed).fit_predict(standardise(X, views))


def _local(X, views, client, k, seed):
    fits = []
    for i in np.unique(client):
        Z = standardise(X[client == i], views)
        fits.append((i, Z, KMeans(k, n_init=10, random_state=seed + i).fit(Z)))
    return fits


def _assign(X, client, fits, centres):
    labels = np.empty(X.shape[0], dtype=np.int64)
    for i, Z, _ in fits:
        d2 = ((Z[:, None, :] - centres[None]) ** 2).sum(2)
        labels[client == i] = d2.argmin(1)
    return labels


def unaligned_federated_kmeans(X, views, client, k, seed):
    """Per-client k-means, centroids averaged by index (the failure case)."""
    fits = _local(X, views, client, k, seed)
    weights = [np.bincount(f.labels_, minlength=k) for _, _, f in fits]
    total = np.maximum(np.sum(weights, axis=0), 1)[:, None]
    centres = sum(
        w[:, None] * f.cluster_centers_ for w, (_, _, f) in zip(weights, fits)
    )
    return _assign(X, client, fits, centres / total)


def aligned_federated_kmeans(X, views, client, k, seed):
    """Per-client k-means, centroids Hungarian-matched to the largest client's."""
    fits = _local(X, views, client, k, seed)
    sizes = [np.sum(client == i) for i, _, _ in fits]
    ref = fits[int(np.argmax(sizes))][2].cluster_centers_
    centres = np.zeros_like(ref)
    total = np.zeros(k)
    for _, _, f in fits:
        cost = ((f.cluster_centers_[:, None] - ref[None]) ** 2).sum(2)
        rows, cols = linear_sum_assignment(cost)
        w = np.bincount(f.labels_, minlength=k)
        centres[cols] += w[rows, None] * f.cluster_centers_[rows]
        total[cols] += w[rows]
    return _assign(X, client, fits, centres / np.maximum(total, 1)[:, None])


def partition(n, n_clients, setting, y_latent, rng, alpha=0.5, min_size=10):
    """Client of every sample: "iid" or "dirichlet" over latent groups."""
    if setting != "dirichlet":
        return iid_partition(n, n_clients, rng)
    client = dirichlet_partition(y_latent, n_clients, alpha, rng, min_size)
    if client is None:
        raise RuntimeError("no Dirichlet partition with clients of min_size")
    return client


def drop_client_views(X, views, client, rng, share=0.5, keep=(2, 3)):
    """Half the clients keep only 2-3 of the views (the others all-NaN)."""
    X = X.copy()
    bounds = np.cumsum([0, *views])
    clients = np.unique(client)
    lacking = rng.choice(clients, size=int(round(share * len(clients))), replace=False)
    kept = {}
    for i in lacking:
        n_keep = rng.randint(keep[0], keep[1] + 1)
        keep_views = rng.choice(len(views), size=n_keep, replace=False)
        kept[int(i)] = sorted(int(v) for v in keep_views)
        for v in range(len(views)):
            if v not in keep_views:
                X[np.ix_(client == i, np.arange(bounds[v], bounds[v + 1]))] = np.nan
    return X, kept
