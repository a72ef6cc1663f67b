"""Peers of bench_sheaf_admm.py: a parameter-matched CNN, the best single patch."""

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from torch import nn

from sklearn_ext.coordination import patch_grid
from sklearn_ext.utils._torch import train_loop


def count_parameters(module):
    return int(sum(p.numel() for p in module.parameters()))


class PatchCNN(nn.Module):
    """Two 3x3 convolutions, max pooling, two linear layers (about 7.7k weights)."""

    def __init__(self, n_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 4 * 4, 24), nn.ReLU(), nn.Linear(24, n_classes)
        )

    def forward(self, x):
        return self.head(self.features(x))


class FittedCNN:
    def __init__(self, module, mean, std):
        self.module, self.mean, self.std = module, mean, std

    def _images(self, X):
        X = (np.asarray(X, dtype=np.float32) - self.mean) / self.std
        return torch.as_tensor(X.reshape(-1, 1, 8, 8))

    def score(self, X, y):
        with torch.no_grad():
            pred = self.module.eval()(self._images(X)).argmax(1).numpy()
        return float(np.mean(pred == y))


def fit_cnn(X, y, seed, epochs=150, batch=128, lr=3e-3, patch_dropout=0.0):
    """Adam on the cross-entropy for ``epochs`` epochs (the package's training
    loop), minibatches, the same pixel scaling as ours.

    ``patch_dropout`` blanks each of the nine 4x4 patches of a training image
    with this probability (the augmentation ``SheafADMMClassifier`` trains
    with at the same rate), so that the peer is trained on the same data."""
    torch.manual_seed(seed)
    mean, std = float(X.mean()), float(X.std())
    net = PatchCNN(len(np.unique(y)))
    fitted = FittedCNN(net, mean, std)
    images = fitted._images(X)
    target = torch.as_tensor(y, dtype=torch.long)
    opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(seed)
    index, _ = patch_grid((8, 8), 4, 2)
    cover = torch.zeros(len(index), 64)
    cover[np.arange(len(index))[:, None], index] = 1.0
    blank = (0.0 - mean) / std
    net.train()

    def batch_loss(idx):
        views = images[idx]
        if patch_dropout > 0:
            drop = torch.rand(len(idx), len(index), generator=gen) < patch_dropout
            hidden = (drop.float() @ cover > 0).reshape(-1, 1, 8, 8)
            views = torch.where(hidden, blank, views)
        return nn.functional.cross_entropy(net(views), target[idx])

    train_loop(
        batch_loss,
        len(images),
        opt,
        batch_size=batch,
        max_iter=epochs,
        tol=-np.inf,
        n_iter_no_change=epochs + 1,
        generator=gen,
        warn_at_max_iter=False,
    )
    return fitted


class SinglePatch:
    def __init__(self, index, model):
        self.index, self.model = index, model

    def score(self, X, y):
        return self.model.score(np.asarray(X)[:, self.index], y)


def best_single_patch(X, y):
    """Logistic regression on the one patch with the best 3-fold CV accuracy."""
    index, _ = patch_grid((8, 8), 4, 2)
    best = max(
        index,
        key=lambda idx: cross_val_score(
            LogisticRegression(max_iter=2000), X[:, idx], y, cv=3
        ).mean(),
    )
    return SinglePatch(best, LogisticRegression(max_iter=2000).fit(X[:, best], y))


class CellMPNN(nn.Module):
    """Recurrent message passing on the puzzle's constraint graph (an RRN-style peer).

    The same inputs as ``CellAgentsNet``: a symbol embedding per cell (a
    position embedding too with ``position=True``), the same edges with
    their types. Each of ``n_steps`` steps
    sends a message along every edge in both directions (an MLP of the two
    ends' states and the edge type), sums the messages arriving at each cell
    and updates its state with a GRU cell fed with the cell's embedding;
    a linear readout scores each cell after every step (deep supervision,
    as for the sheaf-ADMM solver).
    """

    def __init__(
        self,
        n_symbols,
        n_cells,
        n_outputs,
        edges,
        edge_types,
        hidden,
        n_steps,
        position=False,
    ):
        super().__init__()
        edges = torch.as_tensor(np.asarray(edges, dtype=np.int64))
        types = torch.as_tensor(np.asarray(edge_types, dtype=np.int64))
        self.register_buffer("src", torch.cat([edges[:, 0], edges[:, 1]]))
        self.register_buffer("dst", torch.cat([edges[:, 1], edges[:, 0]]))
        self.register_buffer("types", torch.cat([types, types]))
        self.n_steps = n_steps
        self.given = nn.Embedding(n_symbols, hidden)
        self.position = nn.Embedding(n_cells, hidden) if position else None
        self.edge_type = nn.Embedding(int(types.max()) + 1, hidden)
        self.message = nn.Sequential(
            nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden)
        )
        self.update = nn.GRUCell(2 * hidden, hidden)
        self.readout = nn.Linear(hidden, n_outputs)

    def forward(self, cells):
        batch, n = cells.shape
        x = self.given(cells)
        if self.position is not None:
            x = x + self.position.weight
        h = x
        scores = []
        for _ in range(self.n_steps):
            pair = torch.cat([h[:, self.dst], h[:, self.src]], dim=-1)
            msg = self.message(pair) + self.edge_type(self.types)
            agg = h.new_zeros(h.shape).index_add(1, self.dst, msg)
            h = self.update(
                torch.cat([x, agg], dim=-1).reshape(batch * n, -1),
                h.reshape(batch * n, -1),
            ).reshape(batch, n, -1)
            scores.append(self.readout(h))
        return scores


def matched_mpnn(target_params, build):
    """The widest ``build(hidden)`` with at most ``target_params`` weights."""
    hidden = 4
    while count_parameters(build(hidden + 1)) <= target_params:
        hidden += 1
    return build(hidden)


def fit_cell_peer(
    build, X, y, seed, epochs, batch=32, lr=1e-2, max_grad_norm=1.0, stages=()
):
    """Train a puzzle network as the sheaf-ADMM solvers train theirs.

    The package's training loop with the solvers' settings: Adam at their
    learning rate, minibatches of their size, gradients clipped to the same
    norm, the mean cross-entropy of every step's scores (deep supervision),
    for exactly ``epochs`` epochs. ``y`` holds class indices per cell.
    ``stages``: ``(X, y, epochs)`` trained on first, in order, with the same
    network and optimiser (a curriculum, as the solver's ``warm_start`` fits
    continue theirs); ``X, y, epochs`` are the last stage.
    """
    torch.manual_seed(seed)
    net = build()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    net.train()
    for X_s, y_s, epochs_s in [*stages, (X, y, epochs)]:
        cells = torch.as_tensor(np.asarray(X_s, dtype=np.int64))
        target = torch.as_tensor(np.asarray(y_s, dtype=np.int64))

        def batch_loss(idx, cells=cells, target=target):
            scores = net(cells[idx])
            flat = target[idx].reshape(-1)
            return sum(
                nn.functional.cross_entropy(s.reshape(-1, s.shape[-1]), flat)
                for s in scores
            ) / len(scores)

        train_loop(
            batch_loss,
            len(cells),
            opt,
            batch_size=batch,
            max_iter=epochs_s,
            tol=-np.inf,
            n_iter_no_change=epochs_s + 1,
            generator=gen,
            warn_at_max_iter=False,
            max_grad_norm=max_grad_norm,
        )
    return net.eval()


def peer_scores(net, X):
    """The last step's per-cell class of each puzzle."""
    with torch.no_grad():
        scores = net(torch.as_tensor(np.asarray(X, dtype=np.int64)))[-1]
    return scores.argmax(-1).numpy()
