"""
========================================================================
Finding the accuracy / fit-time front without fitting every model: LAMPS
========================================================================

Eight scikit-learn classifiers compete on the digits. Which of them are worth
keeping when both the validation error and the fit time matter? The answer is
the Pareto front: the models no other model beats on both. Finding it
exhaustively means cross-validating every candidate on the whole training
set.

:class:`~sklearn_ext.model_selection.ParetoModelSelector` first fits each
candidate on 5% of the rows (a *landmark*). A policy meta-learned from the
learning curves of 20 classifiers on 248 OpenML data sets (LCDB) predicts,
from that cheap fit, how good and how slow each candidate would be on all the
rows, and fits in full only those that could still extend the front. We
compare its front and its cost with the exhaustive search and with
successive halving.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from sklearn_ext.model_selection import ParetoModelSelector
from sklearn_ext.model_selection._lamps_candidates import eight_candidates, hv_ratio

X, y = load_digits(return_X_y=True)
names = [
    "GaussianNB",
    "decision tree",
    "k-NN",
    "logistic regr.",
    "RBF SVM",
    "random forest",
    "extra trees",
    "hist. boosting",
]
runs = {
    policy: ParetoModelSelector(eight_candidates(), policy=policy, random_state=0).fit(
        X, y
    )
    for policy in ("exhaustive", "meta", "successive_halving")
}
exhaustive = runs["exhaustive"]
for policy, sel in runs.items():
    print(
        f"{policy:>18}: front {sorted(sel.pareto_front_['candidates'].tolist())}, "
        f"{sel.spent_:5.2f} s of evaluations, hypervolume ratio "
        f"{hv_ratio(sel, exhaustive):.3f}"
    )

# %%
# Where each candidate lands, and how far LAMPS took it
# -----------------------------------------------------
# Grey points are every candidate's full cross-validated (error, fit time)
# from the exhaustive search. LAMPS fitted in full only the candidates ringed
# in red; the others stopped at their first landmark, whose (error, fit time)
# is drawn as a small marker joined to the full point.
full = {h["candidate"]: h for h in exhaustive.history_}
first = {h["candidate"]: h for h in runs["meta"].history_ if h["level"] == 0}
fig, ax = plt.subplots(figsize=(6.5, 4.5))
for i, name in enumerate(names):
    f, lm = full[i], first[i]
    ax.plot([lm["fit_time"], f["fit_time"]], [lm["error"], f["error"]], "k:", lw=0.7)
    ax.scatter(lm["fit_time"], lm["error"], s=12, c="tab:blue")
    ax.scatter(f["fit_time"], f["error"], s=40, c="0.6")
    ax.annotate(name, (f["fit_time"], f["error"]), fontsize=8, xytext=(4, 3),
                textcoords="offset points")  # fmt: skip
    if runs["meta"].levels_[i] == len(runs["meta"].landmarks):
        ax.scatter(f["fit_time"], f["error"], s=110, facecolors="none", ec="tab:red")
front = exhaustive.pareto_front_["objectives"]
order = np.argsort(front[:, 1])
ax.step(front[order, 1], front[order, 0], where="post", c="tab:green", label="front")
ax.set_xscale("log")
ax.set_xlabel("fit time per fold (s, log scale)")
ax.set_ylabel("validation error")
ax.set_title("digits: 5% landmarks (blue) and full fits (grey; red = LAMPS)")
ax.legend()
fig.tight_layout()

# %%
# What it cost
# ------------
# The share of the exhaustive search's evaluation time each search spent.
fig, ax = plt.subplots(figsize=(5, 2.5))
labels = ["LAMPS", "successive halving", "exhaustive"]
shares = [runs[p].spent_ / exhaustive.spent_ for p in ("meta", "successive_halving")]
ax.barh(labels, [*shares, 1.0], color=["tab:red", "tab:orange", "0.6"])
ax.set_xlabel("evaluation time / exhaustive")
fig.tight_layout()
plt.show()

# %%
# On data this small, fit time barely grows with the rows, so landmarks cost
# nearly as much as full fits (on breast cancer LAMPS saves little); the
# savings come on data where the full fits are expensive. The user guide
# quotes the benchmark's figures.
