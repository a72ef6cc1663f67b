"""The federated protocol of FederatedMultiViewClustering: client, server, wire.

A client holds its samples and its networks and never sends either: each
round it sends its clusters' noised sufficient statistics (counts, sums and
sums of squares of the clipped embeddings of the samples of each cluster).
The server pools them into global Gaussian prototypes and broadcasts their
means and standard deviations. Both backends (the in-process simulation and
Flower) drive the same :class:`Client` and :class:`Server` objects through
:func:`transmit`, which is where everything that crosses the wire passes.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from sklearn.cluster import KMeans

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
from sklearn_ext.utils._views import observed_column_scaling, observed_views

__all__ = [
    "Client",
    "Server",
    "transmit",
    "privacy_epsilon",
    "record_sensitivity",
    "run_protocol",
    "run_simulation",
]

# The message fields a client may send and the server may broadcast: nothing
# else crosses the wire (tests/test_cluster_fedmvc.py checks it).
CLIENT_FIELDS = ("counts", "sums", "sumsq")
SERVER_FIELDS = ("means", "stds")
# pretrain_iter="auto": at least this many optimiser steps, and 10 epochs.
_MIN_PRETRAIN_STEPS = 200
# Floor of a global prototype's per-dimension standard deviation.
_MIN_STD = 1e-3


def record_sensitivity(clip_norm):
    """L2 sensitivity of one sample's record (count 1, z, z*z) with ||z|| <= C.

    A sample adds 1 to its cluster's count, ``z`` to its sum and ``z * z``
    (elementwise) to its sum of squares; with ``||z|| <= C`` the last has norm
    at most ``C**2``, so the record's norm is at most
    ``sqrt(1 + C**2 + C**4)``: adding or removing a sample moves the released
    statistics by no more than that.
    """
    c = float(clip_norm)
    return math.sqrt(1.0 + c**2 + c**4)


def privacy_epsilon(noise_multiplier, n_releases, delta):
    """Epsilon of ``n_releases`` Gaussian-mechanism releases, by RDP accounting.

    Each release adds Gaussian noise of standard deviation ``noise_multiplier``
    times the records' sensitivity to the whole statistics of a client (no
    subsampling), and the releases compose; Google's ``dp-accounting``
    (RDP accountant) gives epsilon for ``delta``. A client's samples enter
    only its own releases, so this is each client's guarantee (add/remove one
    sample). ``inf`` without noise.
    """
    if noise_multiplier <= 0:
        return math.inf
    try:
        import dp_accounting
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise ImportError(
            "FederatedMultiViewClustering reports its privacy guarantee with "
            "Google's dp-accounting; install it with "
            "`pip install sklearn_ext[federated]` (or set noise_multiplier=0)."
        ) from exc
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(
        dp_accounting.GaussianDpEvent(float(noise_multiplier)), n_releases
    )
    return float(accountant.get_epsilon(float(delta)))


def transmit(message):
    """What arrives at the other end of the wire, and its size in bytes.

    A message is a dict of numeric arrays; each travels as float32 (as Flower
    sends NumPy arrays), so the receiver gets float32 copies and the size is
    their number of bytes.
    """
    arrived = {k: np.array(v, dtype=np.float32) for k, v in message.items()}
    return arrived, wire_bytes(arrived)


def wire_bytes(message):
    """Bytes a message takes on the wire: its arrays as float32."""
    return sum(np.asarray(v, dtype=np.float32).nbytes for v in message.values())


def nearest_prototype(Z, means):
    """Index of the nearest prototype mean of every row of Z."""
    d2 = (Z**2).sum(axis=1)[:, None] - 2 * Z @ means.T + (means**2).sum(axis=1)
    return d2.argmin(axis=1)


def _moments(counts, sums, sumsq):
    """Means and standard deviations from (noised) sufficient statistics."""
    n = np.maximum(counts, 1.0)[:, None]
    means = sums / n
    var = sumsq / n - means**2
    return means, np.sqrt(np.maximum(var, _MIN_STD**2))


class Server:
    """Pools the clients' noised cluster statistics into global prototypes.

    Parameters
    ----------
    n_clusters : int
    align : bool
        Before the first pooling (no global prototypes yet), group all the
        clients' first prototypes into ``n_clusters`` global ones by k-means
        on their means weighted by their (noised) counts, several local
        clusters joining one global cluster where a client split a class.
        Later rounds arrive aligned by the clients' co-occurrence step. With
        False, statistics are pooled by cluster index as sent.
    seed : int
        Seeds that k-means.
    """

    def __init__(self, n_clusters, align, seed):
        self.n_clusters = n_clusters
        self.align = align
        self.seed = seed
        self.means = None
        self.stds = None

    def aggregate(self, round_, messages):
        """Pool one round's messages (ordered by client) and return the broadcast."""
        stats = [
            [np.asarray(m[f], dtype=np.float64) for m in messages]
            for f in CLIENT_FIELDS
        ]
        if round_ == 0 and self.align:
            stats = self._group_first_prototypes(*stats)
        total, sums, sumsq = (np.sum(x, axis=0) for x in stats)
        means, stds = _moments(total, sums, sumsq)
        if self.means is not None:
            # A cluster that (after noise) no client holds keeps its prototype.
            empty = total < 1.0
            means[empty], stds[empty] = self.means[empty], self.stds[empty]
        self.means, self.stds = means, stds
        return {"means": means, "stds": stds}

    def _group_first_prototypes(self, counts, sums, sumsq):
        moments = [_moments(c, s, q) for c, s, q in zip(counts, sums, sumsq)]
        points = np.vstack([m for m, _ in moments])
        weights = np.maximum(np.concatenate(counts), 1e-3)
        km = KMeans(self.n_clusters, n_init=10, random_state=self.seed)
        groups = km.fit(points, sample_weight=weights).labels_
        onehots = np.split(np.eye(self.n_clusters)[groups], len(counts))
        # Local cluster a of a client joins the global cluster of its prototype.
        return [
            [g.T @ x for g, x in zip(onehots, stat)] for stat in (counts, sums, sumsq)
        ]


class Client:
    """One client: its standardised samples, its networks, its local clustering.

    Built from a plain dict (``spec``) so that a Flower client process can
    rebuild it; see ``FederatedMultiViewClustering._client_specs``.
    """

    def __init__(self, spec):
        torch = import_torch()
        from sklearn_ext.cluster._fedmvc_nn import FedMVCNet

        self.spec = spec
        X = np.asarray(spec["X"], dtype=np.float64)
        self.views = [np.asarray(c) for c in spec["views"]]
        observed = observed_views(X, self.views)
        self.observed = observed
        seen = ~np.isnan(X)
        self.col_mean, self.col_scale = observed_column_scaling(X)
        self.device = torch.device(spec["device"])
        self.dtype = torch.float32
        Z = np.where(seen, (X - self.col_mean) / self.col_scale, 0.0)
        self.tensors = [
            to_tensor(Z[:, c], dtype=self.dtype, device=self.device) for c in self.views
        ]
        self.mask = to_tensor(observed, dtype=self.dtype, device=self.device)
        shuffle_seed, self.kmeans_seed, noise_seed = child_seeds(spec["seed"], 3)
        self.generator = torch.Generator().manual_seed(shuffle_seed)
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
        self.optimizer = adam(self.net.parameters(), lr=spec["learning_rate"])
        self.labels = None
        self.centroids = None
        self.prototypes = None
        self.n_samples = X.shape[0]

    # --- training -------------------------------------------------------------

    def _batch(self, idx):
        return [x[idx] for x in self.tensors], self.mask[idx]

    def _fit_epochs(self, epochs, with_prototypes):
        torch = import_torch()
        spec = self.spec
        protos = labels = None
        if with_prototypes:
            protos = tuple(
                to_tensor(a, dtype=self.dtype, device=self.device)
                for a in self.prototypes
            )
            labels = torch.as_tensor(self.labels, dtype=torch.long, device=self.device)

        def batch_loss(idx):
            views, mask = self._batch(idx)
            losses = self.net.local_loss(
                views,
                mask,
                protos,
                None if labels is None else labels[idx],
                contrast=spec["contrast"],
                temperature=spec["temperature"],
                view_weight=spec["view_weight"],
            )
            return weighted_mean(losses)

        self.net.train()
        train_loop(
            batch_loss,
            self.n_samples,
            self.optimizer,
            batch_size=min(spec["batch_size"], self.n_samples),
            max_iter=epochs,
            tol=-math.inf,
            n_iter_no_change=epochs + 1,
            generator=self.generator,
            device=self.device,
            estimator_name="FederatedMultiViewClustering",
            phase=f"client {spec['client']}",
            warn_at_max_iter=False,
        )

    def pretrain_epochs(self):
        value = self.spec["pretrain_iter"]
        if value != "auto":
            return int(value)
        n_batches = len(
            batch_bounds(self.n_samples, min(self.spec["batch_size"], self.n_samples))
        )
        return max(10, math.ceil(_MIN_PRETRAIN_STEPS / n_batches))

    def embeddings(self):
        """Clipped fused embeddings of the client's samples (float64 numpy)."""
        torch = import_torch()
        self.net.eval()
        with torch.no_grad():
            z = self.net(self.tensors, self.mask)
        return z.double().cpu().numpy()

    # --- one round --------------------------------------------------------------

    def step(self, round_, broadcast):
        """Train locally, recluster, align, and return the noised statistics."""
        k = self.spec["n_clusters"]
        align = self.spec["align"]
        if round_ == 0:
            self._fit_epochs(self.pretrain_epochs(), with_prototypes=False)
        else:
            self.prototypes = (broadcast["means"], broadcast["stds"])
            if align:
                # The server pooled last round's clusters under its own
                # indices: take them on before training against them.
                Z = self.embeddings()
                self.labels = self._cooccurrence_alignment(
                    Z, self.labels, self.prototypes
                )
                self.centroids = self._centroids(
                    Z, self.labels, self.centroids, broadcast
                )
            epochs = self.spec["local_epochs"]
            if epochs:
                self._fit_epochs(epochs, with_prototypes=True)
        Z = self.embeddings()
        seed = child_seeds(self.kmeans_seed + round_)
        if self.centroids is None:
            km = KMeans(k, n_init=10, random_state=seed).fit(Z)
        else:
            km = KMeans(k, init=self.centroids, n_init=1, random_state=seed).fit(Z)
        labels = km.labels_
        if round_ > 0 and align:
            labels = self._cooccurrence_alignment(Z, labels, self.prototypes)
        self.labels = labels
        self.centroids = self._centroids(Z, labels, km.cluster_centers_, broadcast)
        return self._statistics(Z, labels)

    def _centroids(self, Z, labels, fallback, broadcast):
        """Means of the clusters as labelled now (the next k-means start)."""
        k = self.spec["n_clusters"]
        out = np.empty((k, Z.shape[1]))
        for j in range(k):
            members = labels == j
            if members.any():
                out[j] = Z[members].mean(axis=0)
            elif broadcast is not None and self.spec["align"]:
                out[j] = broadcast["means"][j]
            else:
                out[j] = fallback[j]
        return out

    def _cooccurrence_alignment(self, Z, labels, global_prototypes):
        """Relabel local clusters by their co-assignment with the global ones.

        Every sample also has a global cluster (its nearest global
        prototype); the contingency table of local against global clusters
        counts how often they co-occur on the same samples, and every local
        cluster takes the global cluster it co-occurs with most. (Several
        local clusters may join one global cluster: a client whose data hold
        fewer classes than ``n_clusters`` splits some of them.)
        """
        k = self.spec["n_clusters"]
        nearest = nearest_prototype(Z, global_prototypes[0])
        table = np.zeros((k, k))
        np.add.at(table, (labels, nearest), 1.0)
        return table.argmax(axis=1)[labels]

    def _statistics(self, Z, labels):
        """Each cluster's count, sum and sum of squares, with Gaussian noise."""
        k = self.spec["n_clusters"]
        onehot = np.eye(k)[labels]
        stats = {
            "counts": onehot.sum(axis=0),
            "sums": onehot.T @ Z,
            "sumsq": onehot.T @ Z**2,
        }
        sigma = self.spec["noise_multiplier"] * record_sensitivity(
            self.spec["clip_norm"]
        )
        if sigma > 0:
            stats = {
                name: value + self.noise.normal(0.0, sigma, size=value.shape)
                for name, value in stats.items()
            }
        return stats

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
        }


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
