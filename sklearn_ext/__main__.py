"""Command line: ``python -m sklearn_ext list | demo [NAME] | bench [NAME]``.

``demo --list`` lists the demos without running them; ``demo --verbose`` adds
the data, the baseline and how to read the metric under each row.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import gc
import importlib
import os
import shutil
import subprocess
import sys
import textwrap
import threading
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


# --- demo ----------------------------------------------------------------------

DEMO_KEYS = ("data", "metric", "score", "baseline", "baseline_score")
WIDTH = 100  # columns the demo's table and listing keep to
# Thread pools a demo's worker keeps to one thread (read when a library loads;
# threadpoolctl limits those already loaded), and HF tokenizers' own pool.
_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "RAYON_NUM_THREADS",
)
# The heavy libraries that most demos import (torch, and the torch._dynamo
# that its optimisers load, about 3 s on one core): ``make demo`` imports them
# once in its own process, which then forks a process per demo.
_PRELOAD = ("torch", "torch._dynamo")


def demo_function(cls):
    """The demo of ``cls``: ``demo_<ClassName>`` of its family's ``_demo.py``.

    Every family keeps its demos in one module, ``sklearn_ext/<family>/_demo.py``,
    that nothing but this command line (and the test harness that runs the
    demos) imports; its ``SECONDS`` dict holds each demo's measured time on
    one core (run alone, imports included), which orders ``make demo``
    (longest first) and which ``demo --list`` shows. Returns
    ``(function, seconds)``.
    """
    module = importlib.import_module(f"sklearn_ext.{_family(cls)}._demo")
    fn = getattr(module, f"demo_{cls.__name__}", None)
    if fn is None:
        raise AttributeError(
            f"{module.__name__} has no demo_{cls.__name__}(): every registered "
            "estimator has a demo in its family's _demo.py."
        )
    seconds = getattr(module, "SECONDS", {}).get(cls.__name__)
    if seconds is None:
        raise AttributeError(
            f"{module.__name__}.SECONDS has no entry {cls.__name__!r}: give the "
            "demo's measured seconds on one core."
        )
    return fn, float(seconds)


def run_demo(cls):
    """Run the demo of ``cls`` (see :func:`demo_function`) and time it.

    The demo fits the estimator at its defaults on bundled or generated data
    and returns a dict with keys ``data`` (what the data are), ``metric``,
    ``score``, ``baseline`` (the strongest plain scikit-learn estimator for
    that data, fitted on the same data), ``baseline_score`` and
    ``greater_is_better`` (how to read the metric); it may add further
    figures (shown under ``--verbose``). The result gains ``seconds`` (wall),
    ``cpu_seconds`` (CPU time of this process) and ``better`` (which of the
    two scored better: the estimator's name, ``"baseline"`` or ``"tie"``).
    """
    fn, _ = demo_function(cls)
    wall, cpu = time.perf_counter(), time.process_time()
    result = dict(fn())
    result["seconds"] = time.perf_counter() - wall
    result["cpu_seconds"] = time.process_time() - cpu
    missing = [k for k in (*DEMO_KEYS, "greater_is_better") if k not in result]
    if missing:
        raise KeyError(f"demo_{cls.__name__}() returned no {missing}.")
    gap = float(result["score"]) - float(result["baseline_score"])
    if not result["greater_is_better"]:
        gap = -gap
    result["better"] = (
        "tie" if abs(gap) < 5e-4 else (cls.__name__ if gap > 0 else "baseline")
    )
    return result


def _demo_task(name, cls):
    """``(name, result, error)`` of one demo; the error is a string, never raised.

    The demo keeps to one thread: numpy's BLAS, OpenMP, the Hugging Face
    tokenizers and torch (whose thread policy reads the OpenMP setting). So
    parallel demos never oversubscribe the cores, a demo's CPU time is its
    time on one core, and its figures are the same on every machine, alone
    or beside others. It runs in a worker process of ``make demo``, or in the
    command line's own process for one demo.
    """
    _one_thread_environment()
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        try:
            return name, run_demo(cls), None
        except ImportError as exc:  # a demo that needs an optional extra
            return name, None, f"skipped: {exc}"
        except Exception as exc:
            return name, None, f"error: {type(exc).__name__}: {exc}"


def _one_thread_environment():
    """Set the variables that keep a demo's libraries to one thread."""
    for variable in _THREAD_VARIABLES:
        os.environ[variable] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    # Hugging Face's own progress bars would cut through the table.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _preload():
    """Import :data:`_PRELOAD` here, under the demos' one-thread settings.

    The processes forked afterwards share the imported modules, so the demos
    do not import them again one process each (about 3 s on one core). Only
    imports: nothing computes here, so no thread pool starts before a fork.
    The environment is restored afterwards (the libraries have read it); a
    library that is missing is left to the demo that needs it to report.
    """
    keys = (
        *_THREAD_VARIABLES,
        "TOKENIZERS_PARALLELISM",
        "HF_HUB_DISABLE_PROGRESS_BARS",
    )
    saved = {key: os.environ.get(key) for key in keys}
    _one_thread_environment()
    try:
        for module in _PRELOAD:
            try:
                importlib.import_module(module)
            except Exception:  # an optional extra: its demo says it is skipped
                pass
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _forked_task(writer, name, cls):
    """Run :func:`_demo_task` in a forked process and send its outcome back."""
    try:
        outcome = _demo_task(name, cls)
        try:
            writer.send(outcome)
        except Exception as exc:  # a result that does not pickle
            writer.send((name, None, f"error: {type(exc).__name__}: {exc}"))
    finally:
        writer.close()


def _forked(order, jobs, progress):
    """The demos, ``jobs`` at a time, each in a process forked from this one.

    A fresh process per demo, so no demo sees what an earlier one left
    behind, and a fork costs milliseconds where a new interpreter would
    import scikit-learn and the package again. After the first fork this
    process imports the heavy libraries (:func:`_preload`) while that demo
    runs, so every later demo starts with them loaded; the first to start is
    therefore the longest demo of an estimator that does not compute with
    torch (the others keep their order). Yields ``(name, result, error)`` as
    the demos finish.
    """
    import multiprocessing
    from multiprocessing.connection import wait

    from sklearn_ext.base import is_torch_estimator

    context = multiprocessing.get_context("fork")
    queue, running, preloaded = list(order), {}, False
    first = next((d for d in queue if not is_torch_estimator(d[1])), None)
    if first is not None:
        queue.remove(first)
        queue.insert(0, first)
    while queue or running:
        while queue and len(running) < jobs:
            name, cls = queue.pop(0)
            reader, writer = context.Pipe(duplex=False)
            # No buffered output for the child to write a second time, and no
            # progress line half drawn by the drawing thread while forking.
            with progress.lock:
                sys.stdout.flush()
                sys.stderr.flush()
                # What this process holds is never garbage in the child: kept
                # out of the child's collections, which would otherwise walk
                # (and so copy) every page of it. Frozen for the fork only.
                gc.freeze()
                process = context.Process(
                    target=_forked_task, args=(writer, name, cls), daemon=True
                )
                process.start()
                gc.unfreeze()
            writer.close()
            running[reader] = (name, process)
            progress.started(name)
            if not preloaded:
                _preload()
                preloaded = True
        reader = wait(list(running))[0]  # one at a time: each frees a place
        name, process = running.pop(reader)
        try:
            outcome = reader.recv()
        except EOFError:  # the process died without an answer
            process.join()
            outcome = (
                name,
                None,
                f"error: its process exited with code {process.exitcode}",
            )
        reader.close()
        process.join()
        yield outcome


def _number(x):
    x = float(x)
    return f"{x:.3f}" if abs(x) < 1e4 else f"{x:.3g}"


class _DemoTable:
    """The demo table, written one row at a time within ``WIDTH`` columns."""

    def __init__(self, names, verbose):
        self.verbose = verbose
        name = max([4, *map(len, names)])
        fixed = [("ours", 8, ">"), ("baseline", 8, ">"), ("verdict", 8, "<")]
        fixed.append(("seconds", 7, ">"))
        metric = WIDTH - name - sum(w for _, w, _ in fixed) - 2 * (len(fixed) + 1)
        self.columns = [("name", name, "<"), ("metric", metric, "<"), *fixed]

    def _line(self, cells):
        parts = [f"{c:{a}{w}}" for c, (_, w, a) in zip(cells, self.columns)]
        return "  ".join(parts).rstrip()

    def header(self):
        return "\n".join(
            [
                self._line([c for c, _, _ in self.columns]),
                self._line(["-" * w for _, w, _ in self.columns]),
            ]
        )

    def row(self, name, result, error):
        """The lines of one demo's row (its metric or error wraps in its column)."""
        width = self.columns[1][1]
        if error is not None:
            text, cells = error, ["-", "-", error.split(":")[0], ""]
        else:
            verdict = {name: "ours", "baseline": "baseline", "tie": "tie"}
            text = result["metric"]
            cells = [
                _number(result["score"]),
                _number(result["baseline_score"]),
                verdict[result["better"]],
                f"{result['seconds']:.1f}",
            ]
        wrapped = textwrap.wrap(text, width) or [""]
        lines = [self._line([name, wrapped[0], *cells])]
        lines += [self._line(["", more]) for more in wrapped[1:]]
        if self.verbose and error is None:
            lines += self._details(result)
        return "\n".join(lines)

    def _details(self, result):
        direction = "higher" if result["greater_is_better"] else "lower"
        details = [
            ("data", result["data"]),
            ("baseline", result["baseline"]),
            ("metric", f"{result['metric']} ({direction} is better)"),
        ]
        details += [
            (key, _number(value) if isinstance(value, float) else str(value))
            for key, value in result.items()
            if key
            not in {*DEMO_KEYS, "greater_is_better", "better", "seconds", "cpu_seconds"}
        ]
        details.append(("cpu", f"{result['cpu_seconds']:.1f} s"))
        lines = []
        for key, text in details:
            lines += textwrap.wrap(
                f"{key}: {text}",
                WIDTH,
                initial_indent="    ",
                subsequent_indent="      ",
            )
        return lines


class _Progress:
    """A line on stderr naming the demos still running, redrawn every second.

    Drawn only when stderr is a terminal, so that a log or a pipe gets the
    table alone; ``write`` clears the line, prints to stdout and redraws it.
    """

    def __init__(self, total, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total, self.done, self.running = total, 0, {}
        self.start = time.perf_counter()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        if self.live:
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self):
        while not self.stop.wait(1.0):
            with self.lock:
                self._draw()

    def _draw(self):
        if not self.live or not self.running:
            return
        now = time.perf_counter()
        names = ", ".join(
            f"{n} {now - t:.0f}s" for n, t in sorted(self.running.items())
        )
        waiting = self.total - self.done - len(self.running)
        line = (
            f"running {names} | {self.done}/{self.total} done, {waiting} waiting"
            f" | {now - self.start:.0f} s"
        )
        columns = shutil.get_terminal_size((WIDTH, 24)).columns - 1
        self.stream.write("\r\033[K" + line[:columns])
        self.stream.flush()

    def _clear(self):
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def started(self, name):
        with self.lock:
            self.running[name] = time.perf_counter()
            self._draw()

    def finished(self, name, text):
        with self.lock:
            self.running.pop(name, None)
            self.done += 1
            self._clear()
            print(text, flush=True)
            self._draw()

    def close(self):
        self.stop.set()
        with self.lock:
            self._clear()


def _list_demos(demos):
    """Print name, data and expected seconds of each demo, without running them."""
    name_width = max([4, *(len(name) for name, *_ in demos)])
    data_width = WIDTH - name_width - 7 - 4
    print(f"{'name':<{name_width}}  {'data':<{data_width}}  seconds")
    print(f"{'-' * name_width}  {'-' * data_width}  -------")
    for name, _, fn, seconds in demos:
        summary = (fn.__doc__ or "").strip().split("\n\n")[0].rstrip(".")
        lines = textwrap.wrap(" ".join(summary.split()), data_width) or [""]
        print(f"{name:<{name_width}}  {lines[0]:<{data_width}}  {seconds:>7.0f}")
        for more in lines[1:]:
            print(f"{'':<{name_width}}  {more}")
    total, n = sum(seconds for *_, seconds in demos), len(demos)
    print(
        f"\n{n} demo{'s' if n != 1 else ''}, {total:.0f} s in all "
        "(seconds: each demo's measured time on one core)."
    )
    return 0


def cmd_demo(args):
    """Run the short demo of one estimator or of all of them."""
    selected = _select(args.name)
    if not selected:
        print("No estimators are registered yet: nothing to demo.")
        return 0
    demos = [(name, cls, *demo_function(cls)) for name, cls in selected]
    if args.list:
        return _list_demos(demos)
    if args.jobs < 1:
        return _usage_error(f"--jobs must be at least 1, got {args.jobs}")
    # The longest start first (SECONDS, measured on one core), so that no long
    # demo starts last and runs on alone.
    order = [d[:2] for d in sorted(demos, key=lambda d: (-d[3], d[0]))]
    jobs = min(args.jobs, len(order))
    table = _DemoTable([name for name, _ in order], args.verbose)
    print(table.header(), flush=True)
    progress = _Progress(len(order))
    verdicts, start = {}, time.perf_counter()
    try:
        queue = []
        if jobs == 1:
            results = _in_process(order, progress)
        elif sys.platform.startswith("linux"):
            # A forked process per demo, each on one thread; rows come as
            # demos finish.
            results = _forked(order, jobs, progress)
        else:
            # Where fork is unsafe (macOS, Windows): worker processes of
            # their own interpreter, each on one thread. The task is looked up
            # in the importable module so that it is pickled by reference,
            # also under ``python -m sklearn_ext``.
            task = importlib.import_module("sklearn_ext.__main__")._demo_task
            results = Parallel(
                n_jobs=jobs, return_as="generator_unordered", batch_size=1
            )(delayed(task)(name, cls) for name, cls in order)
            queue = [name for name, _ in order]
            for name in queue[:jobs]:
                progress.started(name)
            queue = queue[jobs:]
        for name, result, error in results:
            if queue:  # the freed worker takes the next in order
                progress.started(queue.pop(0))
            progress.finished(name, table.row(name, result, error))
            verdicts[name] = error.split(":")[0] if error else result["better"]
    finally:
        progress.close()
    counts = [
        (sum(v == name for name, v in verdicts.items()), "ours better"),
        (sum(v == "baseline" for v in verdicts.values()), "baseline better"),
        (sum(v == "tie" for v in verdicts.values()), "tied"),
        (sum(v == "skipped" for v in verdicts.values()), "skipped"),
        (sum(v == "error" for v in verdicts.values()), "failed"),
    ]
    summary = ", ".join(f"{n} {what}" for n, what in counts if n)
    elapsed = time.perf_counter() - start
    n = len(verdicts)
    print(
        f"\n{n} demo{'s' if n != 1 else ''} in {elapsed:.0f} s with {jobs} "
        f"job{'s' if jobs > 1 else ''}: {summary}."
    )
    return 1 if any(v == "error" for v in verdicts.values()) else 0


def _in_process(order, progress):
    """The demos one after another in this process."""
    for name, cls in order:
        progress.started(name)
        yield _demo_task(name, cls)


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


def cmd_claims(argv):
    """The claims ledger (``sklearn_ext/_claims.py``)."""
    from sklearn_ext._claims import main as claims_main

    return claims_main(argv)


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
        help="demos run at once, in worker processes of one thread each (default: 2)",
    )
    demo.add_argument(
        "--list",
        action="store_true",
        help="list the demos (name, data, seconds on one core) without running them",
    )
    demo.add_argument(
        "--verbose",
        action="store_true",
        help="under each row: the data, the baseline, how to read the metric",
    )
    demo.set_defaults(func=cmd_demo)
    bench = sub.add_parser("bench", help="run benchmarks/bench_<name>.py")
    bench.add_argument("name", nargs="?", help="method or estimator (default: all)")
    bench.set_defaults(func=cmd_bench)
    sub.add_parser(
        "claims",
        help="the claims ledger: every quoted figure and its benchmark run "
        "(--check, --write, --revalidate; see claims --help)",
        add_help=False,
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["claims"]:
        # Its own parser takes the options (argparse cannot pass them on).
        return cmd_claims(argv[1:])
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
