"""Federated multi-view clustering with privatized Gaussian prototypes."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.cluster import KMeans

import sklearn_ext.cluster._fedmvc_protocol as protocol
from sklearn_ext.base import MultiViewMixin, TorchDeviceMixin
from sklearn_ext.cluster._fedmvc_protocol import feature_transform
from sklearn_ext.utils._docstrings import fill_doc
from sklearn_ext.utils._privacy import PrivacyLedger, calibrate_noise
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import child_seeds, import_torch, module_from_bytes
from sklearn_ext.utils._validation import check_integer_ids, column_index
from sklearn_ext.utils._views import check_views, observed_views

__all__ = ["FederatedMultiViewClustering"]


def iid_partition(n, n_clients, rng):
    """Client of every sample: a uniform split into near-equal parts."""
    client = np.empty(n, dtype=np.int64)
    for i, part in enumerate(np.array_split(rng.permutation(n), n_clients)):
        client[part] = i
    return client


def dirichlet_partition(groups, n_clients, alpha, rng, min_size, tries=100):
    """Client of every sample: each group spread in Dirichlet(alpha) shares.

    Draws until every client has at least ``min_size`` samples (at most
    ``tries`` times); None if no draw did.
    """
    n = len(groups)
    for _ in range(tries):
        client = np.empty(n, dtype=np.int64)
        for g in np.unique(groups):
            members = rng.permutation(np.flatnonzero(groups == g))
            share = rng.dirichlet(np.full(n_clients, alpha))
            cuts = np.round(np.cumsum(share)[:-1] * members.size).astype(int)
            for i, part in enumerate(np.split(members, cuts)):
                client[part] = i
        if np.bincount(client, minlength=n_clients).min() >= min_size:
            return client
    return None


@fill_doc
class FederatedMultiViewClustering(
    TransformerMixin, ClusterMixin, MultiViewMixin, TorchDeviceMixin, BaseEstimator
):
    r"""Federated deep multi-view clustering that shares only noised prototypes.

    The samples sit at several clients (institutions) that never send them.
    Each client trains its own per-view encoders into a shared embedding
    space and its own local clustering; per round it sends only, for each
    cluster, the count, sum and sum of squares of its samples' embeddings,
    with Gaussian noise (the **privatized prototypes**). The server pools
    them into global **Gaussian prototypes** (a mean and a diagonal standard
    deviation per cluster) and broadcasts those. The three parts of the
    method:

    * **Privacy** (``epsilon``, default 8). The unit of privacy is one
      sample of one client (add/remove adjacency); ``delta`` defaults to
      ``1 / n`` for a client of ``n`` samples. The guarantee covers
      **everything a client releases over the whole run**: the column sums,
      view counts and squared deviations that set the shared
      standardisation; every clipping radius (a noisy quantile of the
      per-sample norms, released as a histogram); the network training
      (DP-SGD through opacus: per-sample gradients clipped to norm 1, Poisson
      batches, Gaussian noise), so that the networks, and every embedding and
      label computed from them, depend on a sample only through noised
      quantities; and every cluster-statistics release (counts, residual
      sums and residual sums of squares about public centres, residuals
      clipped, Gaussian mechanism). With privacy a sample's cluster is its
      nearest released global prototype (one Lloyd step of the pooled
      clustering per round), a function of that sample and of released
      quantities, so that one sample changes one record of each release.
      Every release is recorded in a ledger and composed by the RDP
      accountant of Google's dp-accounting; the noise of all mechanisms is
      scaled by one factor, chosen before any data are touched so that the
      planned ledger spends ``epsilon`` (``epsilon_`` is the recorded one).
      The noise adapts per round: each release's clipping radius is the
      noisy 90% quantile of the current residual norms, so the noise follows
      the spread of the clusters as training tightens them, and a prototype's
      noise shrinks with the number of samples pooled into it. Not covered:
      what stays at the client (its own ``labels_``, networks and
      ``client_of_sample_`` in the fitted object, which the user holds).
      ``epsilon=None`` releases exact statistics (``epsilon_ = inf``) and
      lets each client cluster by k-means to convergence.
    * **Co-occurrence structural alignment.** Cluster indices are arbitrary
      on each client, and so are the clients' embedding spaces: every client
      trains its own networks, and under label skew (a client holding a few
      classes) they drift apart, so that one class sits at different places
      in different clients' spaces. Without privacy every cluster a client
      sends therefore also carries its sum of the standardised inputs (the
      views weighed alike, a missing view 0: the one space all clients
      share, set by the shared standardisation), i.e. its prototype in input
      space. Before the first pooling the server groups all clients' first
      clusters (a local k-means in input space, ``n_clusters`` per client)
      into ``n_clusters`` global clusters by k-means on these input
      prototypes, weighted by their counts (several local clusters may join
      one global cluster: a client whose data hold fewer classes than
      ``n_clusters`` splits some), and pools the embedding statistics and
      the input sums by group. In every later round a client labels its
      samples by its own k-means in its embedding space (started from its
      clusters of the last round) and also by their nearest global input
      prototype; from the contingency table of the two labelings (how often
      a local and a global cluster co-occur on the same samples) every local
      cluster takes the global cluster it co-occurs with most, and the
      client relabels its clusters, its statistics and its training targets
      accordingly, before anything is pooled. With privacy the first
      clusters are cells of shared anchors in embedding space and every
      sample takes its nearest global prototype (see above; no input sums
      are released). ``alignment=None`` pools by index as sent (the
      ablation).
    * **Wasserstein prototype contrast.** Local training minimises, per
      sample, the reconstruction of its observed views from the fused
      embedding and a prototype contrast: each local cluster of the batch,
      as a Gaussian (its mean and per-dimension spread), is classified among
      the global Gaussian prototypes by a softmax over minus their squared
      2-Wasserstein distances over ``temperature`` (closed form for
      diagonal Gaussians, :math:`\|\mu_a-\mu_b\|^2 + \|\sigma_a-\sigma_b\|^2`,
      checked against POT's Bures-Wasserstein distance in the tests), its
      own prototype the positive. ``contrast="euclidean"`` compares the
      means only (clusters as points) and ``"none"`` drops the term (the
      ablations). An optional cross-view InfoNCE (``view_weight``) contrasts
      every view's embedding with the fused ones of the batch.

    Rounds 0 and 1 agree on a shared standardisation of the columns (after
    ``asinh``, so that one clipping radius serves columns of any scale):
    pooled means, then pooled standard deviations. Round 2 pretrains every
    client's networks on its own data (reconstruction, ``pretrain_iter``)
    and pools the mean and second moments of the embeddings; round 3 sends
    the first statistics (without privacy: the clusters of a local k-means,
    grouped by the server; with privacy: the cells of anchors drawn from
    that pooled Gaussian with a seed all clients share, pooled cell by cell
    over the clients and grouped by weighted k-means); rounds ``4 .. 3 +
    rounds`` train ``local_epochs`` against the broadcast prototypes,
    recluster, align and send. All clients start from the same network
    weights (one seed, drawn from ``random_state``) and keep their own Adam
    state across rounds; nothing else ties their embedding spaces together,
    since networks never leave a client. A sample's cluster is its nearest
    final global prototype in its client's embedding space.

    **Design choices and limits** (tried during development on mfeat over 6
    clients, on the pipeline before the private standardisation and DP-SGD;
    those runs are not kept in the benchmarks): the cross-view InfoNCE is
    off by default (``view_weight=0``) because it lowered the accuracy;
    grouping the first prototypes in the 2-Wasserstein geometry (means and
    spreads) instead of by their means lowered it under label skew, and so
    did assigning samples by the prototypes' Gaussian densities instead of
    the nearest mean (the noise of a private release swamps the second
    moments); Hungarian (one-to-one) matching of the co-occurrence table
    instead of the majority rule lowered it under skew. Clients that hold
    different subsets of the views embed them differently (their networks
    are never shared), so their clusters agree less than those of clients
    with complete views. Without privacy, grouping and aligning the
    clusters by their embedding-space prototypes (as the private path does)
    left mfeat under label shards (development seeds, not the benchmark's)
    at about half the accuracy of grouping them by their input-space
    prototypes, and below the same pipeline with untrained networks (all
    clients in one space), because each client's pretraining moves its
    space away from the others'. The user guide gives the benchmark's
    figures.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.

    views : list, default=None
        The view layout of the feature columns (X without the client
        column): sizes of consecutive column blocks, or a list of column
        lists, one per view, each column a position in X without the client
        column (int) or, when ``X`` is a pandas DataFrame, a column name
        (str); see :func:`sklearn_ext.utils.check_views`. None means one view.
        A view a sample lacks is NaN in all of its columns; a view missing at
        every client is an error.

    client_column : int, str or None, default=None
        The column of X holding each sample's client id (integers). None:
        the estimator splits the samples into ``n_clients`` clients itself
        (``client_partition``).

    n_clients : int, default=4
        Number of clients when ``client_column`` is None.

    client_partition : {"iid", "dirichlet"}, default="iid"
        How the estimator splits the samples when ``client_column`` is None:
        uniformly at random, or with a label-free skew: the samples are
        grouped by k-means (``n_clusters`` groups, on the standardised,
        mean-imputed columns) and each group is spread over the clients in
        Dirichlet(``partition_alpha``) proportions. Each client gets at least
        ``n_clusters`` samples.

    partition_alpha : float, default=0.5
        Concentration of the Dirichlet partition (smaller: more skewed).

    rounds : int, default=10
        Clustering rounds after the four set-up rounds.

    local_epochs : int or "auto", default="auto"
        Epochs of local training per round; "auto" is 2 without privacy and
        0 with it (see ``pretrain_iter``).

    pretrain_iter : int or "auto", default="auto"
        Epochs of local pretraining in round 2. "auto": without privacy at
        least 200 optimiser steps and 10 epochs; with privacy none: in
        ``benchmarks/bench_fedmvc.py`` (privacy part, see the user guide)
        DP-SGD pretraining (``pretrain_iter=10``, ``local_epochs=2``) lowers
        the accuracy well below that of no training, because each client's
        gradient noise moves its embedding space away from the others'
        (untrained, every client embeds with the same shared initial
        weights, and the pooled prototypes mean the same thing everywhere).
        Set both to train with DP-SGD; the training is accounted in
        ``epsilon_`` either way.

    latent_dim : int, default=16
        Dimension of the embedding space (and of the prototypes).

    hidden_layer_sizes : tuple of int, default=(256,)
        Hidden layers of every view's encoder (reversed for its decoder).

    epsilon : float or None, default=8.0
        The privacy budget of every client over the whole run (see
        Privacy above); must be positive. None: no privacy (exact
        statistics, ``epsilon_ = inf``). Needs ``view_weight=0``.

    clip_norm : float, default=1.0
        Radius of the ball the fused embeddings are clipped to.

    delta : float or None, default=None
        The delta of every client's (epsilon, delta) guarantee, in (0, 1);
        None: ``1 / n`` for a client of ``n`` samples.

    alignment : {"cooccurrence"} or None, default="cooccurrence"
        Align the clients' cluster indices before pooling (see above), or
        not (the ablation).

    contrast : {"wasserstein", "euclidean", "none"}, default="wasserstein"
        The prototype terms of the local loss (see above).

    temperature : float, default=0.5
        Temperature of the prototype contrast's softmax over squared
        distances (the embeddings lie in a ball of radius ``clip_norm``).

    view_weight : float, default=0.0
        Weight of the cross-view contrastive term (off by default, see
        above).

    batch_size : int, default=128
        Minibatch size of local training.

    learning_rate_init : float, default=1e-3
        Adam's step size.

    backend : {"simulation", "flower", "flower-simulation"}, default="simulation"
        Where the protocol runs; all three drive the same client and server
        code through the same sequence of calls and give the same result for
        the same ``random_state`` (labels identical, prototypes equal to
        float32 round-off, the same bytes per round). ``"simulation"``:
        in-process, the fastest. ``"flower"``: Flower's Deployment Runtime on
        loopback (127.0.0.1, insecure mode, free ports): a SuperLink, one
        SuperNode per client, the ServerApp and the ClientApps are separate
        processes; a client's process loads its own data from a private
        temporary file and hands its networks and labels back to this
        process directly, and the server's process receives only the
        protocol's messages. ``"flower-simulation"``: the same ServerApp and
        ClientApp run by Flower's Simulation Runtime (Ray) in one child
        process tree. Both Flower backends need the ``federated`` extra; see
        the user guide.

    %(device)s

    random_state : int, RandomState instance or None, default=None
        Seeds the partition, the shared initial weights, every client's
        shuffling, k-means starts and noise.

    %(verbose)s

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of every training sample: its nearest final global
        prototype in its client's embedding space, which is what
        ``predict`` returns for the training rows with their client column
        (the benchmark measures the agreement; during the rounds a sample's
        training target is its aligned local cluster, which may differ).

    prototypes_ : ndarray of shape (n_clusters, latent_dim)
        Means of the final global Gaussian prototypes.

    prototype_stds_ : ndarray of shape (n_clusters, latent_dim)
        Their per-dimension standard deviations.

    client_ids_ : ndarray of shape (n_clients,)
        The clients, in the order of the per-client attributes.

    client_of_sample_ : ndarray of shape (n_samples,)
        Index (into ``client_ids_``) of every training sample's client.

    col_mean_, col_scale_ : ndarray of shape (n_clients, n_feature_columns)
        Every client's standardisation of the feature columns.

    epsilon_ : float
        The largest client epsilon (``inf`` without privacy).

    client_epsilon_, client_delta_ : ndarray of shape (n_clients,)
        Every client's epsilon over all its recorded releases, and its delta.

    privacy_report_ : list of list of dict
        Every client's ledger: per mechanism ``what``, ``kind``
        (``"gaussian"`` or ``"poisson_gaussian"``), ``noise_multiplier``,
        ``count`` and ``rate``.

    communication_bytes_ : int
        Bytes that crossed the wire in all (uploads and downloads, as
        float32 arrays).

    communication_per_round_ : list of (int, int)
        Bytes up (clients to server) and down per round; the last entry is
        the final broadcast.

    feature_bytes_ : int
        What sending the clients' feature arrays (float32) once would cost,
        for comparison.

    views_ : list of ndarray
        Column positions of every view (in X without the client column).

    module_ : torch.nn.Module
        Every client's networks, on the CPU.

    n_iter_ : int
        Communication rounds run (``rounds + 1``).

    device_ : str
        Device used for training.

    n_features_in_ : int
        Number of columns of X seen during ``fit`` (client column included).

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the columns seen during ``fit``, when ``X`` has string
        column names.

    See Also
    --------
    sklearn.cluster.KMeans : Centralised clustering of one view.
    sklearn_ext.cluster.CorrelatedVariationalIMVC : Centralised incomplete
        multi-view clustering.

    References
    ----------
    .. [1] "Federated Multi-view Clustering for Remote Sensing Data", ICML
       2026.
    .. [2] X. Chen, Y. Ren, J. Xu et al. (FMCSC), "Bridging gaps: federated
       multi-view clustering in heterogeneous hybrid views", NeurIPS 2024.
    .. [3] I. Mironov, "Renyi differential privacy", CSF 2017.

    Examples
    --------
    >>> from sklearn_ext.cluster import FederatedMultiViewClustering
    >>> from sklearn_ext.datasets import make_multiview_blobs
    >>> X, y, views = make_multiview_blobs(
    ...     200, view_sizes=(5, 5), n_clusters=3, random_state=0)
    >>> model = FederatedMultiViewClustering(
    ...     n_clusters=3, views=views, n_clients=2, rounds=2, latent_dim=4,
    ...     hidden_layer_sizes=(16,), epsilon=None, device="cpu",
    ...     random_state=0).fit(X)
    >>> model.labels_.shape, model.prototypes_.shape
    ((200,), (3, 4))
    """

    _parameter_constraints: dict = {
        **TorchDeviceMixin._parameter_constraints,
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "views": [list, tuple, None],
        "client_column": [None, Integral, str],
        "n_clients": [Interval(Integral, 1, None, closed="left")],
        "client_partition": [StrOptions({"iid", "dirichlet"})],
        "partition_alpha": [Interval(Real, 0, None, closed="neither")],
        "rounds": [Interval(Integral, 0, None, closed="left")],
        "local_epochs": [
            Interval(Integral, 0, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "pretrain_iter": [
            Interval(Integral, 0, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "latent_dim": [Interval(Integral, 1, None, closed="left")],
        "hidden_layer_sizes": [tuple, list],
        "epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "clip_norm": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither"), None],
        "alignment": [StrOptions({"cooccurrence"}), None],
        "contrast": [StrOptions({"wasserstein", "euclidean", "none"})],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "view_weight": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 2, None, closed="left")],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "backend": [StrOptions({"simulation", "flower", "flower-simulation"})],
    }

    _expected_failed_checks = {
        "check_estimators_pickle": (
            "it scatters NaN over single entries, but NaN here marks a whole "
            "missing view, so a partly-NaN view block is rejected by design"
        ),
    }
    _no_sample_weight = (
        "the released statistics are protected by bounding one sample's "
        "contribution (clipping); a sample weight would scale it and void the "
        "privacy guarantee, which needs equal records"
    )

    _paper = "Federated Multi-view Clustering for Remote Sensing Data, ICML 2026"
    _bench_name = "fedmvc"

    def __init__(
        self,
        n_clusters=8,
        *,
        views=None,
        client_column=None,
        n_clients=4,
        client_partition="iid",
        partition_alpha=0.5,
        rounds=10,
        local_epochs="auto",
        pretrain_iter="auto",
        latent_dim=16,
        hidden_layer_sizes=(256,),
        epsilon=8.0,
        clip_norm=1.0,
        delta=None,
        alignment="cooccurrence",
        contrast="wasserstein",
        temperature=0.5,
        view_weight=0.0,
        batch_size=128,
        learning_rate_init=1e-3,
        backend="simulation",
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.n_clusters = n_clusters
        self.views = views
        self.client_column = client_column
        self.n_clients = n_clients
        self.client_partition = client_partition
        self.partition_alpha = partition_alpha
        self.rounds = rounds
        self.local_epochs = local_epochs
        self.pretrain_iter = pretrain_iter
        self.latent_dim = latent_dim
        self.hidden_layer_sizes = hidden_layer_sizes
        self.epsilon = epsilon
        self.clip_norm = clip_norm
        self.delta = delta
        self.alignment = alignment
        self.contrast = contrast
        self.temperature = temperature
        self.view_weight = view_weight
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.backend = backend
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # --- input ------------------------------------------------------------------

    def _split(self, X, *, fitting):
        """(feature columns, client ids or None, observed views) from X."""
        self._refuse_view_list(X)
        if fitting:
            X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan")
        else:
            check_is_fitted(self)
            X = validate_data(
                self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=False
            )
        names = getattr(self, "feature_names_in_", None)
        if fitting:
            self.client_column_index_ = (
                None
                if self.client_column is None
                else column_index(
                    self, self.client_column, X.shape[1], param="client_column"
                )
            )
        c = self.client_column_index_
        ids = None
        if c is not None:
            ids = check_integer_ids(X[:, c], c, kind="client", owner="sample")
            X = np.delete(X, c, axis=1)
            if names is not None:
                names = np.delete(np.asarray(names, dtype=object), c)
            if X.shape[1] == 0:
                raise ValueError("X has no feature column besides the client column.")
        if fitting:
            self.views_ = check_views(self.views, X.shape[1], feature_names=names)
        observed = observed_views(X, self.views_)
        return X, ids, observed

    def _partition(self, X, rng):
        """Client index of every sample when X carries no client column."""
        n, k, m = X.shape[0], self.n_clusters, self.n_clients
        if m * k > n:
            raise ValueError(
                f"n_clients={m} clients of at least n_clusters={k} samples each "
                f"need {m * k} samples; X has {n}."
            )
        if self.client_partition == "iid":
            return iid_partition(n, m, rng)
        filled = np.where(np.isnan(X), np.nanmean(X, axis=0), X)
        filled = np.nan_to_num(filled)
        std = filled.std(axis=0)
        filled = (filled - filled.mean(axis=0)) / np.where(std > 0, std, 1.0)
        groups = KMeans(k, n_init=3, random_state=child_seeds(rng)).fit_predict(filled)
        client = dirichlet_partition(groups, m, self.partition_alpha, rng, k)
        if client is None:
            raise ValueError(
                f"A Dirichlet(partition_alpha={self.partition_alpha}) partition "
                f"gave some client fewer than n_clusters={k} samples in 100 draws; "
                "raise partition_alpha or lower n_clients."
            )
        return client

    def _check_clients(self, client, observed):
        k = self.n_clusters
        counts = np.bincount(client, minlength=len(self.client_ids_))
        small = np.flatnonzero(counts < max(k, 2))
        if small.size:
            i = small[0]
            raise ValueError(
                f"Client {self.client_ids_[i].item()!r} has {counts[i]} samples, fewer "
                f"than n_clusters={k} (and at least 2 are needed): it cannot "
                "form its local clusters. Merge small clients or lower "
                "n_clusters."
            )
        never = np.flatnonzero(~observed.any(axis=0))
        if never.size:
            raise ValueError(
                f"view(s) {never.tolist()} are missing at every client (all-NaN "
                "in every sample): the model cannot learn a view it never sees."
            )

    # --- fit --------------------------------------------------------------------

    def _client_specs(self, X, client, device, seeds):
        init_seed, *client_seeds = seeds
        common = {
            "views": [np.asarray(v) for v in self.views_],
            "device": str(device),
            "init_seed": init_seed,
            "latent_dim": self.latent_dim,
            "hidden": self._hidden_layer_sizes(),
            "clip_norm": float(self.clip_norm),
            "learning_rate": float(self.learning_rate_init),
            "n_clusters": self.n_clusters,
            "contrast": self.contrast,
            "temperature": float(self.temperature),
            "view_weight": float(self.view_weight),
            "batch_size": self.batch_size,
            "pretrain_iter": self.pretrain_iter,
            "local_epochs": self._local_epochs(),
            "private": self.epsilon is not None,
            "align": self.alignment is not None,
        }
        specs = [
            {**common, "X": X[client == i], "seed": client_seeds[i], "client": i}
            for i in range(len(self.client_ids_))
        ]
        for spec in specs:
            spec["privacy"] = self._calibrate(spec, len(spec["X"]))
        return specs

    def _local_epochs(self):
        if self.local_epochs != "auto":
            return int(self.local_epochs)
        return 0 if self.epsilon is not None else 2

    def _client_delta(self, n_samples):
        return 1.0 / n_samples if self.delta is None else float(self.delta)

    def _calibrate(self, spec, n_samples):
        """The noise multipliers that spend ``epsilon`` at this client (or None)."""
        if self.epsilon is None:
            return None
        delta = self._client_delta(n_samples)

        def plan(scale):
            return protocol.privacy_plan(
                spec, n_samples, self.rounds, protocol.privacy_multipliers(scale)
            )

        scale = calibrate_noise(plan, float(self.epsilon), delta)
        return protocol.privacy_multipliers(scale)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Run the federation and cluster every client's samples.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Views side by side (a missing view is an all-NaN block), and the
            client column when ``client_column`` is set.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        import_torch()
        if self.epsilon is not None and self.view_weight > 0:
            raise ValueError(
                "view_weight > 0 contrasts every sample with the other samples "
                "of its batch, so one sample's gradient depends on the others "
                "and per-sample clipping (DP-SGD) bounds nothing: use "
                "view_weight=0 with epsilon, or epsilon=None (no privacy)."
            )
        X, ids, observed = self._split(X, fitting=True)
        rng = np.random.RandomState(child_seeds(self.random_state))
        if ids is None:
            client = self._partition(X, rng)
            self.client_ids_ = np.arange(self.n_clients)
        else:
            self.client_ids_, client = np.unique(ids, return_inverse=True)
        self._check_clients(client, observed)
        self.client_of_sample_ = client
        ctx = self._torch_context()
        seeds = child_seeds(rng, len(self.client_ids_) + 1)
        specs = self._client_specs(X, client, ctx.device, seeds)
        server = self._server(seeds[0])
        if self.backend == "simulation":
            clients = [protocol.Client(spec) for spec in specs]
            traffic = protocol.run_simulation(clients, server, self.rounds)
            states = [c.state() for c in clients]
        else:
            from sklearn_ext.cluster._fedmvc_flower import run_flower

            # The server after the run is the server process's.
            states, server, traffic = run_flower(
                specs,
                server,
                self.rounds,
                simulation=self.backend == "flower-simulation",
            )
        broadcast = {"means": server.means, "stds": server.stds}
        self._store(states, broadcast, traffic, client, X)
        self._account(states, specs)
        self._record_device(ctx)
        return self

    def _server(self, seed):
        return protocol.Server(
            self.n_clusters,
            align=self.alignment is not None,
            views=self.views_,
            clip_norm=self.clip_norm,
            seed=seed,
            rounds=self.rounds,
            private=self.epsilon is not None,
        )

    def _account(self, states, specs):
        """Every client's epsilon from the releases it recorded."""
        deltas, epsilons, reports = [], [], []
        for state, spec in zip(states, specs):
            ledger = PrivacyLedger(list(state["ledger"]))
            delta = self._client_delta(len(spec["X"]))
            deltas.append(delta)
            epsilons.append(ledger.epsilon(delta))
            reports.append(ledger.report())
        self.client_delta_ = np.asarray(deltas)
        self.client_epsilon_ = np.asarray(epsilons)
        self.epsilon_ = float(self.client_epsilon_.max())
        self.privacy_report_ = reports

    def _store(self, states, broadcast, traffic, client, X):
        self.prototypes_ = np.asarray(broadcast["means"], dtype=np.float64)
        self.prototype_stds_ = np.asarray(broadcast["stds"], dtype=np.float64)
        module = self._build_module("module_")
        for net, state in zip(module.clients, states):
            module_from_bytes(net, state["module"])
        self.module_ = module.eval()
        self.col_mean_ = np.stack([s["col_mean"] for s in states])
        self.col_scale_ = np.stack([s["col_scale"] for s in states])
        labels = np.empty(X.shape[0], dtype=np.int64)
        for i, state in enumerate(states):
            labels[client == i] = state["labels"]
        self.labels_ = labels
        self.communication_per_round_ = [tuple(int(b) for b in t) for t in traffic]
        self.communication_bytes_ = int(sum(u + d for u, d in traffic))
        self.feature_bytes_ = int(X.size * 4)
        self.n_iter_ = self.rounds + 1

    def _build_module(self, attr):
        from sklearn_ext.cluster._fedmvc_nn import FederatedEncoders

        return FederatedEncoders(
            len(self.client_ids_),
            [len(v) for v in self.views_],
            self.latent_dim,
            self._hidden_layer_sizes(),
            self.clip_norm,
        )

    # --- inference ----------------------------------------------------------------

    def _distances(self, X, ids, observed, clients):
        """Squared distances to the global prototype means in client spaces."""
        sizes = np.cumsum([0] + [len(v) for v in self.views_])
        order = np.concatenate(self.views_)

        def run(i, rows):
            Z = (feature_transform(X[rows]) - self.col_mean_[i]) / self.col_scale_[i]
            Z = np.where(np.isnan(Z), 0.0, Z)[:, order]
            packed = np.hstack([Z, observed[rows].astype(np.float64)])

            def forward(module, batch):
                views = [batch[:, a:b] for a, b in zip(sizes[:-1], sizes[1:])]
                z = module.clients[i](views, batch[:, sizes[-1] :])
                means = batch.new_tensor(self.prototypes_)
                return (z[:, None, :] - means[None]).square().sum(2)

            return self._predict_batches(forward, packed)

        n = X.shape[0]
        if clients is None:
            total = sum(run(i, np.arange(n)) for i in range(len(self.client_ids_)))
            return total / len(self.client_ids_)
        out = np.empty((n, self.n_clusters))
        for i in np.unique(clients):
            rows = np.flatnonzero(clients == i)
            out[rows] = run(i, rows)
        return out

    def _clients_of(self, ids):
        if ids is None:
            return None
        pos = np.searchsorted(self.client_ids_, ids)
        pos = np.clip(pos, 0, len(self.client_ids_) - 1)
        unknown = self.client_ids_[pos] != ids
        if unknown.any():
            raise ValueError(
                f"Client {ids[unknown][0].item()!r} was not among the clients seen "
                f"in fit ({self.client_ids_.tolist()[:10]}); its networks do not "
                "exist."
            )
        return pos

    def transform(self, X):
        """Squared distances to the global prototypes in embedding space.

        With a client column, each sample is embedded by its client's
        networks; without one, the distances are averaged over the clients'
        networks.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            As in ``fit``.

        Returns
        -------
        D : ndarray of shape (n_samples, n_clusters)
            Squared distance of every sample's embedding to every prototype
            mean.
        """
        X, ids, observed = self._split(X, fitting=False)
        return self._distances(X, ids, observed, self._clients_of(ids))

    def predict(self, X):
        """Nearest global prototype of every sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            As in ``fit``.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Index of the nearest global prototype.
        """
        return self.transform(X).argmin(axis=1)

    def fit_predict(self, X, y=None):
        """Fit and return ``labels_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            As in ``fit``.
        y : None
            Ignored.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Cluster of every training sample.
        """
        return self.fit(X).labels_

    def get_feature_names_out(self, input_features=None):
        """Output names: ``federatedmultiviewclustering0``, ... (one per cluster).

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        ndarray of str
            One name per column of ``transform``.
        """
        check_is_fitted(self)
        prefix = type(self).__name__.lower()
        return np.asarray(
            [f"{prefix}{k}" for k in range(self.n_clusters)], dtype=object
        )

    # --- harness contract ---------------------------------------------------------

    @classmethod
    def _get_test_params(cls):
        return {
            "n_clusters": 3,
            "n_clients": 1,
            "rounds": 2,
            "local_epochs": 2,
            "pretrain_iter": 20,
            "latent_dim": 4,
            "hidden_layer_sizes": (16,),
            "epsilon": None,
            "learning_rate_init": 1e-2,
            "device": "cpu",
        }

    @classmethod
    def _gpu_check_params(cls):
        params = {
            "n_clusters": 3,
            "n_clients": 4,
            "rounds": 3,
            "local_epochs": 1,
            "pretrain_iter": 2,
            "hidden_layer_sizes": (512, 512),
            "batch_size": 1024,
            # The timing is of the non-private path (DP-SGD's per-sample
            # gradients would make the CPU side of 40,000 samples take
            # minutes); the GPU check runs DP-SGD on the device separately.
            "epsilon": None,
        }
        return params, 40_000
