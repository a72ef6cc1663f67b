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


# --- full-strength peers (issue 56) ------------------------------------------------


def pooled_standardise(X, views, client):
    """Columns standardised by the pooled mean and spread of all clients.

    What a federation computes from each client's column counts, sums and
    sums of squares (one exchange, as the method's own set-up rounds): the
    same affine map at every client, so that a class sits at the same place
    at every client however skewed the clients are. NaN -> 0, views alike.
    """
    del client  # the pooled statistics are those of all rows together
    return standardise(X, views)


def label_shard_partition(y, n_clients, rng, shards_per_client=2):
    """Client of every sample: McMahan-style label shards.

    The samples, sorted by label, are cut into ``shards_per_client *
    n_clients`` equal shards and every client gets ``shards_per_client`` of
    them at random: a client holds only a few classes.
    """
    n_shards = shards_per_client * n_clients
    order = np.lexsort((rng.rand(len(y)), y))
    shards = np.array_split(order, n_shards)
    owner = rng.permutation(n_shards) % n_clients
    client = np.empty(len(y), dtype=np.int64)
    for shard, i in zip(shards, owner):
        client[shard] = i
    return client


def _lloyd_rounds(Z, client, centres, rounds):
    """Federated Lloyd: clients send per-centre counts and sums, server averages."""
    k = centres.shape[0]
    for _ in range(rounds):
        counts, sums = np.zeros(k), np.zeros_like(centres)
        for i in np.unique(client):
            Zi = Z[client == i]
            lab = ((Zi[:, None, :] - centres[None]) ** 2).sum(2).argmin(1)
            counts += np.bincount(lab, minlength=k)
            sums += np.eye(k)[lab].T @ Zi
        filled = counts > 0
        centres = centres.copy()
        centres[filled] = sums[filled] / counts[filled, None]
    return ((Z[:, None, :] - centres[None]) ** 2).sum(2).argmin(1), centres


def federated_kmeans(X, views, client, k, seed, rounds=10, n_init=10):
    """Hungarian-aligned federated k-means at full strength.

    Pooled standardisation (one exchange); every client runs k-means++
    (``n_init`` starts); the server matches every client's centroids one to
    one to the largest client's (Hungarian, squared distances) and averages
    them weighted by their cluster counts; then ``rounds`` rounds of
    federated Lloyd (clients send per-centre counts and sums of their samples
    nearest to the global centres), as many rounds as the method's
    clustering rounds. Labels: the nearest final global centre.
    """
    Z = pooled_standardise(X, views, client)
    clients = np.unique(client)
    fits = [
        KMeans(k, n_init=n_init, random_state=seed + int(i)).fit(Z[client == i])
        for i in clients
    ]
    sizes = [np.sum(client == i) for i in clients]
    ref = fits[int(np.argmax(sizes))].cluster_centers_
    centres, total = np.zeros_like(ref), np.zeros(k)
    for f in fits:
        cost = ((f.cluster_centers_[:, None] - ref[None]) ** 2).sum(2)
        rows, cols = linear_sum_assignment(cost)
        w = np.bincount(f.labels_, minlength=k).astype(float)
        centres[cols] += w[rows, None] * f.cluster_centers_[rows]
        total[cols] += w[rows]
    centres = np.where(total[:, None] > 0, centres / np.maximum(total, 1)[:, None], ref)
    return _lloyd_rounds(Z, client, centres, rounds)[0]


def kfed(X, views, client, k, seed, local_k=None, n_init=10):
    """k-FED one shot (Dennis, Li and Smith, ICML 2021).

    Pooled standardisation; every client runs k-means with ``local_k``
    clusters (default ``k``; fewer if the client has fewer samples); the
    server runs k-means (``n_init`` starts) on the union of the local
    centroids weighted by their counts; a sample's label is its nearest
    global centre.
    """
    Z = pooled_standardise(X, views, client)
    local_k = k if local_k is None else local_k
    cents, weights = [], []
    for i in np.unique(client):
        Zi = Z[client == i]
        f = KMeans(min(local_k, len(Zi)), n_init=n_init, random_state=seed + int(i))
        f.fit(Zi)
        cents.append(f.cluster_centers_)
        weights.append(np.bincount(f.labels_, minlength=f.n_clusters))
    server = KMeans(k, n_init=n_init, random_state=seed).fit(
        np.vstack(cents), sample_weight=np.concatenate(weights).astype(float)
    )
    return ((Z[:, None, :] - server.cluster_centers_[None]) ** 2).sum(2).argmin(1)
