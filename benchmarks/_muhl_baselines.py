"""Peer classifiers of bench_muhl: GCN, hypergraph convolution, BrainNetCNN.

These are the benchmark's peers of :class:`~sklearn_ext.network.MuHLClassifier`
(brain-network classification). Every classifier takes the same rows as MuHL:
the lower triangle of a subject's symmetric ``n_nodes x n_nodes``
connectivity matrix without its diagonal, row by row (nilearn's
``sym_matrix_to_vec(discard_diagonal=True)`` order), followed by
``n_nodes * n_node_features`` node-feature columns (node-major). The node
count is inferred from the width; a width that fits no layout raises a
ValueError.

* :class:`GCNGraphClassifier` -- graph convolution (Kipf & Welling 2017,
  ``torch_geometric.nn.GCNConv``) on each subject's own weighted graph,
  mean + max readout, MLP head.
* :class:`HypergraphConvClassifier` -- hypergraph convolution (Bai, Zhang &
  Torr 2021, ``torch_geometric.nn.HypergraphConv``) on fixed k-NN hyperedges
  of the training-mean connectivity, mean + max readout, MLP head.
* :class:`BrainNetCNNClassifier` -- BrainNetCNN (Kawahara et al. 2017), a
  small version in plain torch: one edge-to-edge (8 filters), an
  edge-to-node (32) and a node-to-graph (``hidden``) convolution.
* :func:`logistic_anchor` -- standardised logistic regression on the rows
  themselves (the full connectivity vector and the node features), its
  ``C`` chosen by 5-fold cross-validation on the training rows.
* :func:`logistic_node_features` -- the same on the node-feature columns
  alone; :func:`logistic_functional` on the functional connectivity (the
  correlations between the regions' signal frames, each row's own).
* :class:`TunedPeer` -- one of the networks above, its configuration chosen
  among ``configs`` on a held-out (by subject) validation split of the
  training rows.

Preprocessing (learnt in ``fit`` from the training subjects only, reused by
``predict``): each edge is z-scored by its mean and standard deviation over
subjects, each (node, feature) column likewise (a standard deviation of 0
counts as 1). The graph models' node input is ``[node features, z-scored
connectivity row of the node]`` (``n_node_features + n_nodes`` values);
BrainNetCNN reads the z-scored matrix as its one input channel and the node
features next to its edge-to-node channels.

Training: Adam (the package's ``adam``, coupled L2 ``weight_decay``) on the
softmax cross-entropy of LabelEncoder-encoded labels, minibatches of
``batch_size`` subjects, at most ``max_iter`` epochs by the package's
``train_loop`` (which stops earlier once the epoch loss has not improved by
1e-4 for 10 epochs). Parameters, shuffling and dropout masks are all drawn
from one generator seeded by ``random_state`` (no global RNG), so the same
seed gives the same predictions. CPU only, threads under the package's
``cpu_thread_limit``.

References
----------
.. [1] Kipf, T. N. and Welling, M. "Semi-Supervised Classification with Graph
   Convolutional Networks", ICLR 2017.
.. [2] Bai, S., Zhang, F. and Torr, P. H. S. "Hypergraph convolution and
   hypergraph attention", Pattern Recognition 110, 2021.
.. [3] Kawahara, J., Brown, C. J., Miller, S. P., Booth, B. G., Chau, V.,
   Grunau, R. E., Zwicker, J. G. and Hamarneh, G. "BrainNetCNN: Convolutional
   neural networks for brain networks; towards predicting
   neurodevelopment", NeuroImage 146, 2017.
"""

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegressionCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, LabelEncoder, StandardScaler
from sklearn.utils import check_array
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from sklearn_ext.network._connectome import (
    connectome_width,
    infer_n_nodes,
    split_connectome,
)
from sklearn_ext.utils._torch import (
    adam,
    cpu_thread_limit,
    init_parameters,
    make_generator,
    to_tensor,
    train_loop,
)

__all__ = [
    "PEER_CONFIGS",
    "BrainNetCNNClassifier",
    "GCNGraphClassifier",
    "HypergraphConvClassifier",
    "TunedPeer",
    "logistic_anchor",
    "logistic_functional",
    "logistic_node_features",
]

_DROPOUT = 0.2
_PREDICT_BATCH = 256


_CS = np.logspace(-4, 2, 7)


def _logistic_cv():
    return LogisticRegressionCV(Cs=_CS, cv=5, max_iter=2000)


def logistic_anchor():
    """The linear anchor: logistic regression (CV'd C) on the standardised rows."""
    return make_pipeline(StandardScaler(), _logistic_cv())


def _node_columns(X, n_node_features):
    n_nodes = infer_n_nodes(X.shape[1], n_node_features, discard_diagonal=True)
    return X[:, connectome_width(n_nodes, 0) :], n_nodes


def _node_features(X, n_node_features):
    return _node_columns(X, n_node_features)[0]


def _functional(X, n_node_features):
    """Each row's correlations between its regions' frames (lower triangle)."""
    feats, n = _node_columns(X, n_node_features)
    F = feats.reshape(len(X), n, n_node_features)
    F = F - F.mean(axis=2, keepdims=True)
    F = F / np.maximum(np.linalg.norm(F, axis=2, keepdims=True), 1e-12)
    rows, cols = np.tril_indices(n, -1)
    return np.einsum("rif,rjf->rij", F, F)[:, rows, cols]


def logistic_node_features(n_node_features):
    """Logistic regression (CV'd C) on the standardised node-feature columns."""
    pick = FunctionTransformer(
        _node_features, kw_args={"n_node_features": n_node_features}
    )
    return make_pipeline(pick, StandardScaler(), _logistic_cv())


def logistic_functional(n_node_features):
    """Logistic regression (CV'd C) on each row's functional connectivity."""
    pick = FunctionTransformer(
        _functional, kw_args={"n_node_features": n_node_features}
    )
    return make_pipeline(pick, StandardScaler(), _logistic_cv())


class TunedPeer(ClassifierMixin, BaseEstimator):
    """A peer network whose configuration is chosen on a validation split.

    Each of ``configs`` (parameter dicts set on a clone of ``estimator``) is
    fitted on the training rows less a validation part (``validation_fraction``
    of the subjects, by ``groups`` when given) and scored there; the best
    configuration's model (first on ties) is kept, as MuHL keeps its model
    early-stopped on its own validation part (no refit: the budget of the
    search is then the configurations' fits alone).
    """

    def __init__(self, estimator, configs, validation_fraction=0.25, random_state=0):
        self.estimator = estimator
        self.configs = configs
        self.validation_fraction = validation_fraction
        self.random_state = random_state

    def fit(self, X, y, groups=None):
        from sklearn.model_selection import GroupShuffleSplit

        groups = np.arange(len(y)) if groups is None else np.asarray(groups)
        split = GroupShuffleSplit(
            1, test_size=self.validation_fraction, random_state=self.random_state
        )
        train, valid = next(split.split(X, y, groups))
        scores, models = [], []
        for config in self.configs:
            model = clone(self.estimator).set_params(**config)
            model.fit(X[train], y[train])
            scores.append(model.score(X[valid], y[valid]))
            models.append(model)
        best = int(np.argmax(scores))
        self.validation_scores_ = np.asarray(scores)
        self.best_params_ = dict(self.configs[best])
        self.best_estimator_ = models[best]
        self.classes_ = self.best_estimator_.classes_
        return self

    def predict_proba(self, X):
        return self.best_estimator_.predict_proba(X)

    def predict(self, X):
        return self.best_estimator_.predict(X)


# The search space of every tuned peer (the same budget for each): learning
# rate x weight decay, at the peer's default width.
PEER_CONFIGS = [
    {"learning_rate": 1e-3, "weight_decay": 1e-4},
    {"learning_rate": 3e-3, "weight_decay": 1e-4},
    {"learning_rate": 1e-3, "weight_decay": 1e-2},
]


def _dropout(x, p, generator, training):
    """Inverted dropout whose mask is drawn from ``generator`` (not the global RNG)."""
    if not training or p <= 0:
        return x
    keep = torch.rand(x.shape, generator=generator, device=x.device) >= p
    return x * keep / (1.0 - p)


def _mean_std(values):
    """Mean and standard deviation over axis 0; a zero deviation becomes 1."""
    mean = values.mean(axis=0)
    std = values.std(axis=0)
    return mean, np.where(std > 0, std, 1.0)


# --------------------------------------------------------------------------
# shared estimator logic


class _ConnectomeNetBase(ClassifierMixin, BaseEstimator):
    """fit / predict of a torch network on connectome rows (subclasses build it)."""

    def __init__(
        self,
        n_node_features=0,
        hidden=64,
        max_iter=100,
        learning_rate=1e-3,
        weight_decay=1e-4,
        batch_size=32,
        random_state=None,
    ):
        self.n_node_features = n_node_features
        self.hidden = hidden
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.random_state = random_state

    # -- input ---------------------------------------------------------

    def _split(self, X, fitting):
        X = check_array(X, dtype=np.float64)
        name = type(self).__name__
        if fitting:
            f = int(self.n_node_features)
            if f < 0:
                raise ValueError(f"{name}: n_node_features must be >= 0; got {f}.")
            n_nodes = infer_n_nodes(X.shape[1], f, discard_diagonal=True)
            if n_nodes is None:
                raise ValueError(
                    f"{name}: X has {X.shape[1]} columns, which fit no layout of "
                    f"n_nodes * (n_nodes - 1) / 2 connectivity columns plus n_nodes * "
                    f"{f} node-feature columns (n_node_features={f}). Check "
                    "n_node_features and that the diagonal is discarded."
                )
            self.n_features_in_ = X.shape[1]
            self.n_nodes_ = n_nodes
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} columns, but {name} was fitted on "
                f"{self.n_features_in_} ({self.n_nodes_} nodes, "
                f"{self.n_node_features} node feature(s))."
            )
        return split_connectome(
            X, self.n_nodes_, int(self.n_node_features), discard_diagonal=True
        )

    def _learn_scaling(self, matrices, features):
        n = self.n_nodes_
        rows, cols = np.tril_indices(n, k=-1)
        self.edge_mean_, self.edge_std_ = _mean_std(matrices[:, rows, cols])
        self.feature_mean_, self.feature_std_ = _mean_std(features)

    def _scaled(self, matrices, features):
        """Z-scored matrices (zero diagonal) and standardised node features."""
        n = self.n_nodes_
        rows, cols = np.tril_indices(n, k=-1)
        z = (matrices[:, rows, cols] - self.edge_mean_) / self.edge_std_
        Z = np.zeros_like(matrices)
        Z[:, rows, cols] = z
        Z[:, cols, rows] = z
        return Z, (features - self.feature_mean_) / self.feature_std_

    # -- fit / predict ---------------------------------------------------

    def fit(self, X, y):
        """Fit the network on connectome rows X and labels y.

        Parameters
        ----------
        X : ndarray of shape (n_subjects, n_features)
            Vectorised connectivity (lower triangle, no diagonal), then
            ``n_nodes * n_node_features`` node-feature columns.
        y : array-like of shape (n_subjects,)

        Returns
        -------
        self
        """
        for param, low in (("hidden", 1), ("max_iter", 1), ("batch_size", 1)):
            if int(getattr(self, param)) < low:
                raise ValueError(
                    f"{type(self).__name__}: {param} must be >= {low}; "
                    f"got {getattr(self, param)}."
                )
        y = np.asarray(y)
        check_classification_targets(y)
        matrices, features = self._split(X, fitting=True)
        if len(y) != matrices.shape[0]:
            raise ValueError(
                f"X has {matrices.shape[0]} rows but y has {len(y)} labels."
            )
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        if len(self.classes_) < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 classes; y has "
                f"{len(self.classes_)}."
            )
        codes = torch.as_tensor(encoder.transform(y), dtype=torch.long)
        self._learn_scaling(matrices, features)
        self._learn_structure(matrices)
        data = self._prepare(matrices, features)

        generator = make_generator(self.random_state)
        net = self._build(len(self.classes_))
        init_parameters(net, generator)
        net.generator = generator
        optimizer = adam(net.parameters(), self.learning_rate, self.weight_decay)

        def batch_loss(idx):
            return F.cross_entropy(self._forward(net, data, idx), codes[idx])

        net.train()
        with cpu_thread_limit():
            result = train_loop(
                batch_loss,
                len(codes),
                optimizer,
                batch_size=int(self.batch_size),
                max_iter=int(self.max_iter),
                generator=generator,
                warn_at_max_iter=False,
                estimator_name=type(self).__name__,
            )
        net.generator = None
        net.eval()
        self.net_ = net
        self.n_iter_ = result.n_iter
        self.loss_curve_ = result.loss_curve
        return self

    def predict_proba(self, X):
        """Class probabilities of the subjects in X (training standardisation).

        Returns
        -------
        ndarray of shape (n_subjects, n_classes)
        """
        check_is_fitted(self, "net_")
        matrices, features = self._split(X, fitting=False)
        data = self._prepare(matrices, features)
        n = matrices.shape[0]
        out = []
        with torch.no_grad(), cpu_thread_limit():
            for start in range(0, n, _PREDICT_BATCH):
                idx = torch.arange(start, min(start + _PREDICT_BATCH, n))
                out.append(torch.softmax(self._forward(self.net_, data, idx), dim=1))
        return torch.cat(out).double().numpy()

    def predict(self, X):
        """Most probable class of each subject in X."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    # -- hooks -----------------------------------------------------------

    def _learn_structure(self, matrices):
        """Anything learnt from the training graphs besides the scaling."""

    def _prepare(self, matrices, features):  # pragma: no cover - abstract
        raise NotImplementedError

    def _build(self, n_classes):  # pragma: no cover - abstract
        raise NotImplementedError

    def _forward(self, net, data, idx):  # pragma: no cover - abstract
        raise NotImplementedError


# --------------------------------------------------------------------------
# message-passing networks (GCN and hypergraph convolution)


class _GraphNet(torch.nn.Module):
    """Two convolutions (ReLU, dropout), mean + max readout, two-layer MLP head."""

    def __init__(self, conv1, conv2, hidden, n_classes):
        super().__init__()
        self.conv1 = conv1
        self.conv2 = conv2
        self.fc1 = torch.nn.Linear(2 * hidden, hidden)
        self.fc2 = torch.nn.Linear(hidden, n_classes)
        self.generator = None

    def forward(self, x, structure, weights, batch):
        from torch_geometric.nn import global_max_pool, global_mean_pool

        gen = self.generator
        h = F.relu(self.conv1(x, structure, weights))
        h = _dropout(h, _DROPOUT, gen, self.training)
        h = F.relu(self.conv2(h, structure, weights))
        h = _dropout(h, _DROPOUT, gen, self.training)
        n_graphs = int(batch[-1]) + 1
        pooled = torch.cat(
            [
                global_mean_pool(h, batch, size=n_graphs),
                global_max_pool(h, batch, size=n_graphs),
            ],
            dim=1,
        )
        h = _dropout(F.relu(self.fc1(pooled)), _DROPOUT, gen, self.training)
        return self.fc2(h)


def _node_inputs(Z, features):
    """Node inputs ``[features, z-scored connectivity row]``, one tensor (n, N, d)."""
    return to_tensor(np.concatenate([features, Z], axis=2))


class GCNGraphClassifier(_ConnectomeNetBase):
    """Graph convolutional network (Kipf & Welling 2017) on each subject's graph.

    Each subject is a graph on its ``n_nodes`` regions. Its edges are its
    nonzero connections -- with ``top_k`` set, only each node's ``top_k``
    strongest ones (by ``|A|``; the union over both end nodes, so the graph
    stays undirected). An edge's weight is ``|A_ij|`` divided by the subject's
    largest ``|A|``. The node input is ``[standardised node features, the
    node's connectivity row z-scored per edge]``. Two ``GCNConv`` layers
    (``hidden`` channels, ReLU, dropout 0.2), mean and max pooling
    concatenated, then ``Linear(2 hidden, hidden) - ReLU - dropout -
    Linear(hidden, n_classes)``.

    The GCN normalisation ``D^-1/2 (A + I) D^-1/2`` (self-loops of weight 1)
    is computed once per subject, so ``GCNConv`` runs with
    ``normalize=False``; the result is the same as its own normalisation.

    Parameters
    ----------
    n_node_features : int, default=0
    hidden : int, default=64
    max_iter : int, default=100
        Most epochs.
    learning_rate, weight_decay : float, default=1e-3, 1e-4
    batch_size : int, default=32
        Subjects (graphs) per Adam step.
    random_state : int, RandomState instance or None, default=None
    top_k : int or None, default=16
        Strongest edges kept per node (None: every nonzero connection). The
        message-passing cost grows with the edges: all ~n_nodes^2 edges of
        dense connectomes are ~6x slower at 100 nodes.
    """

    def __init__(
        self,
        n_node_features=0,
        hidden=64,
        max_iter=100,
        learning_rate=1e-3,
        weight_decay=1e-4,
        batch_size=32,
        random_state=None,
        top_k=16,
    ):
        super().__init__(
            n_node_features=n_node_features,
            hidden=hidden,
            max_iter=max_iter,
            learning_rate=learning_rate,
            weight_decay=weight_decay,
            batch_size=batch_size,
            random_state=random_state,
        )
        self.top_k = top_k

    def _learn_structure(self, matrices):
        if self.top_k is not None and int(self.top_k) < 1:
            raise ValueError(
                f"GCNGraphClassifier: top_k must be >= 1 or None; got {self.top_k}."
            )

    def _prepare(self, matrices, features):
        n_subjects, n, _ = matrices.shape
        W = np.abs(matrices)
        W[:, np.arange(n), np.arange(n)] = 0.0
        scale = W.max(axis=(1, 2), keepdims=True)
        W = W / np.where(scale > 0, scale, 1.0)
        if self.top_k is not None and int(self.top_k) < n - 1:
            k = int(self.top_k)
            top = np.argpartition(-W, k - 1, axis=2)[:, :, :k]
            keep = np.zeros(W.shape, dtype=bool)
            np.put_along_axis(keep, top, True, axis=2)
            keep |= keep.transpose(0, 2, 1)
            W = np.where(keep, W, 0.0)
        W[:, np.arange(n), np.arange(n)] = 1.0  # self-loops
        inv_sqrt = 1.0 / np.sqrt(W.sum(axis=2))
        W = W * inv_sqrt[:, :, None] * inv_sqrt[:, None, :]
        subject, src, dst = np.nonzero(W)
        counts = np.bincount(subject, minlength=n_subjects)
        ptr = np.concatenate([[0], np.cumsum(counts)])
        Z, feats = self._scaled(matrices, features)
        return {
            "x": _node_inputs(Z, feats),
            "edges": torch.as_tensor(np.stack([src, dst]), dtype=torch.long),
            "weights": to_tensor(W[subject, src, dst]),
            "ptr": ptr,
        }

    def _build(self, n_classes):
        from torch_geometric.nn import GCNConv

        d = int(self.n_node_features) + self.n_nodes_
        h = int(self.hidden)
        conv = {"normalize": False, "add_self_loops": False}
        return _GraphNet(GCNConv(d, h, **conv), GCNConv(h, h, **conv), h, n_classes)

    def _forward(self, net, data, idx):
        n = self.n_nodes_
        ptr = data["ptr"]
        idx = idx.tolist()
        parts = [(ptr[s], ptr[s + 1]) for s in idx]
        cols = torch.cat([torch.arange(a, b) for a, b in parts])
        offsets = torch.repeat_interleave(
            torch.arange(len(idx)) * n, torch.tensor([b - a for a, b in parts])
        )
        edges = data["edges"][:, cols] + offsets
        x = data["x"][idx].reshape(len(idx) * n, -1)
        batch = torch.arange(len(idx)).repeat_interleave(n)
        return net(x, edges, data["weights"][cols], batch)


class HypergraphConvClassifier(_ConnectomeNetBase):
    """Hypergraph convolution (Bai, Zhang & Torr 2021) on fixed k-NN hyperedges.

    One hyperedge per node: the node and its ``knn`` strongest neighbours in
    the training subjects' mean ``|A|`` (learnt in ``fit``, the same for
    every subject). The subject enters through the node input ``[standardised
    node features, the node's connectivity row z-scored per edge]``. Two
    ``HypergraphConv`` layers (``hidden`` channels, unit hyperedge weights,
    ReLU, dropout 0.2), mean and max pooling concatenated, then
    ``Linear(2 hidden, hidden) - ReLU - dropout - Linear(hidden, n_classes)``.

    Parameters
    ----------
    n_node_features, hidden, max_iter, learning_rate, weight_decay, \
batch_size, random_state
        As :class:`GCNGraphClassifier`.
    knn : int, default=4
        Neighbours joining each node's hyperedge (at most ``n_nodes - 1``).

    Attributes
    ----------
    hyperedges_ : ndarray of shape (n_nodes, knn + 1)
        Row i: the members of hyperedge i (node i first).
    """

    def __init__(
        self,
        n_node_features=0,
        hidden=64,
        max_iter=100,
        learning_rate=1e-3,
        weight_decay=1e-4,
        batch_size=32,
        random_state=None,
        knn=4,
    ):
        super().__init__(
            n_node_features=n_node_features,
            hidden=hidden,
            max_iter=max_iter,
            learning_rate=learning_rate,
            weight_decay=weight_decay,
            batch_size=batch_size,
            random_state=random_state,
        )
        self.knn = knn

    def _learn_structure(self, matrices):
        n = self.n_nodes_
        k = int(self.knn)
        if not 1 <= k <= n - 1:
            raise ValueError(
                f"HypergraphConvClassifier: knn must be between 1 and n_nodes - 1 "
                f"= {n - 1}; got {self.knn}."
            )
        strength = np.abs(matrices).mean(axis=0)
        strength[np.arange(n), np.arange(n)] = -np.inf
        # Stable sort on the negated strength: ties go to the lower index.
        neighbours = np.argsort(-strength, axis=1, kind="stable")[:, :k]
        self.hyperedges_ = np.concatenate([np.arange(n)[:, None], neighbours], axis=1)

    def _prepare(self, matrices, features):
        Z, feats = self._scaled(matrices, features)
        n, m = self.hyperedges_.shape
        # Incidence of the largest batch; a batch of B graphs uses its first
        # B * n * m entries (graph b's nodes and hyperedges offset by b * n).
        size = max(int(self.batch_size), _PREDICT_BATCH)
        nodes = self.hyperedges_.ravel()
        edges = np.repeat(np.arange(n), m)
        offsets = np.repeat(np.arange(size) * n, n * m)
        incidence = np.stack([np.tile(nodes, size), np.tile(edges, size)]) + offsets
        return {
            "x": _node_inputs(Z, feats),
            "incidence": torch.as_tensor(incidence, dtype=torch.long),
        }

    def _build(self, n_classes):
        from torch_geometric.nn import HypergraphConv

        d = int(self.n_node_features) + self.n_nodes_
        h = int(self.hidden)
        return _GraphNet(HypergraphConv(d, h), HypergraphConv(h, h), h, n_classes)

    def _forward(self, net, data, idx):
        n, m = self.hyperedges_.shape
        b = len(idx)
        x = data["x"][idx].reshape(b * n, -1)
        incidence = data["incidence"][:, : b * n * m]
        batch = torch.arange(b).repeat_interleave(n)
        return net(x, incidence, None, batch)


# --------------------------------------------------------------------------
# BrainNetCNN


class _EdgeToEdge(torch.nn.Module):
    """Cross-shaped filter: row (1 x n) plus column (n x 1) responses, broadcast."""

    def __init__(self, c_in, c_out, n):
        super().__init__()
        self.row = torch.nn.Conv2d(c_in, c_out, (1, n))
        self.col = torch.nn.Conv2d(c_in, c_out, (n, 1))

    def forward(self, x):
        # (B, c, n, 1) + (B, c, 1, n): entry (i, j) sums row i's and column j's.
        return self.row(x) + self.col(x)


class _BrainNetCNN(torch.nn.Module):
    def __init__(self, n, n_features, e2e, e2n, hidden, n_classes):
        super().__init__()
        self.e2e = _EdgeToEdge(1, e2e, n)
        self.e2n = torch.nn.Conv2d(e2e, e2n, (1, n))
        self.n2g = torch.nn.Conv2d(e2n + n_features, hidden, (n, 1))
        self.out = torch.nn.Linear(hidden, n_classes)
        self.generator = None

    def forward(self, Z, features):
        gen, train = self.generator, self.training
        act = lambda t: F.leaky_relu(t, 0.33)  # noqa: E731 - the paper's slope
        h = act(self.e2e(Z))  # (B, e2e, n, n)
        h = act(self.e2n(h))  # (B, e2n, n, 1)
        if features is not None:
            h = torch.cat([h, features], dim=1)
        h = _dropout(h, _DROPOUT, gen, train)
        h = act(self.n2g(h)).flatten(1)  # (B, hidden)
        h = _dropout(h, _DROPOUT, gen, train)
        return self.out(h)


class BrainNetCNNClassifier(_ConnectomeNetBase):
    """BrainNetCNN (Kawahara et al. 2017) in plain torch.

    Input: the connectivity matrix z-scored per edge (training mean and
    standard deviation), one channel. One edge-to-edge layer (8 cross-shaped
    filters: a ``1 x n`` convolution over rows plus an ``n x 1`` over columns,
    summed and broadcast back to ``n x n``), an edge-to-node layer (32 ``1 x
    n`` filters), the standardised node features appended as extra channels
    of every node, a node-to-graph layer (``hidden`` ``n x 1`` filters), then
    ``Linear(hidden, n_classes)``. Leaky ReLU (slope 0.33, as in the paper)
    after every convolution; dropout 0.2 before and after node-to-graph.

    Parameters
    ----------
    n_node_features, hidden, max_iter, learning_rate, weight_decay, \
batch_size, random_state
        As :class:`GCNGraphClassifier`.
    """

    # The edge-to-node layer on the (B, E2E, n, n) maps costs most (~E2E * E2N
    # * n^2 per subject): 16 E2E channels took ~0.9 s an epoch at 400 subjects
    # x 100 nodes on one CPU thread, 8 take ~0.5 s with the same accuracy on
    # the scratch data. (The paper's network is larger: two E2E layers of 32
    # filters, 64 E2N, 256 N2G and two hidden dense layers.)
    _E2E = 8
    _E2N = 32

    def _prepare(self, matrices, features):
        Z, feats = self._scaled(matrices, features)
        return {
            "Z": to_tensor(Z[:, None]),
            # (n, f, N, 1): a channel per feature, next to the E2N channels.
            "features": to_tensor(feats.transpose(0, 2, 1)[..., None]),
        }

    def _build(self, n_classes):
        return _BrainNetCNN(
            self.n_nodes_,
            int(self.n_node_features),
            self._E2E,
            self._E2N,
            int(self.hidden),
            n_classes,
        )

    def _forward(self, net, data, idx):
        features = data["features"][idx] if self.n_node_features else None
        return net(data["Z"][idx], features)
