"""Bring a results file written before the claims ledger existed into the ledger.

Usage (from the repository root)::

    python tools/ledger_adopt.py NAME [NAME ...]
    python tools/ledger_adopt.py --claims NAME [NAME ...]

With ``--claims``, a results file already in the ledger gets its claims read
again from its stored rows with the script's current ``LEDGER[NAME]`` (after a
claim was added to the declaration, or a selector mended); its measurement
record (commit, code, fingerprint) is kept as it is.

For ``benchmarks/results/NAME.json`` without a ``ledger`` block: the commit
that last wrote it is taken as the commit that measured it; the hashes of the
code the benchmark ran and the method's fingerprint are computed *at that
commit* (the fingerprint in a temporary git worktree of it, with
``benchmarks/fingerprints.py`` of the current tree); the claims are read from
the stored rows with the current script's ``LEDGER[NAME]`` declaration. The
file then says ``"adopted"`` with that provenance. Finally the fingerprint is
recomputed on the current tree: if it is unchanged, the file is validated for
the current code, else it stays stale and the benchmark must be rerun.

Nothing is re-measured and no figure is changed: a figure enters the ledger
only with the code and behaviour it was measured with.
"""

import json
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from sklearn_ext._claims import (  # noqa: E402
    benchmark_of,
    compute_fingerprint,
    extract_claim,
    ledger_record,
    measured_code,
    revalidate,
)
from sklearn_ext._claims_code import git_reader  # noqa: E402


def _git(*args):
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


_FINGERPRINT_AT = {}


def fingerprint_at(stem, commit):
    """The fingerprint of ``bench_<stem>`` with the package of ``commit``."""
    key = (stem, commit)
    if key not in _FINGERPRINT_AT:
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "tree"
            _git("worktree", "add", "--detach", str(tree), commit)
            try:
                _FINGERPRINT_AT[key] = compute_fingerprint(stem, tree, ROOT)
            except RuntimeError as exc:
                print(f"  no fingerprint at {commit[:10]}: {exc}")
                _FINGERPRINT_AT[key] = None
            finally:
                _git("worktree", "remove", "--force", str(tree))
    return _FINGERPRINT_AT[key]


def adopt(name):
    path = ROOT / "benchmarks" / "results" / f"{name}.json"
    payload = json.loads(path.read_text(encoding="utf-8"))
    if "ledger" in payload:
        print(f"{name}: already in the ledger")
        return
    script = benchmark_of(name, ROOT)
    if script is None:
        raise SystemExit(f"{name}: no benchmarks/bench_*.py writes it")
    module = runpy.run_path(str(ROOT / script), run_name="ledger_adopt")
    spec = module.get("LEDGER", {}).get(name)
    if spec is None:
        raise SystemExit(f"{name}: {script} declares no LEDGER[{name!r}]")
    commit = _git("log", "-1", "--format=%H", "--", str(path.relative_to(ROOT)))
    read = git_reader(ROOT, commit)
    if read(script) is None:
        raise SystemExit(f"{name}: {script} did not exist at {commit[:10]}")
    code, bench_code = measured_code(script, read)
    stem = Path(script).stem[len("bench_") :]
    payload["ledger"] = ledger_record(
        spec,
        script,
        commit=commit,
        dirty=False,
        date=payload.get("date"),
        code=code,
        bench_code=bench_code,
        fingerprint=fingerprint_at(stem, commit),
    )
    payload["ledger"]["adopted"] = (
        f"measured before the claims ledger existed; committed at {commit}, "
        "whose code hashes and fingerprint are recorded here"
    )
    payload["claims"] = [
        extract_claim(name, c, payload["rows"], payload.get("notes", ""))
        for c in spec.claims
    ]
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"{name}: adopted from {commit[:10]} ({len(payload['claims'])} claims)")
    revalidate([name], ROOT)


def reread_claims(name):
    path = ROOT / "benchmarks" / "results" / f"{name}.json"
    payload = json.loads(path.read_text(encoding="utf-8"))
    if "ledger" not in payload:
        raise SystemExit(f"{name}: not in the ledger yet: adopt it first")
    script = payload["ledger"]["benchmark"]
    module = runpy.run_path(str(ROOT / script), run_name="ledger_adopt")
    spec = module.get("LEDGER", {}).get(name)
    if spec is None:
        raise SystemExit(f"{name}: {script} declares no LEDGER[{name!r}]")
    payload["claims"] = [
        extract_claim(name, c, payload["rows"], payload.get("notes", ""))
        for c in spec.claims
    ]
    payload.pop("claims_error", None)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"{name}: {len(payload['claims'])} claims read from the stored rows")


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    if argv[0] == "--claims":
        for name in argv[1:]:
            reread_claims(name)
        return 0
    for name in argv:
        adopt(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
