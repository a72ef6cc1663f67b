"""
====================================================================
A learning-rate schedule found by Iterated Population Based Training
====================================================================

Population based training (PBT) trains a population of models side by side and,
every *ready interval*, lets the worst members copy the weights and
hyperparameters of the best ones and perturb the hyperparameters. The best
member therefore follows a hyperparameter *schedule*, not one setting.
:class:`~sklearn_ext.model_selection.IPBTSearchCV` (IPBT) also chooses the
ready interval itself: it starts with a short one and, when the population's
best validation score stalls, restarts with twice the interval, half of the new
members starting from the best weights shrunk and perturbed.

This example tunes the learning rate, momentum and L2 penalty of a small
``MLPClassifier`` on the digits, with 8 members and 120 epochs each. It plots

- the best member's learning rate over its training (its lineage crosses
  exploit steps and, when there were restarts, a shrink-and-perturb restart),
- every member's validation accuracy at every ready step, with the restarts.

It runs in about half a minute on a laptop CPU.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# The search
# ----------
import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import loguniform, uniform
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from sklearn_ext.model_selection import IPBTSearchCV

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X / 16.0, y, test_size=0.25, stratify=y, random_state=0
)
search = IPBTSearchCV(
    MLPClassifier((64,), solver="sgd", batch_size=64, random_state=0),
    {
        "learning_rate_init": loguniform(1e-4, 0.3),
        "momentum": uniform(0.0, 0.99),
        "alpha": loguniform(1e-6, 1e-1),
    },
    population_size=8,
    budget=8 * 120,
    random_state=0,
).fit(X_train, y_train)
print(f"best validation accuracy {search.best_score_:.3f}")
print(f"test accuracy of the replayed best member {search.score(X_test, y_test):.3f}")
print(f"restarts: {search.n_restarts_}, ready intervals {search.ready_intervals_}")

# %%
# The best member's schedule and the population
# ---------------------------------------------
fig, (ax_lr, ax_pop) = plt.subplots(1, 2, figsize=(11, 4))
for segment in search.best_schedule_:
    lr = segment["params"]["learning_rate_init"]
    ax_lr.hlines(lr, segment["start"], segment["stop"], color="C0", lw=2)
    if segment["weights_from"] == "shrink_perturb":
        ax_lr.axvline(segment["start"], color="C3", ls=":", label="restart")
ax_lr.set(
    yscale="log",
    xlabel="epochs of the best member's lineage",
    ylabel="learning_rate_init",
    title="Best member's learning-rate schedule",
)
if any(s["weights_from"] == "shrink_perturb" for s in search.best_schedule_):
    ax_lr.legend()

h = search.history_
ax_pop.scatter(h["stop"], h["score"], s=6, c=h["run"], cmap="viridis")
for run in range(1, search.n_restarts_ + 1):
    ax_pop.axvline(h["start"][h["run"] == run].min(), color="C3", ls=":")
ax_pop.set(
    xlabel="epochs (global)",
    ylabel="validation accuracy",
    ylim=(max(0.0, np.nanmin(h["score"])), 1.0),
    title="Every member at every ready step (colour: run)",
)
fig.tight_layout()
plt.show()
