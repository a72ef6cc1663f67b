"""The federated protocol of FederatedMultiViewClustering: client, server, wire.

A client holds its samples and its networks and never sends either: it
sends noised column statistics (two set-up rounds), the noised moments of
its embeddings, then each round its clusters' noised sufficient statistics
(counts, sums and sums of squares of the clipped residuals of the samples
of each cluster). Every release is recorded in the client's privacy
ledger. The server pools them into global Gaussian prototypes and broadcasts their
means and standard deviations. Both backends (the in-process simulation and
Flower) drive the same :class:`Client` and :class:`Server` objects through
:func:`transmit`, which is where everything that crosses the wire passes.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings

import numpy as np
from sklearn.cluster import KMeans

from sklearn_ext.utils._privacy import (
    PrivacyLedger,
    clip_rows,
    gaussian_release,
    private_quantile,
    private_training,
)
from sklearn_ext.utils._torch import (
    adam,
    batch_bounds,
    child_seeds,
    import_torch,
    init_parameters,
    to_tensor,
    train_loop,
    weighted_mean,
)
from sklearn_ext.utils._views import observed_views

__all__ = [
    "Client",
    "Server",
    "transmit",
    "release_cluster_stats",
    "stat_record_norm",
    "run_protocol",
    "run_simulation",
]

# The message fields a client may send and the server may broadcast, by
# round: nothing else crosses the wire (tests/test_cluster_fedmvc.py checks it).
CLIENT_FIELDS = {
    "location": ("sums", "counts"),
    "scale": ("sumsq",),
    "spread": ("counts", "sums", "sumsq", "outer"),
    "clusters": ("counts", "sums", "sumsq"),
    # Without privacy the clusters also carry their sums of the standardised
    # inputs (the prototypes in the one space all clients share).
    "clusters_input": ("counts", "sums", "sumsq", "xsums"),
}
SERVER_FIELDS = {
    "location": ("col_mean",),
    "scale": ("col_mean", "col_scale"),
    "spread": ("means", "stds", "cov"),
    "clusters": ("means", "stds"),
    "clusters_input": ("means", "stds", "xmeans"),
}


def transmit(message):
    """What arrives at the other end of the wire, and its size in bytes.

    A message is a dict of numeric arrays; each travels as float32 (as Flower
    sends NumPy arrays), so the receiver gets float32 copies and the size is
    their number of bytes.
    """
    arrived = as_received(message)
    return arrived, wire_bytes(arrived)


def as_received(message):
    """The float32 copy of a message that arrives at the other end.

    A client that post-processes what it sent (its own centroids) uses
    this, so that it sees what the server sees.
    """
    return {k: np.array(v, dtype=np.float32) for k, v in message.items()}


def wire_bytes(message):
    """Bytes a message takes on the wire: its arrays as float32."""
    return sum(np.asarray(v, dtype=np.float32).nbytes for v in message.values())


def nearest_prototype(Z, means):
    """Index of the nearest prototype mean of every row of Z."""
    d2 = (Z**2).sum(axis=1)[:, None] - 2 * Z @ means.T + (means**2).sum(axis=1)
    return d2.argmin(axis=1)


# Rounds of the protocol: two rounds agree on a shared standardisation of the
# columns, one pools the embeddings' mean and spread (after pretraining), one
# sends the first (cell) statistics, then ``rounds`` rounds of clustering.
ROUND_LOCATION, ROUND_SCALE, ROUND_SPREAD, ROUND_CELLS = 0, 1, 2, 3
N_SETUP_ROUNDS = 4
# pretrain_iter="auto": at least this many optimiser steps, and 10 epochs.
_MIN_PRETRAIN_STEPS = 200
# Floor of a global prototype's per-dimension standard deviation.
_MIN_STD = 1e-3
# Clipping radii are this quantile of the per-sample norms (released noisily).
CLIP_QUANTILE = 0.9
# Cells of the first release, per cluster.
CELLS_PER_CLUSTER = 4
# Weights of the three parts of a cluster-statistics record (count, residual
# sum, residual sum of squares): part f is released divided by its weight, so
# its noise is the weight times the common scale (see release_cluster_stats).
STAT_WEIGHTS = (1.0, 1.0, 2.0)
# Per-sample gradient clipping norm of DP-SGD.
TRAIN_CLIP_NORM = 1.0
# Grid of the norms of asinh-transformed rows, per sqrt(column), for the
# standardisation's clipping radii (fixed before any data are seen).
_ROW_NORM_GRID = (1e-3, 20.0)


def feature_transform(X):
    """The fixed, data-independent squashing of raw columns: ``asinh``.

    It keeps the sign and the order of the values and compresses their range
    (``asinh(x) ~ x`` near 0, ``~ log(2x)`` for large ``x``), so that one
    clipping radius serves columns whose raw scales differ by orders of
    magnitude, as a private standardisation needs.
    """
    return np.arcsinh(X)


def stat_record_norm(weights=STAT_WEIGHTS):
    """L2 norm bound of one sample's weighted statistics record.

    The record of a sample in a cluster is (1, r, r * r) for its clipped
    residual ``r`` (``||r|| <= radius``), released as
    ``(1 / w_c, r / (radius w_s), r * r / (radius^2 w_q))``, whose norm is at
    most ``sqrt(sum(1 / w^2))``: adding or removing a sample moves the
    released statistics by no more than that.
    """
    return math.sqrt(sum(1.0 / w**2 for w in weights))


def release_cluster_stats(E, labels, centres, radius, multiplier, rng, ledger, what):
    """Noised count, sum and sum of squares of the rows of ``E`` per label.

    Each row is taken relative to its label's centre (a public point: a
    global prototype or an anchor) and clipped to ``radius``; the counts,
    residual sums and residual sums of squares are released together by the
    Gaussian mechanism with the weighted record of :func:`stat_record_norm`
    (sensitivity 1 after weighting) and noise multiplier ``multiplier``. The
    result is returned about the origin (``sums = n c + S``, ``sumsq =
    n c^2 + 2 c S + Q``: post-processing with the public centres), as
    ``{"counts", "sums", "sumsq"}``. ``radius=inf`` clips nothing and needs
    ``multiplier=0``.
    """
    k = centres.shape[0]
    onehot = np.eye(k)[labels]
    resid = E - centres[labels]
    if math.isfinite(radius):
        resid = clip_rows(resid, radius)
        scale = (STAT_WEIGHTS[0], radius * STAT_WEIGHTS[1], radius**2 * STAT_WEIGHTS[2])
    else:
        if multiplier > 0:
            raise ValueError("noised statistics need a finite clipping radius.")
        scale = (1.0, 1.0, 1.0)
    exact = [onehot.sum(axis=0), onehot.T @ resid, onehot.T @ resid**2]
    flat = np.concatenate([v.ravel() / s for v, s in zip(exact, scale)])
    noisy = gaussian_release(flat, stat_record_norm(), multiplier, rng, ledger, what)
    sizes = np.cumsum([0] + [v.size for v in exact])
    counts, S, Q = (
        noisy[a:b].reshape(v.shape) * s
        for a, b, v, s in zip(sizes[:-1], sizes[1:], exact, scale)
    )
    return {
        "counts": counts,
        "sums": counts[:, None] * centres + S,
        "sumsq": counts[:, None] * centres**2 + 2 * centres * S + Q,
    }


def _moments(counts, sums, sumsq):
    """Means and standard deviations from (noised) sufficient statistics."""
    n = np.maximum(counts, 1.0)[:, None]
    means = sums / n
    var = sumsq / n - means**2
    return means, np.sqrt(np.maximum(var, _MIN_STD**2))


def group_cells(counts, sums, sumsq, n_clusters, clip_norm, seed=0):
    """Group noised cells into ``n_clusters`` clusters; None for dropped cells.

    A cell's mean is its noised sum over its noised count. Cells whose count
    is below 1, or whose mean lies outside the ball of radius ``clip_norm``
    that holds every embedding (so that the noise dominates it), are dropped
    (group -1); the others are grouped by k-means on their means weighted by
    their counts. Returns the group of every cell.
    """
    means, _ = _moments(counts, sums, sumsq)
    keep = (counts >= 1.0) & (np.linalg.norm(means, axis=1) <= clip_norm)
    groups = np.full(len(counts), -1)
    if keep.sum() >= n_clusters:
        km = KMeans(n_clusters, n_init=10, random_state=seed)
        groups[keep] = km.fit(means[keep], sample_weight=counts[keep]).labels_
    elif keep.any():
        groups[np.flatnonzero(keep)] = np.arange(keep.sum())
    return groups


def group_inputs(counts, xsums, n_clusters, seed=0):
    """Group local clusters by their input-space means (k-means, count-weighted)."""
    keep = counts >= 1.0
    means = xsums[keep] / counts[keep, None]
    groups = np.full(len(counts), -1)
    if keep.sum() >= n_clusters:
        km = KMeans(n_clusters, n_init=10, random_state=seed)
        groups[keep] = km.fit(means, sample_weight=counts[keep]).labels_
    else:
        groups[np.flatnonzero(keep)] = np.arange(keep.sum())
    return groups


def pool_by_group(groups, n_clusters, *stats):
    """Sum per-cell statistics into their groups (dropped cells left out)."""
    onehot = np.zeros((len(groups), n_clusters))
    kept = groups >= 0
    onehot[np.flatnonzero(kept), groups[kept]] = 1.0
    return [onehot.T @ s for s in stats]


class Server:
    """Pools the clients' noised statistics: the columns' scaling, then prototypes.

    Round 0 pools every column's noised sum and every view's noised count of
    observed samples into the columns' means; round 1 pools the noised
    squared deviations into their scales (both of the asinh-transformed
    columns, see :func:`feature_transform`); round 2 pools the embeddings'
    noised counts, sums and second moments into one Gaussian (mean and full
    covariance, the nearest positive semi-definite one); round 3 groups the
    clients' noised cells into ``n_clusters`` global clusters (``align``:
    cells of shared anchors are pooled cell by cell over the clients, a
    client's own local k-means clusters without privacy are taken as they
    are, and all are grouped by k-means on their means weighted by their
    counts; without alignment, each client's cells are grouped on their own
    and pooled by the arbitrary index of their group, the ablation); later
    rounds pool the clusters' noised statistics by index (the clients
    aligned them) into Gaussian prototypes.

    Parameters
    ----------
    n_clusters : int
    align : bool
    views : list of ndarray
        Column positions of every view.
    clip_norm : float
        Radius of the ball that holds every embedding.
    seed : int
        Seeds the grouping of the cells.
    rounds : int
        Clustering rounds (after the four set-up rounds).
    private : bool, default=False
        The clients send cells of shared anchors (with privacy) rather than
        their local k-means clusters.
    """

    def __init__(
        self, n_clusters, align, views, clip_norm, seed, rounds, private=False
    ):
        self.n_clusters = n_clusters
        self.align = align
        self.views = [np.asarray(v) for v in views]
        self.clip_norm = float(clip_norm)
        self.seed = seed
        self.private = bool(private)
        self.n_rounds = N_SETUP_ROUNDS + int(rounds)
        self.means = None
        self.stds = None
        self.xmeans = None
        self.col_mean = None
        self.col_scale = None
        self._col_counts = None

    def _column_counts(self, view_counts):
        n_columns = sum(len(v) for v in self.views)
        out = np.empty(n_columns)
        for v, cols in enumerate(self.views):
            out[cols] = view_counts[v]
        return np.maximum(out, 1.0)

    def aggregate(self, round_, messages):
        """Pool one round's messages (ordered by client) and return the broadcast."""
        if round_ == ROUND_LOCATION:
            counts = np.sum([m["counts"] for m in messages], axis=0)
            self._col_counts = self._column_counts(counts)
            sums = np.sum([m["sums"] for m in messages], axis=0)
            self.col_mean = sums / self._col_counts
            return {"col_mean": self.col_mean}
        if round_ == ROUND_SCALE:
            sumsq = np.sum([m["sumsq"] for m in messages], axis=0)
            scale = np.sqrt(np.maximum(sumsq, 0.0) / self._col_counts)
            floor = max(0.01 * float(np.median(np.abs(scale))), 1e-6)
            self.col_scale = np.maximum(scale, floor)
            return {"col_mean": self.col_mean, "col_scale": self.col_scale}
        stats = [
            [np.asarray(m[f], dtype=np.float64) for m in messages]
            for f in ("counts", "sums", "sumsq")
        ]
        k = self.n_clusters
        if round_ == ROUND_SPREAD:
            total, sums, sumsq = (np.sum(x, axis=0) for x in stats)
            means, stds = _moments(total, sums, sumsq)
            outer = np.sum(
                [np.asarray(m["outer"], dtype=np.float64) for m in messages], 0
            )
            n = max(float(total[0]), 1.0)
            cov = outer / n - np.outer(means[0], means[0])
            # The nearest covariance (noise can make it indefinite).
            vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
            cov = (vecs * np.maximum(vals, 0.0)) @ vecs.T
            return {"means": means, "stds": stds, "cov": cov}
        if round_ == ROUND_CELLS:
            if self.align and self.private:
                # Cells of shared anchors (with privacy): the same cell at
                # every client, pooled over the clients before grouping.
                pooled_cells = [np.sum(x, axis=0) for x in stats]
                g = group_cells(*pooled_cells, k, self.clip_norm, self.seed)
                groups = [g for _ in messages]
            elif self.align and "xsums" in messages[0]:
                # Without privacy: the clients' local clusters grouped by their
                # prototypes in the shared input space (the standardised
                # views), where a class sits at the same place at every
                # client; the embedding spaces are each client's own.
                counts = np.concatenate(stats[0])
                xsums = np.concatenate(
                    [np.asarray(m["xsums"], dtype=np.float64) for m in messages]
                )
                groups = group_inputs(counts, xsums, k, self.seed)
                groups = np.split(groups, len(messages))
            elif self.align:
                groups = group_cells(
                    *(np.concatenate(s) for s in stats), k, self.clip_norm, self.seed
                )
                groups = np.split(groups, len(messages))
            else:
                groups = [
                    group_cells(c, s, q, k, self.clip_norm) for c, s, q in zip(*stats)
                ]
            if "xsums" in messages[0]:
                xstats = [np.asarray(m["xsums"], dtype=np.float64) for m in messages]
                pooled = [
                    pool_by_group(g, k, c, s, q, x)
                    for g, c, s, q, x in zip(groups, *stats, xstats)
                ]
                self._pool_inputs(
                    np.sum([p[0] for p in pooled], 0), np.sum([p[3] for p in pooled], 0)
                )
            else:
                pooled = [
                    pool_by_group(g, k, c, s, q) for g, c, s, q in zip(groups, *stats)
                ]
            stats = [[p[i] for p in pooled] for i in range(3)]
        elif "xsums" in messages[0]:
            self._pool_inputs(
                np.sum(stats[0], axis=0),
                np.sum([np.asarray(m["xsums"], dtype=np.float64) for m in messages], 0),
            )
        total, sums, sumsq = (np.sum(x, axis=0) for x in stats)
        means, stds = _moments(total, sums, sumsq)
        if self.means is not None:
            # A cluster that (after noise) no client holds keeps its prototype.
            empty = total < 1.0
            means[empty], stds[empty] = self.means[empty], self.stds[empty]
        self.means, self.stds = means, stds
        if self.xmeans is not None:
            return {"means": means, "stds": stds, "xmeans": self.xmeans}
        return {"means": means, "stds": stds}

    def _pool_inputs(self, counts, xsums):
        """Global input-space prototypes; a cluster nobody holds keeps its own."""
        xmeans = xsums / np.maximum(counts, 1.0)[:, None]
        if self.xmeans is not None:
            empty = counts < 1.0
            xmeans[empty] = self.xmeans[empty]
        self.xmeans = xmeans


def check_client_views(spec):
    """Refuse a client whose data do not have the columns of every view.

    A Flower client process loads its own data: a view of another width there
    (a column too few or too many) would otherwise fail deep in its network.
    """
    X = np.asarray(spec["X"])
    width = X.shape[1] if X.ndim == 2 else None
    expected = sum(len(c) for c in spec["views"])
    if width == expected:
        return
    who = f"client {spec.get('client', '?')}"
    for v, cols in enumerate(spec["views"]):
        if width is None or max(cols) >= width:
            raise ValueError(
                f"The data of {who} have {width} columns but view {v} needs "
                f"columns {min(cols)}..{max(cols)} ({len(cols)} wide; the views "
                f"take {expected} columns in all): every client must hold every "
                "view at the same width (a view a client lacks is all-NaN)."
            )
    raise ValueError(
        f"The data of {who} have {width} columns but the views take {expected}: "
        "every client must hold every view at the same width."
    )


class Client:
    """One client: its samples, its networks, its local clustering, its ledger.

    Built from a plain dict (``spec``) so that a Flower client process can
    rebuild it; see ``FederatedMultiViewClustering._client_specs``. With
    ``spec["privacy"]`` a dict of noise multipliers, every quantity that
    leaves the client, and every choice that shapes one (clipping radii,
    training, labels), depends on its samples only through noised releases,
    all recorded in ``self.ledger``; with None, everything is exact.
    """

    def __init__(self, spec):
        torch = import_torch()
        from sklearn_ext.cluster._fedmvc_nn import FedMVCNet

        check_client_views(spec)
        self.spec = spec
        self.privacy = spec.get("privacy")
        X = np.asarray(spec["X"], dtype=np.float64)
        self.views = [np.asarray(c) for c in spec["views"]]
        self.observed = observed_views(X, self.views)
        self.V = feature_transform(X)
        self.device = torch.device(spec["device"])
        self.dtype = torch.float32
        self.n_samples = X.shape[0]
        seeds = child_seeds(spec["seed"], 5)
        shuffle_seed, noise_seed, _, train_seed, self.kmeans_seed = seeds
        self.generator = torch.Generator().manual_seed(shuffle_seed)
        # DP-SGD's noise is drawn on the parameters' device (opacus draws it
        # with this generator there).
        self.train_noise = torch.Generator(device=self.device).manual_seed(train_seed)
        self.noise = np.random.default_rng(noise_seed)
        # Every client starts from the same weights (one shared seed): local
        # training alone then leaves their embedding spaces comparable.
        init = torch.Generator().manual_seed(spec["init_seed"])
        self.net = init_parameters(
            FedMVCNet(
                [len(c) for c in self.views],
                spec["latent_dim"],
                spec["hidden"],
                spec["clip_norm"],
            ),
            init,
        ).to(self.device)
        # Built on first use: constructing a torch optimizer imports
        # torch._dynamo (about a second), which a run that trains nothing
        # (the private defaults) never needs.
        self._optimizer = None
        self.ledger = PrivacyLedger()
        self.col_mean = self.col_scale = None
        self.tensors = self.mask = None
        self.U = None
        self.labels = None
        self.centroids = None
        self.local_stds = None
        self.prototypes = None

    @property
    def optimizer(self):
        if self._optimizer is None:
            self._optimizer = adam(self.net.parameters(), lr=self.spec["learning_rate"])
        return self._optimizer

    # --- privacy --------------------------------------------------------------

    def _multiplier(self, name):
        return 0.0 if self.privacy is None else float(self.privacy[name])

    def _radius(self, norms, low, high, what):
        """A clipping radius: a noisy quantile of ``norms`` (inf when exact)."""
        if self.privacy is None:
            return math.inf
        return private_quantile(
            norms,
            CLIP_QUANTILE,
            low,
            high,
            self._multiplier("quantile"),
            self.noise,
            self.ledger,
            what,
        )

    # --- the columns' standardisation -----------------------------------------

    def _location_message(self):
        d = self.V.shape[1]
        filled = np.nan_to_num(self.V, nan=0.0)
        low, high = _ROW_NORM_GRID
        radius = self._radius(
            np.linalg.norm(filled, axis=1),
            low * math.sqrt(d),
            high * math.sqrt(d),
            "standardisation: row norm quantile",
        )
        rows = filled if not math.isfinite(radius) else clip_rows(filled, radius)
        n_views = len(self.views)
        # One record: the clipped row over its radius and the observed-view
        # indicators over sqrt(n_views), each of norm at most 1.
        a = 1.0 if not math.isfinite(radius) else radius
        b = math.sqrt(n_views) if self.privacy is not None else 1.0
        exact = np.concatenate([rows.sum(axis=0) / a, self.observed.sum(axis=0) / b])
        noisy = gaussian_release(
            exact,
            math.sqrt(2.0),
            self._multiplier("scale"),
            self.noise,
            self.ledger,
            "standardisation: column sums and view counts",
        )
        return {"sums": noisy[:d] * a, "counts": noisy[d:] * b}

    def _scale_message(self, broadcast):
        centred = np.nan_to_num(self.V - broadcast["col_mean"], nan=0.0)
        d = centred.shape[1]
        low, high = _ROW_NORM_GRID
        radius = self._radius(
            np.linalg.norm(centred, axis=1),
            low * math.sqrt(d),
            high * math.sqrt(d),
            "standardisation: centred row norm quantile",
        )
        if math.isfinite(radius):
            centred = clip_rows(centred, radius)
        # A clipped row's squares have L2 norm at most ||row||^2 <= radius^2.
        sumsq = gaussian_release(
            (centred**2).sum(axis=0),
            1.0 if not math.isfinite(radius) else radius**2,
            self._multiplier("scale"),
            self.noise,
            self.ledger,
            "standardisation: squared deviations",
        )
        return {"sumsq": sumsq}

    def _standardise(self, broadcast):
        self.col_mean = np.asarray(broadcast["col_mean"], dtype=np.float64)
        self.col_scale = np.asarray(broadcast["col_scale"], dtype=np.float64)
        Z = np.nan_to_num((self.V - self.col_mean) / self.col_scale, nan=0.0)
        self.tensors = [
            to_tensor(Z[:, c], dtype=self.dtype, device=self.device) for c in self.views
        ]
        # The shared input space: the standardised views, each weighed alike
        # (a block over the square root of its width), a missing view 0.
        self.U = np.hstack([Z[:, c] / math.sqrt(len(c)) for c in self.views])
        self.mask = to_tensor(self.observed, dtype=self.dtype, device=self.device)

    # --- training -------------------------------------------------------------

    def _batch(self, idx):
        return [x[idx] for x in self.tensors], self.mask[idx]

    def _fit_epochs(self, epochs, with_prototypes, phase):
        torch = import_torch()
        spec = self.spec
        protos = labels = spreads = None
        if with_prototypes:
            protos = tuple(
                to_tensor(a, dtype=self.dtype, device=self.device)
                for a in self.prototypes
            )
            spreads = to_tensor(self.local_stds, dtype=self.dtype, device=self.device)
            labels = torch.as_tensor(self.labels, dtype=torch.long, device=self.device)
        private = self.privacy is not None
        batch = min(spec["batch_size"], self.n_samples)
        if epochs == 0:
            if private:
                rate = batch / self.n_samples
                self.ledger.poisson_gaussian(
                    f"DP-SGD: {phase}", rate, self._multiplier("train"), 0
                )
            return

        def losses(idx):
            views, mask = self._batch(idx)
            return self.net.local_loss(
                views,
                mask,
                protos,
                None if labels is None else labels[idx],
                spreads,
                contrast=spec["contrast"],
                temperature=spec["temperature"],
                view_weight=spec["view_weight"],
            )

        self.net.train()
        common = {
            "max_iter": epochs,
            "tol": -math.inf,
            "n_iter_no_change": epochs + 1,
            "generator": self.generator,
            "device": self.device,
            "estimator_name": "FederatedMultiViewClustering",
            "phase": f"client {spec['client']}: {phase}",
            "warn_at_max_iter": False,
        }
        if not private:
            train_loop(
                lambda idx: weighted_mean(losses(idx)),
                self.n_samples,
                self.optimizer,
                batch_size=batch,
                **common,
            )
            return
        rate = batch / self.n_samples
        wrapped, optimizer = private_training(
            self.net,
            self.optimizer,
            self._multiplier("train"),
            TRAIN_CLIP_NORM,
            rate * self.n_samples,
            self.train_noise,
        )
        try:
            with warnings.catch_warnings():
                # opacus' per-sample hooks fire on the first layer's output
                # (the inputs need no gradient); torch warns, harmlessly.
                warnings.filterwarnings(
                    "ignore",
                    message="Full backward hook is firing",
                    category=UserWarning,
                )
                train_loop(
                    lambda idx: losses(idx).sum(),
                    self.n_samples,
                    optimizer,
                    batch_size=batch,
                    poisson_rate=rate,
                    **common,
                )
        finally:
            wrapped._close()
        self.ledger.poisson_gaussian(
            f"DP-SGD: {phase}",
            rate,
            self._multiplier("train"),
            epochs * train_steps_per_epoch(rate),
        )

    def pretrain_epochs(self):
        return pretrain_epochs(self.spec, self.n_samples)

    def embeddings(self):
        """Clipped fused embeddings of the client's samples (float64 numpy)."""
        torch = import_torch()
        self.net.eval()
        with torch.no_grad():
            z = self.net(self.tensors, self.mask)
        return z.double().cpu().numpy()

    # --- rounds -----------------------------------------------------------------

    def step(self, round_, broadcast):
        """One round's work at the client and the message it sends."""
        if round_ == ROUND_LOCATION:
            return self._location_message()
        if round_ == ROUND_SCALE:
            return self._scale_message(broadcast)
        if round_ == ROUND_SPREAD:
            self._standardise(broadcast)
            self._fit_epochs(self.pretrain_epochs(), False, "pretraining")
            return self._spread_message()
        if round_ == ROUND_CELLS:
            return self._cells_message(broadcast)
        return self._cluster_round(broadcast)

    def _spread_message(self):
        """Noised count, sum and sum of squares of all the client's embeddings."""
        E = self.embeddings()
        C = float(self.spec["clip_norm"])
        origin = np.zeros((1, E.shape[1]))
        radius = self._radius(
            np.linalg.norm(E, axis=1), 1e-4 * C, C, "embedding norm quantile"
        )
        message = release_cluster_stats(
            E,
            np.zeros(len(E), dtype=int),
            origin,
            radius,
            self._multiplier("stats"),
            self.noise,
            self.ledger,
            "embedding mean and spread",
        )
        # Second moments: one clipped row's outer product has Frobenius norm
        # ||z||^2 <= radius^2.
        rows = E if not math.isfinite(radius) else clip_rows(E, radius)
        message["outer"] = gaussian_release(
            rows.T @ rows,
            1.0 if not math.isfinite(radius) else radius**2,
            self._multiplier("stats"),
            self.noise,
            self.ledger,
            "embedding second moments",
        )
        return message

    def _cells_message(self, broadcast):
        """Noised statistics of ``CELLS_PER_CLUSTER * n_clusters`` cells.

        The cells are the Voronoi cells of anchors drawn around the pooled
        mean and spread of the embeddings (the broadcast) from a seed every
        client shares, so that a cell is the same region at every client and
        the server pools it over the clients before grouping the cells;
        without alignment (the ablation) the client groups its own cells for
        its local clustering. Without privacy the cells are the clusters of
        a local k-means.
        """
        E = self.embeddings()
        k, C = self.spec["n_clusters"], float(self.spec["clip_norm"])
        if self.privacy is None:
            return self._exact_first_clusters(E)
        mean = np.asarray(broadcast["means"], dtype=np.float64)
        cov = np.asarray(broadcast["cov"], dtype=np.float64)
        vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
        root = vecs * np.sqrt(np.maximum(vals, 0.0))
        shared = np.random.default_rng(self.spec["init_seed"])
        anchors = (
            mean + shared.standard_normal((CELLS_PER_CLUSTER * k, E.shape[1])) @ root.T
        )
        cells = nearest_prototype(E, anchors)
        radius = self._radius(
            np.linalg.norm(E - anchors[cells], axis=1),
            1e-4 * C,
            2 * C,
            "cell residual norm quantile",
        )
        message = release_cluster_stats(
            E,
            cells,
            anchors,
            radius,
            self._multiplier("stats"),
            self.noise,
            self.ledger,
            "cell statistics",
        )
        # The client's own clustering of what it sent, as the server sees it.
        sent = as_received(message)
        sent = {f: np.asarray(v, dtype=np.float64) for f, v in sent.items()}
        groups = group_cells(sent["counts"], sent["sums"], sent["sumsq"], k, C)
        pooled = pool_by_group(groups, k, sent["counts"], sent["sums"], sent["sumsq"])
        self._update_centroids(*pooled, fallback=None)
        return message

    def _exact_first_clusters(self, E):
        """Without privacy: the exact statistics of a local k-means's clusters.

        The labels need not be a per-sample function of released quantities
        (nothing is noised), so the client clusters its embeddings by k-means
        (10 starts) and sends its ``n_clusters`` clusters as the cells.
        """
        k = self.spec["n_clusters"]
        space = self.U if self.spec["align"] else E
        km = KMeans(k, n_init=10, random_state=self.kmeans_seed).fit(space)
        message = release_cluster_stats(
            E,
            km.labels_,
            np.zeros((k, E.shape[1])),
            math.inf,
            0.0,
            self.noise,
            self.ledger,
            "cell statistics",
        )
        self._update_centroids(
            message["counts"], message["sums"], message["sumsq"], fallback=None
        )
        if not self.spec["align"]:
            self.centroids = km.cluster_centers_
            return message
        message["xsums"] = np.eye(k)[km.labels_].T @ self.U
        return message

    def _update_centroids(self, counts, sums, sumsq, fallback):
        means, stds = _moments(counts, sums, sumsq)
        empty = counts < 1.0
        if fallback is not None:
            means[empty], stds[empty] = fallback[0][empty], fallback[1][empty]
        elif empty.any():
            # A group nobody fills: a far point no sample is nearest to.
            means[empty] = 10.0 * float(self.spec["clip_norm"])
            stds[empty] = 1.0
        self.centroids, self.local_stds = means, stds

    def _cluster_round(self, broadcast):
        """Train against the prototypes, recluster, align, send statistics."""
        k = self.spec["n_clusters"]
        align = self.spec["align"]
        self.prototypes = (broadcast["means"], broadcast["stds"])
        if "xmeans" in broadcast:
            self.xmeans = np.asarray(broadcast["xmeans"], dtype=np.float64)
        if self.labels is None:
            # The first training targets: every sample's aligned local cluster.
            self.labels = self._aligned_labels(self.embeddings())
        if self.spec["local_epochs"]:
            self._fit_epochs(self.spec["local_epochs"], True, "local training")
        E = self.embeddings()
        self.labels = self._aligned_labels(E)
        C = float(self.spec["clip_norm"])
        means = np.asarray(broadcast["means"], dtype=np.float64)
        if not align:
            means = self.centroids
        radius = self._radius(
            np.linalg.norm(E - means[self.labels], axis=1),
            1e-4 * C,
            2 * C,
            "cluster residual norm quantile",
        )
        message = release_cluster_stats(
            E,
            self.labels,
            means,
            radius,
            self._multiplier("stats"),
            self.noise,
            self.ledger,
            "cluster statistics",
        )
        sent = as_received(message)
        self._update_centroids(
            *(
                np.asarray(sent[f], dtype=np.float64)
                for f in ("counts", "sums", "sumsq")
            ),
            fallback=(means, np.asarray(broadcast["stds"], dtype=np.float64)),
        )
        if "xmeans" in broadcast:
            message["xsums"] = np.eye(k)[self.labels].T @ self.U
        return message

    def _aligned_labels(self, E):
        """Local clusters renamed to global indices.

        Without privacy the local clusters are a k-means to convergence
        started from the current local centroids. Every sample also has a
        global cluster (its nearest global prototype); the contingency table
        of local against global clusters counts how often they co-occur on
        the same samples (exact: it never leaves the client), and every
        local cluster takes the global cluster it co-occurs with most
        (several local clusters may join one global cluster). The local
        centroids are renamed with them. With privacy and alignment every
        sample takes its nearest global prototype. Without alignment the
        local indices stay as they are.
        """
        if self.privacy is not None and self.spec["align"]:
            # With privacy a client's own noised clusters are too noisy to
            # cluster by (a few dozen samples against noise of several
            # counts): every sample joins its nearest global prototype, whose
            # statistics pool every client's releases (one Lloyd step of the
            # pooled clustering; nothing to align, nothing to release).
            labels = nearest_prototype(E, self.prototypes[0])
            self.centroids = np.array(self.prototypes[0], dtype=float)
            self.local_stds = np.array(self.prototypes[1], dtype=float)
            return labels
        if self.privacy is None:
            # Without privacy the local clustering is k-means to convergence
            # from the current centroids; with privacy it is one Lloyd step
            # (the nearest centroid released last round), so that every
            # label is a function of its own sample and released quantities.
            km = KMeans(
                len(self.centroids),
                init=self.centroids,
                n_init=1,
                random_state=self.kmeans_seed,
            ).fit(E)
            self.centroids = km.cluster_centers_
        local = nearest_prototype(E, self.centroids)
        if not self.spec["align"]:
            return local
        k = self.spec["n_clusters"]
        xmeans = getattr(self, "xmeans", None)
        if xmeans is not None:
            # Global clusters in the shared input space (see Server).
            nearest = nearest_prototype(self.U, xmeans)
        else:
            nearest = nearest_prototype(E, self.prototypes[0])
        table = np.zeros((k, k))
        np.add.at(table, (local, nearest), 1.0)
        mapping = table.argmax(axis=1)
        labels = mapping[local]
        # Rename the local centroids (several may merge into one global index).
        counts = np.bincount(local, minlength=k).astype(float)
        merged_c, merged_s = (
            np.array(self.prototypes[0], dtype=float),
            np.array(self.prototypes[1], dtype=float),
        )
        for g in np.unique(mapping):
            members = np.flatnonzero(mapping == g)
            w = np.maximum(counts[members], 1e-12)
            merged_c[g] = np.average(self.centroids[members], axis=0, weights=w)
            merged_s[g] = np.average(self.local_stds[members], axis=0, weights=w)
        self.centroids, self.local_stds = merged_c, merged_s
        return labels

    def finish(self, broadcast):
        """Store the final global prototypes; label the client's samples."""
        self.prototypes = (broadcast["means"], broadcast["stds"])
        Z = self.embeddings()
        self.labels = nearest_prototype(Z, self.prototypes[0])
        return self.labels

    def state(self):
        """What the client hands back to its own user (never to the server)."""
        from sklearn_ext.utils._torch import module_to_bytes

        return {
            "module": module_to_bytes(self.net.to("cpu")),
            "col_mean": self.col_mean,
            "col_scale": self.col_scale,
            "labels": self.labels,
            "ledger": self.ledger.entries,
        }


def train_steps_per_epoch(rate):
    """Optimiser steps of one epoch of Poisson-sampled training."""
    return max(1, round(1.0 / rate))


def pretrain_epochs(spec, n_samples):
    """Epochs of round 2's pretraining.

    "auto": none with privacy (``spec["private"]``), else at least 200 steps
    and 10 epochs.
    """
    value = spec["pretrain_iter"]
    if value != "auto":
        return int(value)
    if spec.get("private"):
        return 0
    batch = min(spec["batch_size"], n_samples)
    n_batches = len(batch_bounds(n_samples, batch))
    return max(10, math.ceil(_MIN_PRETRAIN_STEPS / n_batches))


# Relative noise multipliers of the mechanisms; FederatedMultiViewClustering
# scales them all by one factor chosen so that the whole run spends the
# target epsilon (calibrate_noise).
BASE_MULTIPLIERS = {
    "scale": 1.0,
    "quantile": 2.0,
    "stats": 1.0,
    "train": 0.5,
}


def privacy_multipliers(scale):
    """The noise multipliers of every mechanism at a common ``scale``."""
    return {name: scale * base for name, base in BASE_MULTIPLIERS.items()}


def privacy_plan(spec, n_samples, rounds, multipliers):
    """The ledger a client with ``n_samples`` samples will record, in advance.

    The same releases, in the same numbers, as :class:`Client` runs (a test
    checks that the recorded ledger equals this plan), so that the noise can
    be calibrated before any data are touched.
    """
    ledger = PrivacyLedger()
    q, s = multipliers["quantile"], multipliers["scale"]
    for what in ("row norm quantile", "centred row norm quantile"):
        ledger.gaussian(f"standardisation: {what}", q)
    ledger.gaussian("standardisation: column sums and view counts", s)
    ledger.gaussian("standardisation: squared deviations", s)
    rate = min(spec["batch_size"], n_samples) / n_samples
    steps = train_steps_per_epoch(rate)
    ledger.poisson_gaussian(
        "DP-SGD: pretraining",
        rate,
        multipliers["train"],
        pretrain_epochs(spec, n_samples) * steps,
    )
    for what in ("embedding norm quantile", "cell residual norm quantile"):
        ledger.gaussian(what, q)
    ledger.gaussian("embedding mean and spread", multipliers["stats"])
    ledger.gaussian("embedding second moments", multipliers["stats"])
    ledger.gaussian("cell statistics", multipliers["stats"])
    for _ in range(rounds):
        if spec["local_epochs"]:
            ledger.poisson_gaussian(
                "DP-SGD: local training",
                rate,
                multipliers["train"],
                spec["local_epochs"] * steps,
            )
        ledger.gaussian("cluster residual norm quantile", q)
        ledger.gaussian("cluster statistics", multipliers["stats"])
    return ledger


def protocol_rounds(server, rounds):
    """Number of protocol rounds: ``server.n_rounds`` if set, else ``rounds + 1``."""
    n_rounds = getattr(server, "n_rounds", None)
    return rounds + 1 if n_rounds is None else int(n_rounds)


def client_reply(client, round_, received):
    """A client's step on what reached it, as its message arrives at the server."""
    sent, _ = transmit(client.step(round_, received))
    return sent


def run_protocol(server, transport, n_rounds):
    """Run the protocol over a transport; return (final broadcast, traffic).

    Every backend drives the protocol through this one sequence of calls. In
    each round ``r`` (``0 .. n_rounds - 1``) every client steps on what it
    received (None in round 0) and the server aggregates their messages,
    ordered by client index, into the next broadcast; after the last round
    every client finishes on the final broadcast. What travels down is what
    :func:`transmit` returns, one copy per client; what travels up is what
    :func:`client_reply` returns. Messages are dicts of arrays whose keys may
    change from round to round: nothing here depends on them.

    ``transport`` moves the messages: ``transport.n_clients``;
    ``transport.exchange(round_, received)`` hands client ``i`` its
    ``received[i]`` (a message or None), runs its :func:`client_reply` and
    returns the replies ordered by client index; ``transport.finish(received)``
    runs every client's ``finish``. ``traffic`` holds the bytes (up, down) of
    every round, and ``(0, down)`` for the final broadcast.
    """
    n_clients = transport.n_clients
    broadcast = None
    traffic = []
    for round_ in range(n_rounds):
        received, down = _deliver(broadcast, n_clients)
        messages = list(transport.exchange(round_, received))
        if len(messages) != n_clients:
            raise RuntimeError(
                f"Protocol round {round_}: {len(messages)} client messages "
                f"arrived, expected {n_clients}."
            )
        up = sum(wire_bytes(m) for m in messages)
        broadcast = server.aggregate(round_, messages)
        traffic.append((up, down))
    received, down = _deliver(broadcast, n_clients)
    transport.finish(received)
    traffic.append((0, down))
    return broadcast, traffic


def _deliver(broadcast, n_clients):
    """Each client's copy of the broadcast as it arrives, and their bytes."""
    if broadcast is None:
        return [None] * n_clients, 0
    copies = [transmit(broadcast) for _ in range(n_clients)]
    return [c for c, _ in copies], sum(size for _, size in copies)


class InProcessTransport:
    """The simulation's transport: every client object lives in this process."""

    def __init__(self, clients):
        self.clients = list(clients)
        self.n_clients = len(self.clients)

    def exchange(self, round_, received):
        return [
            client_reply(client, round_, message)
            for client, message in zip(self.clients, received)
        ]

    def finish(self, received):
        for client, message in zip(self.clients, received):
            client.finish(message)


def run_simulation(clients, server, rounds):
    """Run the protocol in-process; return the bytes sent per round (up, down)."""
    _, traffic = run_protocol(
        server, InProcessTransport(clients), protocol_rounds(server, rounds)
    )
    return traffic
