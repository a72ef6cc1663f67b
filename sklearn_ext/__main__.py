"""Command line: ``python -m sklearn_ext list | demo [NAME] | bench [NAME]``."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import subprocess
import sys
import time
from pathlib import Path

from joblib import Parallel, delayed

__all__ = ["main"]

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


def _estimators():
    from sklearn_ext.utils.discovery import all_estimators

    return all_estimators()


def _family(cls):
    return cls.__module__.split(".")[1]


def _table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = [" | ".join(str(x).ljust(w) for x, w in zip(r, widths)) for r in [header]]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(str(x).ljust(w) for x, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def _select(name):
    estimators = _estimators()
    if name is None:
        return estimators
    chosen = [(n, c) for n, c in estimators if n.lower() == name.lower()]
    if not chosen:
        known = ", ".join(n for n, _ in estimators) or "none yet"
        raise SystemExit(_usage_error(f"unknown estimator {name!r} (known: {known})"))
    return chosen


def _usage_error(message):
    print(f"python -m sklearn_ext: {message}", file=sys.stderr)
    return 2


def cmd_list(args):
    """Print the table of estimators."""
    from sklearn_ext.base import supports_gpu

    rows = [
        (name, _family(cls), cls._paper, "yes" if supports_gpu(cls) else "no")
        for name, cls in _estimators()
    ]
    print(_table(("name", "family", "paper", "GPU"), rows))
    if not rows:
        print("(no estimators registered yet)")
    return 0


DEMO_KEYS = ("data", "metric", "score", "baseline", "baseline_score")


def demo_function(cls):
    """The demo of ``cls``: ``demo_<ClassName>`` of its family's ``_demo.py``.

    Every family keeps its demos in one module, ``sklearn_ext/<family>/_demo.py``,
    that nothing but this command line imports; its ``SECONDS`` dict holds each
    demo's measured time on one core (it orders ``make demo``, longest first).
    Returns ``(function, seconds)``.
    """
    import importlib

    module = importlib.import_module(f"sklearn_ext.{_family(cls)}._demo")
    fn = getattr(module, f"demo_{cls.__name__}", None)
    if fn is None:
        raise AttributeError(
            f"{module.__name__} has no demo_{cls.__name__}(): every registered "
            "estimator has a demo in its family's _demo.py."
        )
    return fn, float(getattr(module, "SECONDS", {}).get(cls.__name__, 10.0))


def _demo_callable(cls):
    # Families not yet moved to the _demo.py layout keep a ``_demo`` classmethod.
    try:
        return demo_function(cls)
    except (ModuleNotFoundError, AttributeError):
        if not hasattr(cls, "_demo"):
            raise
        return cls._demo, float(getattr(cls, "_demo_seconds", 10.0))


def run_demo(cls):
    """Run ``cls._demo()`` and time it.

    ``_demo()`` fits the estimator at its defaults on bundled or generated data
    and returns a dict with keys ``data``, ``metric``, ``score``, ``baseline``
    (the strongest plain scikit-learn estimator for that data, fitted on the
    same data), ``baseline_score`` and ``greater_is_better`` (how to read the
    metric). The result gains ``seconds`` and ``better`` (which of the two
    scored better: the estimator's name, ``"baseline"`` or ``"tie"``).
    """
    fn, _ = _demo_callable(cls)
    start = time.perf_counter()
    result = dict(fn())
    result["seconds"] = time.perf_counter() - start
    missing = [k for k in (*DEMO_KEYS, "greater_is_better") if k not in result]
    if missing:
        raise KeyError(f"{cls.__name__}._demo() returned no {missing}.")
    gap = float(result["score"]) - float(result["baseline_score"])
    if not result["greater_is_better"]:
        gap = -gap
    result["better"] = (
        "tie" if abs(gap) < 5e-4 else (cls.__name__ if gap > 0 else "baseline")
    )
    return result


def cmd_demo(args):
    """Run the short demo of one estimator or of all of them."""
    rows = []
    selected = list(_select(args.name))
    # The demos are independent: run them in worker processes (joblib gives
    # each worker its share of the cores), and report them in order. The
    # longest start first (a class's ``_demo_seconds``, its demo's measured
    # time on one core, default 10), so that no long demo starts last and
    # runs on alone.
    jobs = max(1, min(args.jobs, len(selected)))
    order = sorted(
        range(len(selected)),
        key=lambda i: -_demo_callable(selected[i][1])[1],
    )
    done = Parallel(n_jobs=jobs)(delayed(run_demo)(selected[i][1]) for i in order)
    results = [None] * len(selected)
    for i, r in zip(order, done):
        results[i] = r
    for (name, _), r in zip(selected, results):
        direction = "higher" if r["greater_is_better"] else "lower"
        rows.append(
            (
                name,
                r["data"],
                f"{r['metric']} ({direction} is better)",
                f"{r['score']:.3f}",
                r["baseline"],
                f"{r['baseline_score']:.3f}",
                "this method" if r["better"] == name else r["better"],
                f"{r['seconds']:.1f}",
            )
        )
        verdict = {
            name: f"{name} is better",
            "baseline": "the baseline is better",
            "tie": "a tie",
        }[r["better"]]
        print(
            f"{name}: {r['metric']} {r['score']:.3f} vs {r['baseline_score']:.3f} "
            f"for {r['baseline']} ({direction} is better: {verdict})",
            flush=True,
        )
    if not rows:
        print("No estimators are registered yet: nothing to demo.")
        return 0
    header = (
        "estimator",
        "data",
        "metric",
        "score",
        "baseline",
        "baseline score",
        "better",
        "s",
    )
    print()
    print(_table(header, rows))
    return 0


def cmd_bench(args):
    """Run ``benchmarks/bench_<name>.py`` (all of them without a name)."""
    if not BENCH_DIR.is_dir():
        return _usage_error(
            f"no benchmarks folder at {BENCH_DIR}; benchmarks run from a source "
            "checkout of sklearn_ext"
        )
    if args.name is None:
        scripts = sorted(BENCH_DIR.glob("bench_*.py"))
    else:
        stem = args.name
        for name, cls in _estimators():
            if name.lower() == args.name.lower():
                stem = cls._bench_name
        scripts = [BENCH_DIR / f"bench_{stem}.py"]
        if not scripts[0].exists():
            return _usage_error(f"{scripts[0].name} does not exist in {BENCH_DIR}")
    status = 0
    for script in scripts:
        print(f"== {script.name}", flush=True)
        status = max(status, subprocess.call([sys.executable, str(script)]))
    return status


def main(argv=None):
    """Entry point of ``python -m sklearn_ext`` and the ``sklearn-ext`` script."""
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_ext",
        description="Recent machine-learning methods as scikit-learn estimators.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="table of estimators").set_defaults(func=cmd_list)
    demo = sub.add_parser("demo", help="run the short demos beside a baseline")
    demo.add_argument("name", nargs="?", help="estimator name (default: all)")
    demo.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="demos run at once, in worker processes (default: 2)",
    )
    demo.set_defaults(func=cmd_demo)
    bench = sub.add_parser("bench", help="run benchmarks/bench_<name>.py")
    bench.add_argument("name", nargs="?", help="method or estimator (default: all)")
    bench.set_defaults(func=cmd_bench)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
