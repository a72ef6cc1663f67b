"""The torch backend: its overhead, and its thread policy when cores are shared.

Part 1, overhead. The same one-hidden-layer perceptron (tanh, Adam, minibatches
of 200, fixed epochs, no early stopping) is trained three ways on the same data
in one process: sklearn_ext's reference estimator (``TorchMixin`` and the
shared ``train_loop``), the same module and optimiser in a hand-written torch
loop, and scikit-learn's ``MLPRegressor``. Ratios are sklearn_ext's time over
each anchor's.

Part 2, threads. torch's intra-op pool (OpenMP) spins at the end of each
parallel region; when another process holds a core, a training step of many
small operations waits for a descheduled partner thread. Each fit below runs in
a fresh process, idle and beside one CPU-bound competing process, three ways:

- ``policy``: the package's default (``cpu_thread_limit``: torch's threads
  lowered, during each call, to the cores no other process is running on);
- ``no policy``: the policy switched off (torch's default threads throughout),
  what every torch estimator did before;
- ``no policy, OMP_WAIT_POLICY=PASSIVE``: threads that sleep instead of
  spinning, to show the cause (the spin-waiting) rather than to recommend it.

The target: with the policy, a loaded fit takes at most 2.5x its idle time.
Part 3 times ``GridSearchCV`` over a torch estimator with ``n_jobs=1`` and
``n_jobs=2`` (idle machine): parallel search must be faster.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

from _common import measure, write_results

HERE = Path(__file__).resolve().parent
N_SAMPLES, N_FEATURES, HIDDEN, EPOCHS, BATCH = 20_000, 32, 64, 10, 200


# --- part 1: overhead -------------------------------------------------------------


def bare_torch(X, y):
    import torch

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


def overhead():
    import torch
    from sklearn.datasets import make_regression
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import r2_score
    from sklearn.neural_network import MLPRegressor
    from toy_estimators import ToyTorchRegressor

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
            "seconds: median of 3 fits+predictions; peak_mb: peak memory of the "
            "call above the process's level before it (see _common.measure). "
            "sklearn_ext standardises y as the bare loop does; MLPRegressor does "
            "not."
        ),
    )


# --- part 2: threads --------------------------------------------------------------


def _workload(name):
    """(estimator, X, y) of a realistic fit: each method's own demo regime."""
    if name == "NBCGClassifier":
        from sklearn_ext.datasets import make_longtail_multilabel
        from sklearn_ext.multilabel import NBCGClassifier

        X, y = make_longtail_multilabel(
            n_samples=4000, n_features=200, signal=2.0, random_state=0
        )
        return NBCGClassifier(random_state=0, max_iter=30), X, y
    if name == "CorrelatedVariationalIMVC":
        from sklearn_ext.cluster import CorrelatedVariationalIMVC
        from sklearn_ext.datasets import load_mfeat, mask_views

        data = load_mfeat()
        X = mask_views(data.data, data.views, 0.3, random_state=0)
        est = CorrelatedVariationalIMVC(
            n_clusters=10, views=data.views, max_iter=30, random_state=0
        )
        return est, X, None
    if name == "ToyTorchRegressor":
        from sklearn.datasets import make_regression
        from toy_estimators import ToyTorchRegressor

        X, y = make_regression(20_000, 64, n_informative=16, random_state=0)
        est = ToyTorchRegressor(256, max_iter=15, tol=0.0, n_iter_no_change=20)
        return est.set_params(device="cpu", random_state=0), X, y
    raise ValueError(name)


def _worker(name, policy):
    """Fit one workload in this process; print its seconds as JSON."""
    import torch

    from sklearn_ext.utils import _torch as backend

    if policy == "off":  # the policy's estimate of free cores, made blind
        backend.available_cpus = lambda: os.cpu_count()
    est, X, y = _workload(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "torch_threads": torch.get_num_threads()}))


def _run_worker(name, policy, env_extra=None):
    env = {**os.environ, **(env_extra or {})}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent / "tests"), str(HERE)])
    out = subprocess.run(
        [sys.executable, __file__, "--worker", name, "--policy", policy],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def _competitor():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def threads():
    configs = [
        ("policy", "on", None),
        ("no policy", "off", None),
        ("no policy, OMP_WAIT_POLICY=PASSIVE", "off", {"OMP_WAIT_POLICY": "PASSIVE"}),
    ]
    rows = []
    for name in ("NBCGClassifier", "CorrelatedVariationalIMVC", "ToyTorchRegressor"):
        for label, policy, env in configs:
            idle = _run_worker(name, policy, env)
            busy = _competitor()
            try:
                time.sleep(0.5)
                loaded = _run_worker(name, policy, env)
            finally:
                busy.kill()
                busy.wait()
            rows.append(
                {
                    "estimator": name,
                    "threads": label,
                    "idle s": idle,
                    "one competing process s": loaded,
                    "loaded / idle": loaded / idle,
                }
            )
            print(rows[-1], flush=True)
    write_results(
        "backend_threads",
        rows,
        ["estimator", "threads", "idle s", "one competing process s", "loaded / idle"],
        title="Thread policy: fits idle and beside one CPU-bound process (2 cores)",
        notes=(
            "Each fit in a fresh process; the competitor is `while True: pass`. "
            "Target: loaded / idle <= 2.5 with the policy."
        ),
    )


# --- part 3: parallel search ------------------------------------------------------


def grid_search():
    from sklearn.datasets import make_regression
    from sklearn.model_selection import GridSearchCV
    from toy_estimators import ToyTorchRegressor

    X, y = make_regression(4000, 32, n_informative=16, noise=1.0, random_state=0)
    est = ToyTorchRegressor(
        64, max_iter=20, tol=0.0, n_iter_no_change=30, device="cpu", random_state=0
    )
    grid = {"learning_rate_init": [1e-3, 3e-3, 1e-2], "hidden": [32, 64]}
    rows = []
    for n_jobs in (1, 2):
        search = GridSearchCV(est, grid, cv=3, n_jobs=n_jobs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stats, _ = measure(lambda s=search: s.fit(X, y), repeat=2)
        rows.append({"n_jobs": n_jobs, **stats, "best score": search.best_score_})
    for row in rows:
        row["speed-up over n_jobs=1"] = rows[0]["seconds"] / row["seconds"]
    write_results(
        "backend_grid_search",
        rows,
        ["n_jobs", "seconds", "speed-up over n_jobs=1", "best score"],
        title="GridSearchCV over a torch estimator (18 fits), n_jobs=1 vs 2",
        notes="seconds: median of 2 searches after a warm-up search.",
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--policy", default="on")
    parser.add_argument("--part", choices=["overhead", "threads", "grid"])
    args = parser.parse_args()
    if args.worker:
        return _worker(args.worker, args.policy)
    parts = {"overhead": overhead, "threads": threads, "grid": grid_search}
    for name, part in parts.items():
        if args.part in (None, name):
            part()


if __name__ == "__main__":
    main()
