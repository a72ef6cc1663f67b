"""Peers of MAGICClustering for ``bench_magic.py``: TAC and plain clusterings.

TAC (Li, Hu, Peng, Lv, Fan and Peng, "Image Clustering with External
Guidance", ICML 2024) clusters images with the help of a text counterpart of
every image. Our own implementation from the paper's description, on the
embeddings the benchmark gives every method:

- **Text counterpart.** The paper retrieves WordNet nouns near each image
  and mixes their CLIP embeddings; here every image comes with descriptions,
  so its text counterpart is built from the descriptions' embeddings (each
  text view standardised and scaled to unit mean squared norm; ``text`` says
  whether the granularities are averaged, as in the training-free TAC
  concatenation, or put side by side).
- **Training-free TAC**: k-means on the image and its text counterpart
  concatenated (each block unit mean squared norm).
- **TAC**: cross-modal mutual distillation. Two cluster heads, one on the
  image features (``f``) and one on the text counterparts (``g``), give soft
  assignments ``P = f(u)`` and ``Q = g(v)`` of a batch. Every sample's
  ``N`` nearest neighbours are mined once in each modality; at every step
  each sample draws one of its image neighbours (assignment ``P~``) and one
  of its text neighbours (``Q~``). The distillation loss makes each
  modality's assignments agree with the *other* modality's assignments of
  the neighbours, at the level of clusters: the columns of ``P`` and ``Q~``
  (and of ``Q`` and ``P~``) are cluster representations, each column's
  positive its counterpart and the other clusters its negatives, in a
  softmax contrastive loss at temperature ``tau``. A confidence term trains
  both heads on the pseudo-labels of samples whose two assignments agree
  with probability above ``threshold``, and an entropy term (weight
  ``entropy_weight``) on each head's mean assignment keeps the clusters from
  collapsing into a few. Labels: the argmax of the image head (the paper
  clusters the images), or of the mean of both heads (``predict="both"``).

The plain baselines: k-means and spectral clustering (15-NN graph) on the
concatenated, standardised views.
"""

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler

__all__ = [
    "TAC_CHOSEN",
    "TAC_DEFAULTS",
    "TAC_GRID",
    "blocks",
    "concat_kmeans",
    "concat_spectral",
    "tac",
    "tac_training_free",
]


def blocks(X, views):
    """Every view standardised and scaled to unit mean squared row norm."""
    edges = np.cumsum([0, *views])
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        Z = StandardScaler().fit_transform(X[:, a:b])
        out.append(Z / np.sqrt(b - a))
    return out


def _counterpart(bl, text):
    if text == "mean":
        return np.mean(bl[1:], axis=0)
    return np.hstack(bl[1:]) / np.sqrt(len(bl) - 1)


def concat_kmeans(X, views, k, seed):
    """k-means (n_init=10) on all views concatenated, standardised."""
    Z = np.hstack(blocks(X, views))
    return KMeans(k, n_init=10, random_state=seed).fit_predict(Z)


def concat_spectral(X, views, k, seed):
    """Spectral clustering (15-NN graph) on all views concatenated, standardised."""
    Z = np.hstack(blocks(X, views))
    model = SpectralClustering(
        k, affinity="nearest_neighbors", n_neighbors=15, random_state=seed
    )
    return model.fit_predict(Z)


def tac_training_free(X, views, k, seed, text="mean"):
    """Training-free TAC: k-means on the image and its text counterpart."""
    bl = blocks(X, views)
    Z = np.hstack([bl[0], _counterpart(bl, text)])
    return KMeans(k, n_init=10, random_state=seed).fit_predict(Z)


# The search's base configuration (set from the paper's description before
# any run: the paper's neighbour count, temperature and entropy weight are not
# reproduced here); the search below ran on development seeds 100-102, never
# on the benchmark's seeds 0-4.
TAC_DEFAULTS = {
    "text": "concat",
    "n_neighbors": 10,
    "tau": 0.5,
    "entropy_weight": 5.0,
    "threshold": 0.95,
    "hidden": 256,
    "steps": 600,
    "lr": 1e-3,
    "batch_size": 256,
    "predict": "image",
}

# The search: 8 configurations (the base and 7 one-at-a-time changes), each
# on development seeds 100-102 of two data sets (``bench_magic.py --parts
# tune``); MAGIC's own development used the same seeds and a similar number of
# variants (per-granularity adapters, three weighting rules).
TAC_GRID = [
    {},
    {"text": "mean"},
    {"n_neighbors": 20},
    {"tau": 1.0},
    {"entropy_weight": 2.0},
    {"entropy_weight": 10.0},
    {"predict": "both"},
    {"steps": 300},
]


# The grid's best row (mean ACC 0.664 against 0.658 for the base, within
# noise), used by the benchmark.
TAC_CHOSEN = {"entropy_weight": 2.0}


def _head(d_in, hidden, k):
    layers = []
    if hidden:
        layers += [torch.nn.Linear(d_in, hidden), torch.nn.ReLU()]
        d_in = hidden
    layers.append(torch.nn.Linear(d_in, k))
    return torch.nn.Sequential(*layers)


def _cluster_contrast(A, B, tau):
    """Cluster-level contrastive loss between the columns of A and B (B x K)."""
    a = F.normalize(A.T, dim=1)
    b = F.normalize(B.T, dim=1)
    logits = a @ b.T / tau
    target = torch.arange(a.shape[0])
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


def _neg_entropy(P):
    m = P.mean(0)
    return (m * torch.log(m + 1e-8)).sum()


def tac(X, views, k, seed, **params):
    """TAC's cross-modal mutual distillation; returns the labels."""
    p = {**TAC_DEFAULTS, **params}
    unknown = set(p) - set(TAC_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown TAC parameter(s) {sorted(unknown)}")
    bl = blocks(X, views)
    U = bl[0] * np.sqrt(views[0])  # unit-variance columns for the head
    V = _counterpart(bl, p["text"])
    V = V / V.std(axis=0).clip(1e-12)
    n = len(U)
    nn_k = min(p["n_neighbors"], n - 1)
    nbr_u = NearestNeighbors(n_neighbors=nn_k + 1).fit(U).kneighbors(U)[1][:, 1:]
    nbr_v = NearestNeighbors(n_neighbors=nn_k + 1).fit(V).kneighbors(V)[1][:, 1:]
    gen = torch.Generator().manual_seed(int(seed))
    torch.manual_seed(int(seed))
    f = _head(U.shape[1], p["hidden"], k)
    g = _head(V.shape[1], p["hidden"], k)
    Ut = torch.as_tensor(U, dtype=torch.float32)
    Vt = torch.as_tensor(V, dtype=torch.float32)
    nbr_u = torch.as_tensor(nbr_u)
    nbr_v = torch.as_tensor(nbr_v)
    opt = torch.optim.Adam([*f.parameters(), *g.parameters()], lr=p["lr"])
    B = min(p["batch_size"], n)
    for _ in range(p["steps"]):
        idx = torch.randperm(n, generator=gen)[:B]
        pick = torch.randint(nn_k, (B, 2), generator=gen)
        iu = nbr_u[idx, pick[:, 0]]
        iv = nbr_v[idx, pick[:, 1]]
        P = F.softmax(f(Ut[idx]), dim=1)
        Q = F.softmax(g(Vt[idx]), dim=1)
        P_nb = F.softmax(f(Ut[iu]), dim=1)
        Q_nb = F.softmax(g(Vt[iv]), dim=1)
        loss = _cluster_contrast(P, Q_nb, p["tau"]) + _cluster_contrast(
            Q, P_nb, p["tau"]
        )
        with torch.no_grad():
            joint = P * Q
            joint = joint / joint.sum(1, keepdim=True).clamp_min(1e-12)
            conf, pseudo = joint.max(1)
            keep = conf > p["threshold"]
        if bool(keep.any()):
            loss = loss + F.nll_loss(torch.log(P[keep] + 1e-8), pseudo[keep])
            loss = loss + F.nll_loss(torch.log(Q[keep] + 1e-8), pseudo[keep])
        loss = loss + p["entropy_weight"] * (_neg_entropy(P) + _neg_entropy(Q))
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        P = F.softmax(f(Ut), dim=1)
        Q = F.softmax(g(Vt), dim=1)
    out = P if p["predict"] == "image" else (P + Q) / 2
    return out.argmax(1).numpy()
