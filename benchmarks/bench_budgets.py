"""Budgets of the README's commands, measured as a new user meets them.

In a fresh clone of the committed ``main`` (no ``.venv``, nothing untracked),
on an otherwise idle machine, the commands run one after another, as a user
following the README would run them:

1. ``make install``: the venv, PyTorch's CPU build and the test extras
   (recorded; it has no budget of its own);
2. ``make demo`` idle (budget 60 s), then again beside one CPU-bound process
   (``while True: pass``; budget: twice the idle time);
3. ``make test`` (budget 10 minutes);
4. ``make test-oldest``, the second half of ``.ci/run``; ``.ci/run`` is
   ``make test`` followed by ``make test-oldest``, so its time is the sum of
   the two (budget 25 minutes);
5. the first ``make docs`` (budget 8 minutes): the docs extra is installed and
   every example runs through sphinx-gallery;
6. ``make examples``: each example as a user runs it (budget 60 s each).

The machine must be otherwise idle (no test suite, no other benchmark): the
script says so and refuses to start when other processes keep a core busy
(``--force`` runs anyway, and the notes say so).

Run ``python benchmarks/bench_budgets.py`` (``--parts install demo test ci
docs examples``; ``--clone PATH`` reuses a clone made by an earlier run).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, write_results

from sklearn_ext._claims import Claim, Ledger

BUDGETS = {
    "make demo": 60,
    "make test": 600,
    ".ci/run": 1500,
    "make docs (first build)": 480,
    "example": 60,
}
PARTS = ("install", "demo", "test", "ci", "docs", "examples")


def _busy_cores():
    """Runnable threads of other processes now (Linux), over a second."""
    samples = []
    for _ in range(5):
        with open("/proc/stat") as f:
            running = next(
                int(line.split()[1]) for line in f if line.startswith("procs_running")
            )
        samples.append(running - 1)
        time.sleep(0.2)
    return min(samples)


def _run(command, cwd, log):
    """Run a shell command in ``cwd``; its seconds. Fails loudly on an error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
    env["CI"] = "true"
    start = time.perf_counter()
    with open(log, "w") as out:
        code = subprocess.call(
            command, cwd=cwd, shell=True, stdout=out, stderr=subprocess.STDOUT, env=env
        )
    seconds = time.perf_counter() - start
    if code != 0:
        tail = Path(log).read_text()[-3000:]
        raise SystemExit(f"{command!r} failed with exit code {code}:\n{tail}")
    return seconds


def _row(command, seconds, budget):
    return {
        "command": command,
        "seconds": f"{seconds:.1f} s",
        "budget": f"{budget:.0f} s",
        "met": "yes" if seconds <= budget else "NOT MET",
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    parser.add_argument("--clone", help="an existing clone to reuse")
    parser.add_argument("--force", action="store_true", help="run on a busy machine")
    args = parser.parse_args()
    busy = _busy_cores()
    if busy and not args.force:
        raise SystemExit(
            f"{busy} other runnable threads: budgets are measured on an idle "
            "machine (--force to measure anyway)"
        )
    commit = subprocess.check_output(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, text=True
    ).strip()
    if args.clone:
        clone = Path(args.clone)
    else:
        clone = Path(tempfile.mkdtemp(prefix="sklearn_ext_budgets_")) / "clone"
        subprocess.check_call(["git", "clone", "-q", "--branch", "main", ROOT, clone])
    logs = Path(tempfile.mkdtemp(prefix="sklearn_ext_budget_logs_"))
    print(f"clone: {clone} (commit {commit[:10]}); logs: {logs}", flush=True)
    rows = []
    if "install" in args.parts:
        seconds = _run("make install", clone, logs / "install.log")
        rows.append({"command": "make install", "seconds": f"{seconds:.1f} s"})
    if "demo" in args.parts:
        idle = _run("make demo", clone, logs / "demo.log")
        rows.append(_row("make demo", idle, BUDGETS["make demo"]))
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            loaded = _run("make demo", clone, logs / "demo_loaded.log")
        finally:
            burner.kill()
        row = _row("make demo beside one CPU-bound process", loaded, 2 * idle)
        row["loaded / idle"] = round(loaded / idle, 2)
        rows.append(row)
    test_seconds = None
    if "test" in args.parts or "ci" in args.parts:
        test_seconds = _run("make test", clone, logs / "test.log")
        rows.append(_row("make test", test_seconds, BUDGETS["make test"]))
    if "ci" in args.parts:
        oldest = _run("make test-oldest", clone, logs / "test_oldest.log")
        rows.append({"command": "make test-oldest", "seconds": f"{oldest:.1f} s"})
        name = ".ci/run (make test + make test-oldest)"
        rows.append(_row(name, test_seconds + oldest, BUDGETS[".ci/run"]))
    if "docs" in args.parts:
        shutil.rmtree(clone / "docs" / "_build", ignore_errors=True)
        seconds = _run("make docs", clone, logs / "docs.log")
        name = "make docs (first build)"
        rows.append(_row(name, seconds, BUDGETS[name]))
    if "examples" in args.parts:
        _run("make examples", clone, logs / "examples.log")
        text = (logs / "examples.log").read_text()
        for name, seconds in re.findall(r"== examples/(\S+\.py): ([\d.]+) s", text):
            rows.append(_row(f"example {name}", float(seconds), BUDGETS["example"]))
    notes = (
        f"Fresh clone of main at {commit[:10]}; 2 cores; other runnable threads "
        f"at the start: {busy}{' (forced)' if busy else ''}. .ci/run's time is "
        "the sum of its two commands."
    )
    write_results(
        "budgets",
        rows,
        ["command", "seconds", "budget", "met", "loaded / idle"],
        title="Budgets of the README's commands (fresh clone, 2 idle cores)",
        notes=notes,
    )


def _examples_max(rows):
    """The slowest example's seconds, read from the rows' "X s" strings."""
    slowest = max(
        float(r["seconds"].split()[0])
        for r in rows
        if r["command"].startswith("example ")
    )
    return slowest, f"{slowest:.1f} s"


_BUDGET = {
    "commands": "as the README gives them, in a fresh clone, on 2 idle cores",
}
LEDGER = {
    "budgets": Ledger(
        "the repository's commands (make demo, make test, .ci/run, make docs, "
        "make examples)",
        "the package's demos, tests, docs and examples",
        "one run",
        _BUDGET,
        [
            Claim("install", "make install", "seconds"),
            Claim("demo", "make demo", "seconds"),
            Claim("demo_loaded", "make demo beside one CPU-bound process", "seconds"),
            Claim(
                "demo_loaded_ratio",
                "make demo beside one CPU-bound process",
                "loaded / idle",
            ),
            Claim("test", "make test", "seconds"),
            Claim("ci", ".ci/run (make test + make test-oldest)", "seconds"),
            Claim("docs", "make docs (first build)", "seconds"),
            Claim(
                "examples_max",
                None,
                "the slowest example's seconds",
                compute=_examples_max,
            ),
        ],
    )
}


if __name__ == "__main__":
    main()
