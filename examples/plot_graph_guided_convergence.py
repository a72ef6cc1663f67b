"""
=====================================================================
Graph-guided multi-task regression: last iterate against the average
=====================================================================

Thirty tasks (say, clients of a federated system) each fit a linear model on
their own 200 samples. A collaboration graph links tasks that are alike: here a
stochastic block model over three planted groups whose tasks share the same
true weights. :class:`~sklearn_ext.linear_model.GraphGuidedRegressor` pulls
neighbouring tasks together with the penalty
``alpha * sum_(s,t) ||w_s - w_t||``, which fuses tasks of a group.

The two stochastic solvers take steps ``eta0 / sqrt(t + 1)``. The paper behind
them proves that the *last* iterate converges at rate O~(1/sqrt(T)) without a
bounded-variance assumption; this example plots the suboptimality of the last
and of the averaged iterate of both solvers against the exact optimum, then
shows the recovered groups.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Data and the exact optimum
# --------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.linear_model import Ridge
from sklearn.metrics import adjusted_rand_score

from sklearn_ext.datasets import make_graph_multitask
from sklearn_ext.linear_model import GraphGuidedRegressor

data = make_graph_multitask(noise=6.0, group_scale=0.3, random_state=1)
X, y = data.data, data.target  # column 0 holds the task label

common = {"alpha": 0.05, "graph": data.adjacency, "task_column": 0, "tol": None}
# A long prox-SGD run of the averaged iterate gives a reference optimum (the
# tests check both solvers against cvxpy's exact optimum).
reference = GraphGuidedRegressor(
    solver="prox_sgd", max_iter=20000, average=True, random_state=0, **common
).fit(X, y)
f_star = reference.objective(X, y)

# %%
# Convergence of the last and the averaged iterate
# ------------------------------------------------
# RIP runs at its defaults (one matching of the edge colouring per iteration,
# with the memory of every edge's last subgradient) and as the textbook method
# (one uniform edge, no memory), whose edge sampling leaves a higher floor.
runs = (
    ("prox_sgd", "C0", 5000, {"solver": "prox_sgd"}),
    ("rip", "C1", 30000, {"solver": "rip"}),
    (
        "rip, textbook",
        "C2",
        30000,
        {"solver": "rip", "edge_sampling": "uniform", "edge_memory": False},
    ),
)
fig, ax = plt.subplots(figsize=(6, 4))
for name, color, iters, params in runs:
    fit = GraphGuidedRegressor(
        max_iter=iters, record_objective=True, random_state=0, **params, **common
    ).fit(X, y)
    T, last, avg = fit.objective_curve_.T
    ax.loglog(T, np.maximum(last - f_star, 1e-8), color=color, label=f"{name}, last")
    ax.loglog(
        T,
        np.maximum(avg - f_star, 1e-8),
        color=color,
        ls="--",
        label=f"{name}, average",
    )
    if name == "rip":
        model = fit
ax.set_xlabel("iteration T")
ax.set_ylabel("F(w_T) - F*")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# The graph recovers the planted groups; per-task Ridge does not
# -----------------------------------------------------------------
task = X[:, 0].astype(int)
ridge = np.array([Ridge().fit(X[task == t, 1:], y[task == t]).coef_ for t in range(30)])
for name, coef in (("graph-guided", model.coef_), ("per-task Ridge", ridge)):
    labels = KMeans(3, n_init=10, random_state=0).fit_predict(coef)
    print(
        f"{name:>15}: ARI of the task groups = "
        f"{adjusted_rand_score(data.groups, labels):.2f}"
    )
plt.show()
