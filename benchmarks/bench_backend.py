"""Overhead of sklearn_ext's torch backend against a bare torch loop and sklearn.

The same one-hidden-layer perceptron (tanh, Adam, minibatches of 200, fixed
epochs, no early stopping) is trained three ways on the same data in one process:

- sklearn_ext: the reference estimator built on ``TorchMixin`` and the shared
  ``train_loop`` (validation, seeding, float32 conversion, pickling support);
- bare torch: the same module and optimiser in a hand-written loop;
- scikit-learn's ``MLPRegressor`` (numpy, float64).

Ratios are sklearn_ext time over each anchor's time.
"""

import warnings

import torch
from _common import measure, write_results
from sklearn.datasets import make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.neural_network import MLPRegressor
from toy_estimators import ToyTorchRegressor

N_SAMPLES, N_FEATURES, HIDDEN, EPOCHS, BATCH = 20_000, 32, 64, 10, 200


def bare_torch(X, y):
    gen = torch.Generator().manual_seed(0)
    Xt = torch.tensor(X, dtype=torch.float32)
    yt = torch.tensor((y - y.mean()) / y.std(), dtype=torch.float32)[:, None]
    module = torch.nn.Sequential(
        torch.nn.Linear(N_FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1)
    )
    opt = torch.optim.Adam(module.parameters(), lr=1e-3)
    for _ in range(EPOCHS):
        perm = torch.randperm(len(Xt), generator=gen)
        for start in range(0, len(Xt), BATCH):
            idx = perm[start : start + BATCH]
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(module(Xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    with torch.no_grad():
        return module(Xt).numpy().ravel() * y.std() + y.mean()


def main():
    torch.set_num_threads(1)
    X, y = make_regression(
        N_SAMPLES, N_FEATURES, n_informative=16, noise=5.0, random_state=0
    )
    ours = ToyTorchRegressor(
        HIDDEN,
        batch_size=BATCH,
        learning_rate_init=1e-3,
        max_iter=EPOCHS,
        tol=0.0,
        n_iter_no_change=EPOCHS + 1,
        device="cpu",
        random_state=0,
    )
    mlp = MLPRegressor(
        hidden_layer_sizes=(HIDDEN,),
        activation="tanh",
        batch_size=BATCH,
        learning_rate_init=1e-3,
        max_iter=EPOCHS,
        tol=0.0,
        n_iter_no_change=EPOCHS + 1,
        shuffle=True,
        random_state=0,
    )
    candidates = {
        "sklearn_ext (TorchMixin + train_loop)": lambda: ours.fit(X, y).predict(X),
        "bare torch loop": lambda: bare_torch(X, y),
        "sklearn MLPRegressor": lambda: mlp.fit(X, y).predict(X),
    }
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, fn in candidates.items():
            stats, pred = measure(fn)
            rows.append(
                {"implementation": name, **stats, "train R2": r2_score(y, pred)}
            )
    base = rows[0]
    for row in rows:
        row["time ratio (sklearn_ext / this)"] = base["seconds"] / row["seconds"]
    write_results(
        "backend",
        rows,
        [
            "implementation",
            "seconds",
            "time ratio (sklearn_ext / this)",
            "peak_mb",
            "train R2",
        ],
        title=(
            f"Torch backend overhead: {N_SAMPLES} x {N_FEATURES} regression, "
            f"MLP({HIDDEN}), {EPOCHS} epochs, batch {BATCH}, 1 thread"
        ),
        notes=(
            "seconds: median of 3 fits+predictions; peak_mb: peak RSS growth during "
            "the call. sklearn_ext standardises y as the bare loop does; "
            "MLPRegressor does not."
        ),
    )


if __name__ == "__main__":
    main()
