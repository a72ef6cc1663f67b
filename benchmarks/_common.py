"""Shared helpers of the benchmark scripts: timing, memory, result tables."""

import ctypes
import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
# The backend's reference estimator lives with the tests.
sys.path.insert(0, str(ROOT / "tests"))


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def _release_free_memory():
    """Collect garbage and hand the allocator's free pages back to the system.

    Without this, memory freed by an earlier call (a warm-up, the data
    generation) stays resident and a later call reuses it without any growth
    of the resident set: its peak would read as ~0.
    """
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def peak_memory(fn):
    """Run ``fn()``; return (peak resident MB above the level before, result).

    The level before is the resident set after :func:`_release_free_memory`;
    the peak is the kernel's high-water mark (``VmHWM``), reset just before the
    call by writing 5 to ``/proc/self/clear_refs``, so that it sees every
    allocation of numpy, torch, BLAS and solver libraries, however short-lived.
    Benchmarks that compare solvers also run each in its own process, so that
    one solver's libraries and caches are not charged to the next.
    """
    _release_free_memory()
    base = _status_kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    result = fn()
    peak = _status_kb("VmHWM")
    return max(peak - base, 0) / 1024, result


def measure(fn, repeat=3, warmup=True):
    """Run ``fn()`` ``repeat`` times; median seconds, peak memory, last result.

    One unmeasured warm-up call comes first (unless ``warmup=False``), so that
    one-off costs (lazy imports, allocator pools) do not land on whichever
    candidate runs first. Memory is :func:`peak_memory` of each call (the
    high-water mark of the resident set above its level before the call, after
    freed memory is returned to the system), the largest over the repeats.
    """
    if warmup:
        fn()
    times, peaks, result = [], [], None
    for _ in range(repeat):
        start = time.perf_counter()
        peak, result = peak_memory(fn)
        times.append(time.perf_counter() - start)
        peaks.append(peak)
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


_FINGERPRINTS = {}


def _code_now():
    """``(script, hashes of the code it runs)`` of the running benchmark, or None."""
    from sklearn_ext._claims import measured_code
    from sklearn_ext._claims_code import tree_reader

    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if path is None:
        return None
    try:
        script = Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    return script, measured_code(script, tree_reader(ROOT))


# The code a run measures is the code at its start: a results file written
# after the code changed under the run would be recorded against code it did
# not run, so write_results refuses it.
_CODE_AT_START = _code_now()


def _ledger_entries(name, rows, notes):
    """The claims ledger's entries of ``results/<name>.json``.

    The running script (``__main__``) declares, in its ``LEDGER`` dict, a
    :class:`sklearn_ext._claims.Ledger` for every results file it writes: what
    was measured, on what data, over which seeds, with what budget on each
    side, and the claims texts may quote. The commit, the hashes of the code
    the script ran and the method's behavioural fingerprint
    (``fingerprints.py``, computed once per run) are added here.
    """
    from sklearn_ext._claims import compute_fingerprint, ledger_block

    main = sys.modules["__main__"]
    script = Path(main.__file__).resolve().relative_to(ROOT).as_posix()
    spec = getattr(main, "LEDGER", {}).get(name)
    if spec is None:
        raise KeyError(
            f"{script} writes results/{name}.json but declares no LEDGER[{name!r}]: "
            "every results file is part of the claims ledger"
        )
    if _CODE_AT_START is not None and _code_now() != _CODE_AT_START:
        raise RuntimeError(
            f"the code {script} runs changed while it ran: results/{name}.json "
            "would not measure one version of it; rerun on an unchanging tree"
        )
    from fingerprints import FINGERPRINTS

    stem = Path(script).stem[len("bench_") :]
    if stem not in _FINGERPRINTS:
        # A benchmark of the repository's commands (bench_budgets) measures no
        # one method, and has no fingerprint.
        _FINGERPRINTS[stem] = (
            compute_fingerprint(stem) if stem in FINGERPRINTS else None
        )
    return ledger_block(name, rows, spec, script, ROOT, _FINGERPRINTS[stem], notes)


def write_results(name, rows, columns, *, title, notes=""):
    """Write ``results/<name>.json`` and ``results/<name>.md``; print the table.

    The JSON file carries the claims ledger's entries (see
    :func:`_ledger_entries`).
    """
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "benchmark": name,
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(),
        "rows": rows,
        "notes": notes,
    }
    payload.update(_ledger_entries(name, rows, notes))
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")
    if payload.get("claims_error"):
        print(
            f"results/{name}.json is written but its claims could not be read: "
            f"{payload['claims_error']}; mend LEDGER[{name!r}] and run "
            f"python tools/ledger_adopt.py --claims {name}",
            file=sys.stderr,
        )

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


def paired_interval(a, b):
    """Mean and 95% t interval of the per-seed differences ``a - b``."""
    import numpy as np
    from scipy import stats

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) < 2:
        return float(d.mean()), float("nan"), float("nan")
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half)
