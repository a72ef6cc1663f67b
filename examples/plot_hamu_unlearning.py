"""
==================================================
Forgetting a class without losing the others: HAMU
==================================================

A classifier trained on digits must forget every 3 it saw. Gradient ascent
on the 3s forgets them and damages the other digits on the way;
:class:`~sklearn_ext.unlearning.HAMUUnlearner` takes, at each step, the move
that raises the loss on the 3s by a guaranteed amount at the least cost to
the rest. Both stop when the 3s are predicted as badly as by a model that
never saw them; the model retrained without the 3s is the reference.
"""

# %%
import copy

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from sklearn_ext.unlearning import (
    HAMUUnlearner,
    UnlearnableMLPClassifier,
    forget_retain_similarity,
)

X, y = load_digits(return_X_y=True)
X, X_test, y, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
forget = y == 3
kept = y_test != 3
base = UnlearnableMLPClassifier((64,), random_state=0)
retrained = copy.deepcopy(base).fit(X[~forget], y[~forget])
fitted = HAMUUnlearner(base, max_steps=400, random_state=0).fit(X, y)

curves = {}
for label, method, step in [
    ("HAMU", "hamu", 0.2),
    ("gradient ascent", "gradient_ascent", 0.05),
    ("NegGrad+", "neggrad_plus", 0.05),
]:
    u = copy.deepcopy(fitted).set_params(
        method=method, step_size=step, target_forget_accuracy=0.0
    )
    # The retain set is passed: by default the unlearner keeps no training row.
    u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    curves[label] = u.history_
    print(
        f"{label:16s} steps {len(u.history_['forget_loss']):3d}  "
        f"forget acc {u.score(X[forget], y[forget]):.3f}  "
        f"test acc (other digits) {u.score(X_test[kept], y_test[kept]):.3f}"
    )
print(
    f"retrained        test acc (other digits) "
    f"{retrained.score(X_test[kept], y_test[kept]):.3f}"
)

fig, ax = plt.subplots(figsize=(6, 4))
for label, h in curves.items():
    ax.plot(h["forget_accuracy"], h["retain_loss"], marker=".", label=label)
ax.set_xlabel("accuracy on the forgotten 3s")
ax.set_ylabel("loss on the retained digits")
ax.invert_xaxis()
ax.legend()
fig.tight_layout()
plt.show()

# %%
# HAMU reaches the retrained model's forget accuracy (0) in a few steps with
# the retain loss nearly flat; the baselines pay for forgetting on the rest.
#
# How hard is it?
# ---------------
# Forgetting a random subset is harder than forgetting a class: every random
# row has a "twin" in the retain set whose loss gradient points the same way.
# ``forget_retain_similarity`` measures it.
model = fitted.estimator_
random_rows = np.random.default_rng(0).random(len(y)) < forget.mean()
for name, rows in [("the 3s", forget), ("a random subset", random_rows)]:
    sim = forget_retain_similarity(model, X[rows], y[rows], X[~rows], y[~rows])
    print(f"similarity of {name} to the retain set: {sim:.2f}")

# %%
# Your own torch model
# --------------------
# A network trained in plain PyTorch goes in through
# :class:`~sklearn_ext.utils.TorchModuleClassifier` (the module, its classes,
# its loss: cross-entropy on logits by default) and scikit-learn's
# ``FrozenEstimator``: the unlearner trains nothing and edits a copy, never
# the caller's network. Here a small residual network on the wine data (a
# set no benchmark uses) forgets one of the three cultivars, at the
# unlearner's defaults.
import torch
from sklearn.datasets import load_wine
from sklearn.frozen import FrozenEstimator
from sklearn.preprocessing import StandardScaler
from torch import nn

from sklearn_ext.utils import TorchModuleClassifier

W, c = load_wine(return_X_y=True)
W = StandardScaler().fit_transform(W)
W, W_test, c, c_test = train_test_split(W, c, test_size=0.3, random_state=0, stratify=c)


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(13, 64)
        self.block = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64))
        self.norm = nn.LayerNorm(64)
        self.head = nn.Linear(64, 3)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        return self.head(self.norm(h + self.block(h)))


torch.manual_seed(0)
net = Residual()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
rows, labels = torch.tensor(W, dtype=torch.float32), torch.tensor(c)
for _ in range(300):  # the user's own training loop
    opt.zero_grad()
    nn.functional.cross_entropy(net(rows), labels).backward()
    opt.step()

mine = TorchModuleClassifier(net.eval(), classes=[0, 1, 2]).fit(W, c)
gone = c == 1
others = c_test != 1
u = HAMUUnlearner(FrozenEstimator(mine), target_forget_accuracy=0.0, random_state=0)
u.fit(W, c).unlearn(W[gone], c[gone], W[~gone], c[~gone])
print(
    f"before: forget acc {mine.score(W[gone], c[gone]):.3f}, "
    f"test acc (other cultivars) {mine.score(W_test[others], c_test[others]):.3f}"
)
print(
    f"after {len(u.history_['forget_loss'])} HAMU steps: forget acc "
    f"{u.score(W[gone], c[gone]):.3f}, test acc (other cultivars) "
    f"{u.score(W_test[others], c_test[others]):.3f}; stopped: {u.stopped_reason_}"
)

# %%
# HAMU stops by itself when its hardness measure says that forgetting more
# would cost the retained classes (``stopped_reason_``); pass
# ``stop_on_infeasible=False`` to go on regardless. The caller's ``net`` is
# untouched: ``u.estimator_`` holds the unlearned copy.
