"""The claims ledger: every figure the package quotes, traced to the benchmark run.

``python -m sklearn_ext claims`` prints the ledger; ``--check`` exits non-zero
when a text quotes a figure the ledger does not hold, when a generated table
differs from the ledger, when a claim names no row, or when a results file is
older than the code it measured; ``--write`` (``make claims``) regenerates the
README's estimator table and the user guide's results tables;
``--revalidate`` re-measures a stale results file's behavioural fingerprint.

The ledger is the set of ``benchmarks/results/*.json`` files that carry a
``ledger`` block, written by the committed benchmark that measured them
(``benchmarks/_common.write_results``):

- ``ledger``: the benchmark script, the commit it ran at (and whether the
  measured files had uncommitted changes), the date, what it measured
  (``method``), the data, the seeds, the budget each side had, the code it ran
  (``code``: for every ``sklearn_ext`` file in the closure of the script's
  imports, a hash of the file's syntax tree without docstrings; ``bench_code``
  the same for the script and its helpers), a behavioural ``fingerprint`` (the
  outputs of a small fit of the method, ``benchmarks/fingerprints.py``) and
  the ``validated`` re-measurements of that fingerprint;
- ``claims``: the figures texts may quote, each taken from one cell of the
  results rows: ``id`` (``<results name>.<name>``), the ``subject`` (the row),
  ``metric``, ``value`` (and ``display``, the figure as the table prints it),
  ``interval``, the ``peer`` and its score where the figure compares.

A results file is *fresh* while the current code of its closure hashes as it
did when it was measured, or as at a later re-measurement whose fingerprint
equalled the measured one (``--revalidate``: an edit that changes no
behaviour the fingerprint sees, e.g. a refactor or a moved helper). On a
machine that does not reproduce the measured fingerprint (another CPU's
floating-point kernels), the re-measurement is compared with the
fingerprint of the last trusted commit's code computed on the same machine,
and records that commit (``against``). Otherwise
it is *stale*, and ``--check`` fails until the benchmark is rerun or the
fingerprint shows the behaviour unchanged. A change of the benchmark script
itself is reported but does not fail the check: the row still measured the
method, with the benchmark of its commit.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from sklearn_ext._claims_code import (
    bench_closure,
    git_reader,
    hashes,
    package_closure,
    tree_reader,
)
from sklearn_ext._claims_text import (
    PLACEHOLDER,
    bare_figures,
    claim_references,
    md_regions,
    parse_table_spec,
    replace_regions,
    rst_tables,
    text_sources,
)

__all__ = ["Claim", "Ledger", "ledger_block", "load_ledger", "main"]

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "benchmarks/results"
# Results files that are reports, not measurements texts quote.
NOT_LEDGER = ("gpu_check",)
# Fingerprints of re-measurements must equal the measured one this closely
# (float32 training: a refactor that reorders no operation changes no bit).
FINGERPRINT_RTOL, FINGERPRINT_ATOL = 1e-5, 1e-8


# -- what a benchmark declares --------------------------------------------------


@dataclass
class Claim:
    """A figure of a results table that texts may quote.

    Parameters
    ----------
    name : str
        Short name; the claim's id is ``<results name>.<name>``.
    row : dict, int or str
        The row: ``{column: value, ...}`` (all must match), its index, or the
        value of its first column.
    column : str
        The cell's column.
    metric : str, default=None
        What the figure measures (default: the column).
    peer : dict, int or str, default=None
        The row of the peer the figure compares with; its score is read from
        ``peer_column`` (default: ``column``).
    peer_column : str, default=None
        With ``peer=None``: the figure's own row is the peer's (a difference
        "ours - it" sits in the peer's row), and its score is this column.
    compute : callable, default=None
        ``compute(rows) -> number or (number, display)``: a figure derived
        from several cells (a count of seeds, a ratio); ``row`` and
        ``column`` then name where it comes from, for the reader.
    notes : str, default=None
        A regular expression whose first group is the figure, searched in the
        results file's ``notes`` (where a benchmark wrote a figure beside its
        table, e.g. a fit time); ``row`` may then be None and ``column``
        names the figure.
    fmt : str, default=None
        Format of a numeric cell (default: the Markdown table's ``.4g``).
    timing : bool, default=None
        The figure is a time or a speed (seconds, a speed-up, queries per
        second, a share of the wall time). A fingerprint shows that outputs
        are unchanged, not that speed is: a timing figure stays quotable only
        while the code hashes exactly as when it was measured. None: decided
        from the figure and its column (a unit of time, or a column about
        seconds, speed, queries per second, a time ratio or a time budget;
        see ``_TIMING``).
    note : str, default=""
    """

    name: str
    row: object
    column: str
    metric: str = None
    peer: object = None
    peer_column: str = None
    compute: object = None
    notes: str = None
    fmt: str = None
    timing: bool = None
    note: str = ""


@dataclass
class Ledger:
    """What a results file measured, for the ledger.

    ``method`` is the estimator (or estimators) measured; ``budget`` says what
    each side had (``{"ours": ..., "peers": ...}``: tuning, time, evaluations).
    """

    method: str
    data: str
    seeds: object
    budget: dict
    claims: list = field(default_factory=list)


# -- cells -----------------------------------------------------------------------

_NUMBER = r"[+\-−]?(?:\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)(?:[eE][+\-]?\d+)?"
_VALUE = re.compile(
    rf"({_NUMBER})(%|x(?![a-zA-Z])|\s?(?:ms|s|min|MB|GB|MiB|GiB)(?![\w/]))?"
)
_INTERVAL = re.compile(rf"\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]")
_SD = re.compile(rf"±\s*({_NUMBER})")


# Columns and metrics of times and speeds.
_TIMING = re.compile(
    r"(?i)\bseconds?\b|\s(?:s|ms)$|\s(?:s|ms)\)|\bs per\b|\bidle s\b|"
    r"_seconds\b|\bspeed|\bqps\b|queries per|time ratio|\btime /|/ time\b|"
    r"epoch time|time with|time budget|\bwall\b|bookkeeping|\bfaster\b|"
    r"\bslower\b|fit time|build time|loaded / idle"
)


def _to_float(text):
    return float(text.replace("−", "-").replace(",", ""))


def parse_cell(cell, fmt=None):
    """``(value, display, interval, interval_display)`` of a results cell.

    Strings are read as the benchmark wrote them: the first number (with a
    ``%``, ``x`` or unit of time or memory that follows it) is the value,
    ``[lo, hi]`` the interval, ``± s`` a spread (interval
    ``[value - s, value + s]``). Numbers are displayed with ``fmt`` (default
    ``.4g``, as the Markdown tables).
    """
    if isinstance(cell, bool) or cell is None:
        raise ValueError(f"cell {cell!r} holds no figure")
    if isinstance(cell, (int, float)):
        display = format(cell, fmt or (".4g" if isinstance(cell, float) else "d"))
        return float(cell), display, None, None
    text = str(cell)
    match = _VALUE.search(text)
    if match is None:
        raise ValueError(f"cell {text!r} holds no figure")
    display = match.group(0)
    value = _to_float(match.group(1))
    if match.group(2) == "%":
        value /= 100
    interval = interval_display = None
    found = _INTERVAL.search(text, match.end())
    if found is not None:
        interval = [_to_float(found.group(1)), _to_float(found.group(2))]
        interval_display = found.group(0)
    else:
        spread = _SD.search(text, match.end())
        if spread is not None:
            s = _to_float(spread.group(1))
            interval = [value - s, value + s]
            interval_display = spread.group(0)
    return value, display, interval, interval_display


def _label(row):
    return str(next(iter(row.values())))


def _select(rows, selector, where):
    if isinstance(selector, int):
        if not 0 <= selector < len(rows):
            raise ValueError(f"{where}: no row {selector} (there are {len(rows)})")
        return rows[selector]
    if isinstance(selector, str):
        selector = {next(iter(rows[0])): selector} if rows else {}
    found = [r for r in rows if all(r.get(k) == v for k, v in selector.items())]
    if len(found) != 1:
        labels = "; ".join(_label(r) for r in rows)
        raise ValueError(
            f"{where}: {len(found)} rows match {selector!r} (rows: {labels})"
        )
    return found[0]


def extract_claim(name, claim, rows, notes=""):
    """The ledger record of ``claim`` read from the results ``rows`` (or notes)."""
    where = f"claim {name}.{claim.name}"
    row = None if claim.row is None else _select(rows, claim.row, where)
    if claim.notes is not None:
        found = re.search(claim.notes, notes or "")
        if found is None:
            raise ValueError(f"{where}: {claim.notes!r} is not in the notes")
        value, display, interval, interval_display = parse_cell(found.group(1))
    elif claim.compute is not None:
        out = claim.compute(rows)
        value, display = out if isinstance(out, tuple) else (out, None)
        value, display_default, interval, interval_display = parse_cell(
            value, claim.fmt
        )
        display = display or display_default
    elif row is None:
        raise ValueError(f"{where}: no row given")
    else:
        if claim.column not in row:
            raise ValueError(f"{where}: row {_label(row)!r} has no {claim.column!r}")
        value, display, interval, interval_display = parse_cell(
            row[claim.column], claim.fmt
        )
    subject = _label(row) if row is not None else ("notes" if claim.notes else "rows")
    timing = claim.timing
    if timing is None:
        timing = bool(
            re.search(r"\d\s?(?:ms|s|min)$", display)
            or _TIMING.search(f"{claim.column} {claim.metric or ''}")
        )
    record = {
        "id": f"{name}.{claim.name}",
        "subject": subject,
        "metric": claim.metric or claim.column,
        "value": value,
        "display": display,
        "interval": interval,
        "interval_display": interval_display,
        "cell": [subject, claim.column],
        "timing": timing,
        "peer": None,
        "peer_value": None,
        "peer_display": None,
    }
    if claim.peer is not None or claim.peer_column is not None:
        peer_row = row if claim.peer is None else _select(rows, claim.peer, where)
        if peer_row is None:
            raise ValueError(f"{where}: a peer needs a row")
        column = claim.peer_column or claim.column
        if column not in peer_row:
            raise ValueError(f"{where}: peer row has no {column!r}")
        peer_value, peer_display, _, _ = parse_cell(peer_row[column], claim.fmt)
        record.update(
            peer=_label(peer_row), peer_value=peer_value, peer_display=peer_display
        )
    if claim.note:
        record["note"] = claim.note
    return record


# -- git and code ----------------------------------------------------------------


def _git(root, *args):
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def benchmark_of(name, root=ROOT):
    """The script ``benchmarks/bench_<stem>.py`` whose stem begins ``name``."""
    stems = sorted(
        (
            p.stem[len("bench_") :]
            for p in (Path(root) / "benchmarks").glob("bench_*.py")
        ),
        key=len,
        reverse=True,
    )
    for stem in stems:
        if name == stem or name.startswith(stem + "_"):
            return f"benchmarks/bench_{stem}.py"
    return None


def measured_code(script, read):
    """``(package hashes, benchmark hashes)`` of the code ``script`` runs."""
    bench_files = bench_closure(script, read)
    return (
        hashes(package_closure(bench_files, read), read),
        hashes(bench_files, read),
    )


def ledger_record(spec, script, *, commit, dirty, date, code, bench_code, fingerprint):
    """The ``ledger`` block of a results file: what was measured, and how."""
    return {
        "benchmark": script,
        "commit": commit,
        "dirty": dirty,
        "date": date,
        "method": spec.method,
        "data": spec.data,
        "seeds": spec.seeds,
        "budget": spec.budget,
        "code": code,
        "bench_code": bench_code,
        "fingerprint": fingerprint,
        "validated": [],
    }


def ledger_block(name, rows, spec, script, root=ROOT, fingerprint=None, notes=""):
    """The ``ledger`` and ``claims`` entries of a results file being written.

    Called by the benchmarks' ``write_results``; ``spec`` is the script's
    :class:`Ledger` for ``name``. A claim that cannot be read from the rows
    (a wrong selector) does not lose the run: the entries then hold no
    claims and a ``claims_error`` (which fails the check), and the claims can
    be read again from the stored rows once the declaration is mended
    (``python tools/ledger_adopt.py --claims NAME``).
    """
    read = tree_reader(root)
    code, bench_code = measured_code(script, read)
    dirty = bool(_git(root, "status", "--porcelain", "--", *code, *bench_code))
    out = {
        "ledger": ledger_record(
            spec,
            script,
            commit=_git(root, "rev-parse", "HEAD"),
            dirty=dirty,
            date=time.strftime("%Y-%m-%d"),
            code=code,
            bench_code=bench_code,
            fingerprint=fingerprint,
        )
    }
    try:
        out["claims"] = [extract_claim(name, c, rows, notes) for c in spec.claims]
    except (ValueError, KeyError, TypeError) as exc:
        out["claims"] = []
        out["claims_error"] = str(exc)
    return out


# -- the ledger ------------------------------------------------------------------


def results_files(root=ROOT):
    folder = Path(root) / RESULTS
    return sorted(p for p in folder.glob("*.json") if p.stem not in NOT_LEDGER)


def _load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def freshness(payload, root=ROOT, read=None):
    """``(state, detail)`` of a results file: fresh, validated or stale."""
    ledger = payload["ledger"]
    read = read or tree_reader(root)
    script = ledger["benchmark"]
    if read(script) is None:
        return "stale", f"{script} no longer exists"
    code, bench_code = measured_code(script, read)
    if code == ledger["code"]:
        state = "fresh"
    elif any(code == v["code"] for v in ledger.get("validated", [])):
        state = "validated"
    else:
        latest = (ledger.get("validated") or [{"code": ledger["code"]}])[-1]["code"]
        changed = sorted(
            p for p in set(code) | set(latest) if code.get(p) != latest.get(p)
        )
        return "stale", "changed since: " + ", ".join(changed)
    moved = sorted(
        p
        for p in set(bench_code) | set(ledger.get("bench_code", {}))
        if bench_code.get(p) != ledger.get("bench_code", {}).get(p)
    )
    return state, ("benchmark changed since: " + ", ".join(moved)) if moved else ""


def load_ledger(root=ROOT, with_state=False):
    """``{claim id: record}`` of every claim, with its results file's metadata."""
    out = {}
    read = tree_reader(root)
    for path in results_files(root):
        payload = _load(path)
        if "ledger" not in payload:
            continue
        ledger = payload["ledger"]
        state = freshness(payload, root, read) if with_state else (None, "")
        for claim in payload.get("claims", []):
            record = dict(claim)
            record.update(
                results=path.stem,
                benchmark=ledger["benchmark"],
                method=ledger["method"],
                data=ledger["data"],
                seeds=ledger["seeds"],
                budget=ledger["budget"],
                commit=ledger["commit"],
                date=ledger["date"],
                state=state[0],
            )
            out[claim["id"]] = record
    return out


def render(record, modifier=""):
    """The text of a claim as a text quotes it (see ``_claims_text``)."""
    if modifier in ("", "value"):
        return record["display"]
    if modifier == "ci":
        if record["interval_display"] is None:
            raise ValueError(f"claim {record['id']} has no interval")
        return f"{record['display']} {record['interval_display']}"
    if modifier == "interval":
        if record["interval_display"] is None:
            raise ValueError(f"claim {record['id']} has no interval")
        return record["interval_display"]
    if modifier == "peer":
        if record["peer_display"] is None:
            raise ValueError(f"claim {record['id']} names no peer")
        return record["peer_display"]
    raise ValueError(
        f"unknown claim modifier {modifier!r} (use value, ci, interval or peer)"
    )


# -- generated regions -----------------------------------------------------------


def _render_template(template, ledger):
    """The template with its placeholders filled from the ledger.

    A placeholder whose claim has no row stays as it is (the check reports
    it), so that one missing claim does not hold back the rest of the text.
    """

    def one(match):
        ident, _, modifier = match.group(1).strip().partition(":")
        if ident not in ledger:
            return match.group(0)
        try:
            return render(ledger[ident], modifier.strip())
        except ValueError:
            return match.group(0)

    return PLACEHOLDER.sub(one, template)


def _rst_cell(value):
    """A results cell as reStructuredText text (markup characters escaped)."""
    if isinstance(value, float):
        value = format(value, ".4g")
    text = str(value).replace("\\", "\\\\")
    for char in "*`|":
        text = text.replace(char, "\\" + char)
    # ``name_`` would be a reference to a target.
    return re.sub(r"_(?=\s|$|[,.;:)\]])", r"\\_", text)


def _render_table(name, spec, root):
    path = Path(root) / RESULTS / f"{name}.json"
    if not path.exists():
        raise KeyError(f"results table {name!r} has no file {path}")
    payload = _load(path)
    if "ledger" not in payload:
        raise KeyError(f"results table {name!r} is not in the ledger")
    rows = payload["rows"]
    parsed = parse_table_spec(spec)
    columns = parsed["columns"] or list(rows[0])
    if parsed["rows"] is not None:
        rows = [_select(rows, label, f"table {name}") for label in parsed["rows"]]
    missing = [c for c in columns if not any(c in r for r in rows)]
    if missing:
        raise KeyError(f"results table {name!r} has no column {missing}")
    lines = ["", ".. list-table::", "   :header-rows: 1", ""]
    for cells in [columns] + [[r.get(c, "") for c in columns] for r in rows]:
        texts = [_rst_cell(c) for c in cells]
        lines.append(f"   * - {texts[0]}".rstrip())
        lines += [f"     - {t}".rstrip() for t in texts[1:]]
    ledger = payload["ledger"]
    lines += [
        "",
        f"*{ledger['benchmark']}*, {ledger['date']}, seeds: {ledger['seeds']}.",
        "",
    ]
    return "\n".join(lines) + "\n"


def regenerate(path, kind, text, ledger, root, errors=None):
    """``text`` with its generated regions rebuilt from the ledger.

    A table that cannot be built keeps its body; its error is appended to
    ``errors`` (a list) when given, else raised.
    """
    if kind == "md":
        regions = md_regions(text)
        bodies = [_render_template(r.spec, ledger) + "\n" for r in regions]
    elif kind == "rst":
        regions = rst_tables(text)
        bodies = []
        for region in regions:
            try:
                bodies.append(_render_table(region.name, region.spec, root))
            except (KeyError, ValueError) as exc:
                if errors is None:
                    raise
                message = exc.args[0] if exc.args else str(exc)
                errors.append(f"{path}:{region.line}: {message}")
                bodies.append(region.body(text))
    else:
        return text
    return replace_regions(text, regions, bodies)


# -- the check -------------------------------------------------------------------


def check(root=ROOT):
    """``(problems, notes)``: what fails the check, and what is only reported."""
    root = Path(root)
    problems, notes = [], []
    read = tree_reader(root)
    for path in results_files(root):
        rel = path.relative_to(root).as_posix()
        try:
            payload = _load(path)
        except json.JSONDecodeError as exc:
            problems.append(f"{rel}: not JSON ({exc})")
            continue
        if "ledger" not in payload:
            problems.append(
                f"{rel}: not in the ledger (no 'ledger' block): rerun its benchmark"
            )
            continue
        if payload.get("claims_error"):
            problems.append(
                f"{rel}: its claims could not be read ({payload['claims_error']}); "
                f"mend LEDGER[{path.stem!r}] and run python tools/ledger_adopt.py "
                f"--claims {path.stem}"
            )
        state, detail = freshness(payload, root, read)
        if state == "stale":
            problems.append(
                f"{rel}: older than the code it measured ({detail}); rerun "
                f"{payload['ledger']['benchmark']} or, if the behaviour did not "
                f"change, python -m sklearn_ext claims --revalidate {path.stem}"
            )
        elif detail:
            notes.append(f"{rel}: {detail}")
    ledger = load_ledger(root, with_state=True)
    seen_ids = {}
    for path in results_files(root):
        payload = _load(path)
        for claim in payload.get("claims", []):
            if claim["id"] in seen_ids:
                problems.append(
                    f"claim {claim['id']} is in {path.name} and {seen_ids[claim['id']]}"
                )
            seen_ids[claim["id"]] = path.name
    for rel, kind in text_sources(root):
        text = (root / rel).read_text(encoding="utf-8")
        for line, ident, modifier in claim_references(rel, text):
            if ident not in ledger:
                problems.append(f"{rel}:{line}: claim {ident!r} has no row")
                continue
            record = ledger[ident]
            if record.get("timing") and record["state"] == "validated":
                problems.append(
                    f"{rel}:{line}: claim {ident!r} is a time measured on code "
                    "that changed since (its fingerprint vouches for outputs, "
                    f"not speed): rerun {record['benchmark']} on an idle "
                    "machine, or stop quoting it"
                )
            try:
                render(ledger[ident], modifier)
            except ValueError as exc:
                problems.append(f"{rel}:{line}: {exc}")
        problems += [str(f) for f in bare_figures(rel, kind, text)]
        fresh = regenerate(rel, kind, text, ledger, root, problems)
        if fresh != text:
            first = next(
                i
                for i, (a, b) in enumerate(
                    zip(text.splitlines() + [""], fresh.splitlines() + [""]), 1
                )
                if a != b
            )
            problems.append(
                f"{rel}:{first}: a generated figure differs from the ledger "
                "(run make claims)"
            )
    return problems, notes


def write(root=ROOT, errors=None):
    """Regenerate every generated region; the paths rewritten.

    Tables that cannot be built are left as they are, their errors appended
    to ``errors``.
    """
    root = Path(root)
    ledger = load_ledger(root)
    changed = []
    errors = [] if errors is None else errors
    for rel, kind in text_sources(root):
        path = root / rel
        text = path.read_text(encoding="utf-8")
        fresh = regenerate(rel, kind, text, ledger, root, errors)
        if fresh != text:
            path.write_text(fresh, encoding="utf-8")
            changed.append(rel)
    return changed


# -- fingerprints ----------------------------------------------------------------

_FINGERPRINT_RUNNER = """
import json, sys
sys.meta_path[:] = [f for f in sys.meta_path
                    if "__editable__" not in type(f).__module__]
sys.path[:0] = [{tree!r}, {bench!r}]
import torch
torch.set_num_threads(1)
import numpy as np
import sklearn_ext
assert sklearn_ext.__file__.startswith({tree!r}), sklearn_ext.__file__
from fingerprints import FINGERPRINTS
out = np.ravel(np.asarray(FINGERPRINTS[{stem!r}](), dtype=float))
print("FINGERPRINT " + json.dumps([float(x) for x in out]))
"""


def compute_fingerprint(stem, tree=ROOT, root=ROOT):
    """The fingerprint of ``bench_<stem>`` with the package of ``tree``.

    Runs ``benchmarks/fingerprints.FINGERPRINTS[stem]`` (of ``root``) in a
    fresh one-thread process importing ``sklearn_ext`` from ``tree``.
    """
    code = _FINGERPRINT_RUNNER.format(
        tree=str(tree), bench=str(Path(root) / "benchmarks"), stem=stem
    )
    env = dict(os.environ, PYTHONHASHSEED="0", CUDA_VISIBLE_DEVICES="")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
    lines = [x for x in out.stdout.splitlines() if x.startswith("FINGERPRINT ")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"fingerprint of {stem} failed: {' | '.join(tail)}")
    return json.loads(lines[-1][len("FINGERPRINT ") :])


def same_fingerprint(a, b):
    import numpy as np

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(
        np.allclose(a, b, rtol=FINGERPRINT_RTOL, atol=FINGERPRINT_ATOL, equal_nan=True)
    )


def _stem(script):
    return Path(script).stem[len("bench_") :]


def _reference_fingerprint(ledger, stem, root, cache, depth=50):
    """``(commit, fingerprint)`` of the code last trusted for ``ledger``, here.

    The fingerprint of a results file is measured on the machine that ran the
    benchmark; another machine (another CPU's floating-point kernels) may not
    reproduce it even for unchanged code. The trusted code is the closure as
    measured or as at a validation; its tree is the newest commit (among the
    recorded ones, then the last ``depth`` commits of HEAD) whose closure
    hashes exactly so. Its fingerprint, computed on this machine, is what the
    current code must equal to show that an edit changed no behaviour.
    ``(None, None)`` when no commit holds the trusted code.
    """
    trusted = [
        e["code"] for e in [ledger, *ledger.get("validated", [])] if e.get("code")
    ]
    recorded = [e.get("commit") for e in [ledger, *ledger.get("validated", [])]]
    history = (_git(root, "rev-list", f"--max-count={depth}", "HEAD") or "").split()
    seen = set()
    for commit in [c for c in reversed(recorded) if c] + history:
        if commit in seen:
            continue
        seen.add(commit)
        code_key = ("code", ledger["benchmark"], commit)
        if code_key not in cache:
            cache[code_key] = measured_code(
                ledger["benchmark"], git_reader(root, commit)
            )[0]
        if cache[code_key] not in trusted:
            continue
        key = (stem, commit)
        if key not in cache:
            cache[key] = None
            with tempfile.TemporaryDirectory() as tmp:
                archive = subprocess.run(
                    ["git", "archive", "--format=tar", commit],
                    cwd=root,
                    capture_output=True,
                )
                if archive.returncode == 0:
                    subprocess.run(
                        ["tar", "-x", "-C", tmp], input=archive.stdout, check=True
                    )
                    try:
                        cache[key] = compute_fingerprint(stem, tmp, root)
                    except RuntimeError:
                        cache[key] = None
        if cache[key] is not None:
            return commit, cache[key]
    return None, None


def revalidate(names=None, root=ROOT, log=print):
    """Re-measure the fingerprint of each stale results file; record the equal ones.

    A fingerprint equal to the measured one validates. Otherwise, where this
    machine does not reproduce the measured fingerprint, the current code's
    fingerprint is compared with that of the last trusted code computed here
    (:func:`_reference_fingerprint`): equal, the edit changed no behaviour the
    fingerprint sees, and the validation records the commit it was compared
    against. Returns the names still stale.
    """
    root = Path(root)
    cache, still = {}, []
    for path in results_files(root):
        if names and path.stem not in names:
            continue
        payload = _load(path)
        if "ledger" not in payload:
            continue
        ledger = payload["ledger"]
        state, detail = freshness(payload, root)
        if state != "stale":
            continue
        if not ledger.get("fingerprint"):
            log(f"{path.stem}: stale and no fingerprint recorded: rerun")
            still.append(path.stem)
            continue
        stem = _stem(ledger["benchmark"])
        if stem not in cache:
            cache[stem] = compute_fingerprint(stem, root, root)
        against = None
        if not same_fingerprint(cache[stem], ledger["fingerprint"]):
            against, reference = _reference_fingerprint(ledger, stem, root, cache)
            if against is None or not same_fingerprint(cache[stem], reference):
                log(f"{path.stem}: the behaviour changed ({detail}): rerun")
                still.append(path.stem)
                continue
        code, _ = measured_code(ledger["benchmark"], tree_reader(root))
        record = {
            "commit": _git(root, "rev-parse", "HEAD"),
            "dirty": bool(_git(root, "status", "--porcelain", "--", *code)),
            "date": time.strftime("%Y-%m-%d"),
            "code": code,
        }
        if against is not None:
            record["against"] = against
        ledger.setdefault("validated", []).append(record)
        path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        how = (
            "fingerprint unchanged"
            if against is None
            else f"fingerprint equal to that of {against[:10]} on this machine"
        )
        log(f"{path.stem}: {how} ({detail}): validated")
    return still


# -- the command line ------------------------------------------------------------


def _print_ledger(root):
    ledger = load_ledger(root, with_state=True)
    if not ledger:
        print("The ledger is empty.")
        return
    for ident, r in sorted(ledger.items()):
        interval = f" {r['interval_display']}" if r["interval_display"] else ""
        peer = (
            f"; peer {r['peer']}: {r['peer_display']}" if r["peer"] is not None else ""
        )
        print(f"{ident}  [{r['state']}]")
        print(f"    {r['metric']} of {r['subject']}: {r['display']}{interval}{peer}")
        print(f"    {r['method']} on {r['data']}; seeds {r['seeds']}")
        budget = "; ".join(f"{k}: {v}" for k, v in r["budget"].items())
        print(f"    budget: {budget}")
        print(f"    {r['benchmark']} at {(r['commit'] or '?')[:10]}, {r['date']}")


def main(argv=None):
    """``python -m sklearn_ext claims``."""
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_ext claims",
        description="The claims ledger: every quoted figure and its benchmark run.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="fail on any problem")
    group.add_argument(
        "--write", action="store_true", help="regenerate the generated tables"
    )
    group.add_argument(
        "--revalidate",
        nargs="*",
        metavar="NAME",
        help="re-measure the fingerprints of stale results files (all by default)",
    )
    args = parser.parse_args(argv)
    if not (ROOT / RESULTS).is_dir():
        print(
            f"python -m sklearn_ext claims: no {RESULTS} folder at {ROOT}; the "
            "ledger lives in a source checkout of sklearn_ext",
            file=sys.stderr,
        )
        return 2
    if args.write:
        errors = []
        for rel in write(ROOT, errors):
            print(f"rewrote {rel}")
        for error in errors:
            print(error)
        return 1 if errors else 0
    if args.revalidate is not None:
        still = revalidate(args.revalidate or None, ROOT)
        return 1 if still else 0
    if args.check:
        problems, notes = check(ROOT)
        for note in notes:
            print(f"note: {note}")
        for problem in problems:
            print(problem)
        n = len(load_ledger(ROOT))
        if problems:
            print(f"claims check: {len(problems)} problems ({n} claims)")
            return 1
        print(f"claims check: {n} claims, every quoted figure traced, all fresh")
        return 0
    _print_ledger(ROOT)
    return 0
