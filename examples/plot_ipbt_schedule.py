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
``MLPClassifier`` on the digits, with 8 members and 120 epochs each (members
train by ``partial_fit``, so momentum survives every interval and each new
learning rate reaches the running optimiser). It plots

- every member's hyperparameter schedule over training, with the best member's
  lineage (it crosses exploit steps and, when there were restarts, a
  shrink-and-perturb restart),
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

from sklearn_ext.model_selection import IPBTSearchCV, plot_schedules

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
# The hyperparameter schedules of the population
# ----------------------------------------------
# :func:`~sklearn_ext.model_selection.plot_schedules` draws every member's
# hyperparameters over training (one colour per member), the best member's
# lineage in black, and the restarts as dotted lines. Exploit steps show as
# jumps of a member onto another's value; after a restart the intervals are
# twice as long.
plot_schedules(search)
plt.tight_layout()

# %%
# Every member's validation accuracy
# ----------------------------------
fig, ax_pop = plt.subplots(figsize=(6, 4))
res = search.cv_results_
ax_pop.scatter(res["stop"], res["mean_test_score"], s=6, c=res["run"], cmap="viridis")
for run in range(1, search.n_restarts_ + 1):
    ax_pop.axvline(res["start"][res["run"] == run].min(), color="C3", ls=":")
ax_pop.set(
    xlabel="training steps per member",
    ylabel="validation accuracy",
    ylim=(max(0.0, np.nanmin(res["mean_test_score"])), 1.0),
    title="Every member at every ready step (colour: run)",
)
fig.tight_layout()
plt.show()
