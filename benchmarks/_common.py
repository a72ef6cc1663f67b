"""Shared helpers of the benchmark scripts: timing, memory, result tables."""

import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
# The backend's reference estimator lives with the tests.
sys.path.insert(0, str(ROOT / "tests"))


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(fn, repeat=3, warmup=True):
    """Run ``fn()`` ``repeat`` times; median seconds, peak RSS growth, last result.

    One unmeasured warm-up call comes first (unless ``warmup=False``), so that
    one-off costs (lazy imports, allocator pools) do not land on whichever
    candidate runs first. Memory is the
    peak resident set size above the level before the call, sampled every 5 ms by
    a thread: it sees numpy's and torch's allocations alike.
    """
    if warmup:
        fn()
    times, peaks, result = [], [], None
    for _ in range(repeat):
        base = _rss_mb()
        peak = [base]
        done = threading.Event()

        def sample(peak=peak, done=done):
            while not done.is_set():
                peak[0] = max(peak[0], _rss_mb())
                time.sleep(0.005)

        watcher = threading.Thread(target=sample, daemon=True)
        watcher.start()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
        done.set()
        watcher.join()
        peaks.append(max(peak[0], _rss_mb()) - base)
    return {"seconds": statistics.median(times), "peak_mb": max(peaks)}, result


def machine():
    import torch

    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
    }


def write_results(name, rows, columns, *, title, notes=""):
    """Write ``results/<name>.json`` and ``results/<name>.md``; print the table."""
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "benchmark": name,
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(),
        "rows": rows,
        "notes": notes,
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")

    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = [f"# {title}", ""]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "---|" * len(columns))
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(c, "")) for c in columns) + " |")
    m = payload["machine"]
    lines += [
        "",
        f"Machine: {m['cpus']} CPUs, torch {m['torch']} ({m['torch_threads']} "
        f"threads), CUDA {'yes' if m['cuda'] else 'no'}; {payload['date']}.",
    ]
    if notes:
        lines += ["", notes]
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{name}.md").write_text(text)
    print(text)
