"""The torch backend: its overhead, and its thread policy when cores are shared.

Part 1, overhead. The same one-hidden-layer perceptron (tanh, Adam, minibatches
of 200, fixed epochs, no early stopping) is trained three ways on the same data
in one process: sklearn_ext's reference estimator (``TorchMixin`` and the
shared ``train_loop``), the same module and optimiser in a hand-written torch
loop, and scikit-learn's ``MLPRegressor``. Ratios are sklearn_ext's time over
each anchor's.

Part 2, threads (``--part threads`` runs it alone). torch's intra-op pool
(OpenMP) spins at the end of each parallel region; when another process holds a
core, a training step of many small operations waits for a descheduled
partner thread. And the number of threads changes the order of floating-point
sums, so a thread count that follows the load gives different fits on a busy
and on an idle machine. Each fit below runs in a fresh process, idle and
beside one CPU-bound competing process, four ways:

- ``policy``: the package's default (``cpu_thread_limit``: one torch thread
  in every call, whatever the load);
- ``old policy (load)``: the package's policy before issue 54, emulated here
  (torch's threads lowered, at the start of each call, to the cores no other
  process is running on, read from ``/proc/stat``);
- ``no policy``: torch's own thread count throughout;
- ``no policy, OMP_WAIT_POLICY=PASSIVE``: threads that sleep instead of
  spinning, to show the cause (the spin-waiting) rather than to recommend it.

Each row says how many threads the fit used and whether the idle and the loaded
fit predict the same floats. The target: with the policy, a loaded fit takes at
most 2.5x its idle time, and predicts the same floats. A second table times one
Adam step of an MLP against the step's work at one and two threads, idle and
loaded: what a second thread would gain, and what it costs.

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

from sklearn_ext._claims import Claim, Ledger

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

WORKLOADS = (
    "NBCGClassifier",
    "CorrelatedVariationalIMVC",
    "ToyTorchRegressor",
    "ToyTorchRegressor, wide",
)
OLD_POLICY = "old policy (load)"
# (label, policy, extra environment)
THREAD_CONFIGS = (
    ("policy", "new", None),
    (OLD_POLICY, "old", None),
    ("no policy", "none", None),
    ("no policy, OMP_WAIT_POLICY=PASSIVE", "none", {"OMP_WAIT_POLICY": "PASSIVE"}),
)


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
    if name.startswith("ToyTorchRegressor"):
        from sklearn.datasets import make_regression
        from toy_estimators import ToyTorchRegressor

        X, y = make_regression(20_000, 64, n_informative=16, random_state=0)
        if name.endswith("wide"):
            # A large network (1024 rows x 541k parameters a step): where a
            # second thread has the most to offer.
            est = ToyTorchRegressor(8192, batch_size=1024, max_iter=3, tol=0.0)
        else:
            est = ToyTorchRegressor(256, max_iter=15, tol=0.0)
        est.set_params(n_iter_no_change=est.max_iter + 1)
        return est.set_params(device="cpu", random_state=0), X, y
    raise ValueError(name)


def _runnable_elsewhere():
    """The policy before issue 54 read this: other processes' runnable threads."""
    try:
        with open("/proc/stat") as f:
            running = next(
                int(line.split()[1]) for line in f if line.startswith("procs_running")
            )
        ours = 0
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "R":
                    ours += 1
    except (OSError, StopIteration, IndexError, ValueError):
        return 0
    return max(running - max(ours, 1), 0)


def _install_policy(policy, used):
    """Put ``policy``'s thread count in the package's place; record each count."""
    import torch

    from sklearn_ext.utils import _torch as backend

    package = backend._policy_threads

    def choose():
        if policy == "new":
            n = package()
        elif policy == "none":  # torch's own setting throughout
            n = torch.get_num_threads()
        else:  # old: the cores that no other process is running on
            n = max(1, len(os.sched_getaffinity(0)) - _runnable_elsewhere())
        used.append(min(n, torch.get_num_threads()))
        return n

    backend._policy_threads = choose


def _worker(name, policy):
    """Fit one workload in this process; print seconds, threads and a hash."""
    import hashlib

    import numpy as np

    used = []
    load = os.getloadavg()[0]
    _install_policy(policy, used)
    est, X, y = _workload(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - start
        pred = np.ascontiguousarray(est.predict(X))
    digest = hashlib.sha1(pred.tobytes()).hexdigest()[:12]
    print(
        json.dumps(
            {"seconds": seconds, "threads": max(used), "hash": digest, "load": load}
        )
    )


def _run(args, env_extra=None):
    env = {**os.environ, **(env_extra or {})}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent / "tests"), str(HERE)])
    out = subprocess.run(
        [sys.executable, __file__, *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _competitor():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _idle_and_loaded(args, env_extra=None):
    idle = _run(args, env_extra)
    busy = _competitor()
    try:
        time.sleep(0.5)
        loaded = _run(args, env_extra)
    finally:
        busy.kill()
        busy.wait()
    return idle, loaded


def threads():
    rows = []
    for name in WORKLOADS:
        for label, policy, env in THREAD_CONFIGS:
            idle, loaded = _idle_and_loaded(["--worker", name, "--policy", policy], env)
            rows.append(
                {
                    "estimator": name,
                    "threads": label,
                    "torch threads idle / loaded": f"{idle['threads']} / "
                    f"{loaded['threads']}",
                    "idle s": idle["seconds"],
                    "one competing process s": loaded["seconds"],
                    "loaded / idle": loaded["seconds"] / idle["seconds"],
                    "same predictions": "yes"
                    if idle["hash"] == loaded["hash"]
                    else "no",
                    "load average idle / loaded": f"{idle['load']:.1f} / "
                    f"{loaded['load']:.1f}",
                }
            )
            print(rows[-1], flush=True)
    for row in rows:
        old = next(
            r
            for r in rows
            if r["estimator"] == row["estimator"] and r["threads"] == OLD_POLICY
        )
        row["idle s / old policy's"] = row["idle s"] / old["idle s"]
    write_results(
        "backend_threads",
        rows,
        [
            "estimator",
            "threads",
            "torch threads idle / loaded",
            "idle s",
            "one competing process s",
            "loaded / idle",
            "idle s / old policy's",
            "same predictions",
            "load average idle / loaded",
        ],
        title="Thread policy: fits idle and beside one CPU-bound process",
        notes=(
            "Each fit in a fresh process, with torch's default thread count; the "
            "competitor is `while True: pass`. policy: the package's (one torch "
            "thread in every call, whatever the load); old policy: "
            "the package's before issue 54 (the cores no other process is "
            "running on, read from /proc/stat at the start of each call); no "
            "policy: torch's threads throughout. torch threads: the most the fit "
            "used. same predictions: the idle and the loaded fit predict the "
            "same floats, bit for bit. load average: the machine's 1-minute load "
            "when the fit began (about 0 idle and 1 loaded on a machine of its "
            "own). Target: loaded / idle <= 2.5 with the policy, and the same "
            "predictions."
        ),
    )
    second_thread()


def _sweep_worker(n_threads):
    """Seconds per Adam step of an MLP (64 -> h -> 1, 1024 rows) for several h."""
    import torch

    torch.set_num_threads(n_threads)
    load = os.getloadavg()[0]
    out = []
    for hidden in SWEEP_HIDDEN:
        gen = torch.Generator().manual_seed(0)
        X = torch.randn(1024, 64, generator=gen)
        y = torch.randn(1024, 1, generator=gen)
        net = torch.nn.Sequential(
            torch.nn.Linear(64, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)
        )
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        work = 1024 * sum(p.numel() for p in net.parameters())

        def step(net=net, opt=opt, X=X, y=y):
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(X), y).backward()
            opt.step()

        for _ in range(3):
            step()
        n_steps = max(10, int(3e9 / (6 * work)))
        start = time.perf_counter()
        for _ in range(n_steps):
            step()
        out.append({"work": work, "seconds": (time.perf_counter() - start) / n_steps})
    print(json.dumps({"load": load, "steps": out}))


SWEEP_HIDDEN = (64, 256, 1024, 2048, 4096, 8192, 16384)


def second_thread():
    """What a second thread gains or costs: step time against work, 1 and 2."""
    runs = {}
    for n in (1, 2):
        runs[n] = _idle_and_loaded(["--sweep", str(n)])
    rows = []
    for i, hidden in enumerate(SWEEP_HIDDEN):
        (one_idle, one_loaded), (two_idle, two_loaded) = (
            [r["steps"][i]["seconds"] for r in runs[n]] for n in (1, 2)
        )
        work = runs[1][0]["steps"][i]["work"]
        rows.append(
            {
                "hidden": hidden,
                "multiply-adds per step": float(work),
                "1 thread idle ms": 1e3 * one_idle,
                "2 threads idle ms": 1e3 * two_idle,
                "1 thread loaded ms": 1e3 * one_loaded,
                "2 threads loaded ms": 1e3 * two_loaded,
                "idle speed-up of 2 threads": one_idle / two_idle,
                "loaded: 2 threads / 1": two_loaded / one_loaded,
                "load average idle / loaded": " / ".join(
                    f"{max(r[k]['load'] for r in runs.values()):.1f}" for k in (0, 1)
                ),
            }
        )
    write_results(
        "backend_threads_work",
        rows,
        list(rows[0]),
        title=(
            "One Adam step of an MLP (64 -> hidden -> 1, 1024 rows) at one and two "
            "torch threads, idle and beside one CPU-bound process"
        ),
        notes=(
            "Each column from a fresh process; milliseconds per step, after 3 "
            "warm-up steps; multiply-adds per step: rows x parameters. The "
            "policy computes on one thread; this table shows what a second "
            "thread would gain on an idle machine and cost beside a busy "
            "process, from small steps to far larger ones than the package's "
            "fits take."
        ),
    )


def _policy_rows(rows):
    return [r for r in rows if r["threads"] == "policy"]


def _thread_claims():
    short = {
        "NBCGClassifier": "nbcg",
        "CorrelatedVariationalIMVC": "imvc",
        "ToyTorchRegressor": "mlp",
        "ToyTorchRegressor, wide": "wide_mlp",
    }
    claims = []
    for name, key in short.items():
        for label, tag in (("policy", ""), (OLD_POLICY, "old_"), ("no policy", "no_")):
            row = {"estimator": name, "threads": label}
            claims.append(
                Claim(f"{tag}policy_{key}_loaded", row, "loaded / idle", fmt=".2f")
            )
        claims.append(
            Claim(
                f"policy_{key}_idle_cost",
                {"estimator": name, "threads": "policy"},
                "idle s / old policy's",
                metric="idle seconds of the policy over the old policy's",
                fmt=".2f",
            )
        )
    claims += [
        Claim(
            "policy_same_predictions",
            None,
            "same predictions",
            metric="workloads whose idle and loaded fits predict the same floats",
            compute=lambda rows: sum(
                r["same predictions"] == "yes" for r in _policy_rows(rows)
            ),
        ),
        Claim(
            "old_policy_same_predictions",
            None,
            "same predictions",
            metric="workloads whose idle and loaded fits predict the same floats",
            compute=lambda rows: sum(
                r["same predictions"] == "yes"
                for r in rows
                if r["threads"] == OLD_POLICY
            ),
        ),
        Claim(
            "passive_idle_cost_max",
            None,
            "idle s / old policy's",
            metric="largest idle slowdown of OMP_WAIT_POLICY=PASSIVE",
            fmt=".1f",
            compute=lambda rows: max(
                r["idle s / old policy's"]
                for r in rows
                if r["threads"].endswith("PASSIVE")
            ),
        ),
    ]
    return claims


def _work_claims():
    best = Claim(
        "best_idle_speedup",
        None,
        "idle speed-up of 2 threads",
        metric="largest idle speed-up of a second thread over all step sizes",
        fmt=".2f",
        compute=lambda rows: max(r["idle speed-up of 2 threads"] for r in rows),
    )

    def _speedup_at(hidden):
        return Claim(
            f"idle_speedup_h{hidden}",
            {"hidden": hidden},
            "idle speed-up of 2 threads",
            fmt=".2f",
        )

    def _loaded_at(hidden):
        return Claim(
            f"loaded_two_over_one_h{hidden}",
            {"hidden": hidden},
            "loaded: 2 threads / 1",
            fmt=".2f",
        )

    return [best] + [f(h) for h in SWEEP_HIDDEN for f in (_speedup_at, _loaded_at)]


_THREADS_BUDGET = {
    "ours": "the package's thread policy, torch's default thread count, one fit "
    "per fresh process",
    "peers": "the same fits under the policy before issue 54 and without a policy",
}

LEDGER = {
    "backend": Ledger(
        "TorchMixin + train_loop (ToyTorchRegressor, the template estimator)",
        "make_regression(20000, 32), MLP(64), 10 epochs, batches of 200",
        "random_state=0; median of 3 fits after a warm-up",
        {
            "ours": "the package's estimator, one torch thread",
            "peers": "the same module and optimiser in a hand-written torch loop; "
            "scikit-learn's MLPRegressor with the same architecture and epochs",
        },
        [
            Claim("ours_seconds", 0, "seconds", fmt=".2f", timing=True),
            Claim(
                "over_bare_loop",
                1,
                "time ratio (sklearn_ext / this)",
                "time, ours / a bare torch loop",
                fmt=".2f",
                timing=True,
            ),
            Claim(
                "over_mlpregressor",
                2,
                "time ratio (sklearn_ext / this)",
                "time, ours / MLPRegressor",
                fmt=".2f",
                timing=True,
            ),
        ],
    ),
    "backend_grid_search": Ledger(
        "GridSearchCV over ToyTorchRegressor",
        "make_regression(4000, 32), 6 candidates x 3 folds",
        "random_state=0; median of 2 searches after a warm-up",
        {"ours": "n_jobs=2", "peers": "n_jobs=1"},
        [
            Claim(
                "speed_up",
                {"n_jobs": 2},
                "speed-up over n_jobs=1",
                fmt=".1f",
                timing=True,
            )
        ],
    ),
    "backend_threads": Ledger(
        "cpu_thread_limit (NBCGClassifier, CorrelatedVariationalIMVC, "
        "ToyTorchRegressor)",
        "NBCG: make_longtail_multilabel(4000, 200 features), 30 epochs; IMVC: "
        "mfeat with 30% of views masked, 30 epochs; MLP: make_regression(20000, "
        "64), hidden 256 for 15 epochs and hidden 8192 in batches of 1024 for 3",
        "random_state=0; one fit idle and one beside `while True: pass`",
        _THREADS_BUDGET,
        _thread_claims(),
    ),
    "backend_threads_work": Ledger(
        "cpu_thread_limit (one thread against two)",
        "one Adam step of an MLP 64 -> hidden -> 1 on 1024 random rows",
        "torch.Generator seed 0",
        {
            "ours": "one and two torch threads, each in a fresh process",
            "peers": "none: the table measures where a second thread pays",
        },
        _work_claims(),
    ),
}


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
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--sweep", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--policy",
        default="new",
        choices=["new", "old", "none"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--part",
        choices=["overhead", "threads", "grid"],
        help="run one part alone (default: all three)",
    )
    args = parser.parse_args()
    if args.worker:
        return _worker(args.worker, args.policy)
    if args.sweep:
        return _sweep_worker(args.sweep)
    parts = {"overhead": overhead, "threads": threads, "grid": grid_search}
    for name, part in parts.items():
        if args.part in (None, name):
            part()


if __name__ == "__main__":
    main()
