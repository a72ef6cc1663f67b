"""The claims ledger: every quoted figure traced to the run that measured it."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sklearn_ext import _claims
from sklearn_ext._claims import (
    Claim,
    Ledger,
    check,
    extract_claim,
    freshness,
    ledger_block,
    load_ledger,
    parse_cell,
    revalidate,
    write,
)
from sklearn_ext._claims_code import normalized_hash
from sklearn_ext._claims_text import bare_figures

ROOT = Path(__file__).resolve().parents[1]
DIFF = "ours − it [95%]"
ROWS = [
    {"method": "ours", "ACC": "0.812 ± 0.010", DIFF: ""},
    {"method": "k-means", "ACC": "0.700 ± 0.020", DIFF: "+0.112 [+0.050, +0.174]"},
]
SPEC = Ledger(
    "ToyEstimator",
    "toy data, 100 samples",
    5,
    {"ours": "defaults", "peers": "k-means at the true k"},
    [
        Claim("acc", "ours", "ACC"),
        Claim("kmeans_acc", "k-means", "ACC"),
        Claim("vs_kmeans", "k-means", DIFF, peer_column="ACC"),
    ],
)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


@pytest.fixture
def project(tmp_path):
    """A small source tree with one benchmark, its results and texts quoting it."""
    _write(tmp_path / "sklearn_ext/__init__.py", '"""Toy package."""\n')
    _write(tmp_path / "sklearn_ext/utils/__init__.py", "")
    _write(
        tmp_path / "sklearn_ext/utils/_maths.py",
        '''
        """Maths."""


        def double(x):
            """Twice x."""
            return 2 * x
        ''',
    )
    _write(
        tmp_path / "sklearn_ext/toy.py",
        '''
        """A toy method."""

        from sklearn_ext.utils._maths import double


        def fit(x):
            """Fit."""
            return double(x) + 1
        ''',
    )
    _write(tmp_path / "sklearn_ext/unrelated.py", "VALUE = 1\n")
    _write(
        tmp_path / "benchmarks/bench_toy.py",
        """
        from _helpers import table
        from sklearn_ext.toy import fit
        """,
    )
    _write(tmp_path / "benchmarks/_helpers.py", "def table():\n    return 1\n")
    block = ledger_block("toy", ROWS, SPEC, "benchmarks/bench_toy.py", tmp_path, [1.0])
    payload = {"benchmark": "toy", "rows": ROWS, "notes": "", **block}
    _write(tmp_path / "benchmarks/results/toy.json", json.dumps(payload, indent=2))
    _write(
        tmp_path / "README.md",
        """
        # Toy

        Figures:

        <!-- claims:template table
        | method | ACC |
        |---|---|
        | ours | {claim:toy.acc} ({claim:toy.vs_kmeans:ci} over k-means) |
        -->
        <!-- claims:begin table -->
        <!-- claims:end table -->
        """,
    )
    _write(
        tmp_path / "docs/user_guide/toy.rst",
        """
        Toy
        ===

        The toy method reaches ACC :claim:`toy.acc`, against
        :claim:`toy.kmeans_acc` for k-means (``n_init=10``).

        .. claims:table toy
           columns: method; ACC

        .. claims:end
        """,
    )
    write(tmp_path)
    return tmp_path


def _problems(root):
    problems, _ = check(root)
    return problems


def test_parse_cell_reads_value_interval_and_spread():
    assert parse_cell("0.770 ± 0.021")[:2] == (0.770, "0.770")
    assert parse_cell("0.770 ± 0.021")[2] == pytest.approx([0.749, 0.791])
    value, display, interval, shown = parse_cell("+0.373 [+0.339, +0.407]")
    assert (value, display, interval, shown) == (
        0.373,
        "+0.373",
        [0.339, 0.407],
        "[+0.339, +0.407]",
    )
    assert parse_cell("−0.011 [−0.018, −0.005]")[0] == -0.011
    assert parse_cell("50.9%")[:2] == (pytest.approx(0.509), "50.9%")
    assert parse_cell("3.2x faster")[:2] == (3.2, "3.2x")
    assert parse_cell("fits in 6.2 s")[:2] == (6.2, "6.2 s")
    assert parse_cell(0.12345)[:2] == (0.12345, "0.1235")
    with pytest.raises(ValueError, match="holds no figure"):
        parse_cell("n/a")


def test_a_claim_records_its_peer_and_a_missing_row_is_named():
    record = extract_claim("toy", SPEC.claims[2], ROWS)
    assert record["peer"] == "k-means" and record["peer_value"] == 0.700
    assert record["value"] == 0.112 and record["interval"] == [0.050, 0.174]
    with pytest.raises(ValueError, match="0 rows match.*rows: ours; k-means"):
        extract_claim("toy", Claim("x", "spectral", "ACC"), ROWS)


def test_a_consistent_project_passes_and_the_ledger_holds_every_field(project):
    assert _problems(project) == []
    ledger = load_ledger(project, with_state=True)
    record = ledger["toy.vs_kmeans"]
    for key in ("metric", "value", "interval", "seeds", "peer", "peer_value"):
        assert record[key] is not None, key
    assert record["budget"] == {"ours": "defaults", "peers": "k-means at the true k"}
    assert record["state"] == "fresh"
    payload = json.loads((project / "benchmarks/results/toy.json").read_text())
    measured = set(payload["ledger"]["code"])
    assert measured == {"sklearn_ext/toy.py", "sklearn_ext/utils/_maths.py"}
    readme = (project / "README.md").read_text()
    assert "| ours | 0.812 (+0.112 [+0.050, +0.174] over k-means) |" in readme
    assert "     - 0.700 ± 0.020" in (project / "docs/user_guide/toy.rst").read_text()


def test_a_bare_figure_in_the_user_guide_fails(project):
    path = project / "docs/user_guide/toy.rst"
    path.write_text(path.read_text() + "\nIt is also 1.8x faster than k-means.\n")
    problems = _problems(project)
    assert len(problems) == 1
    assert "toy.rst:" in problems[0] and "bare figure '1.8x'" in problems[0]


def test_settings_versions_and_code_are_not_figures():
    text = (
        "With ``alpha=0.5`` on scikit-learn 1.9.1 and Python 3.11, paired 95%\n"
        "intervals, :claim:`toy.acc`, see `the page <https://x.org/1.5>`_.\n"
    )
    assert bare_figures("x.rst", "rst", text) == []
    # In docstrings only figures near words about results count.
    doc = '"""Fit.\n\nThe step 0.5 halves the radius.\n\nACC 0.91 against 0.80.\n"""\n'
    found = [f.text.split("'")[1] for f in bare_figures("m.py", "python", doc)]
    assert found == ["0.91", "0.80"]


def test_an_unknown_claim_fails(project):
    path = project / "docs/user_guide/toy.rst"
    path.write_text(path.read_text() + "\nAnd :claim:`toy.recall`.\n")
    assert any("claim 'toy.recall' has no row" in p for p in _problems(project))


def test_an_edited_generated_figure_fails_until_rewritten(project):
    path = project / "README.md"
    path.write_text(path.read_text().replace("| ours | 0.812", "| ours | 0.830"))
    assert any("differs from the ledger" in p for p in _problems(project))
    assert write(project) == ["README.md"]
    assert _problems(project) == []


def test_a_code_change_makes_results_stale_but_a_docstring_change_does_not(project):
    path = project / "sklearn_ext/utils/_maths.py"
    path.write_text(path.read_text().replace('"""Twice x."""', '"""Two x."""'))
    assert _problems(project) == []
    (project / "sklearn_ext/unrelated.py").write_text("VALUE = 2\n")
    assert _problems(project) == []
    path.write_text(path.read_text().replace("2 * x", "x + x"))
    problems = _problems(project)
    assert len(problems) == 1
    assert "older than the code it measured" in problems[0]
    assert "sklearn_ext/utils/_maths.py" in problems[0]


def test_a_benchmark_change_is_reported_without_failing(project):
    path = project / "benchmarks/_helpers.py"
    path.write_text("def table():\n    return 2\n")
    problems, notes = check(project)
    assert problems == []
    assert notes and "benchmarks/_helpers.py" in notes[0]


def test_revalidation_keeps_results_only_if_the_behaviour_is_unchanged(
    project, monkeypatch
):
    path = project / "sklearn_ext/toy.py"
    path.write_text(path.read_text().replace("double(x) + 1", "1 + double(x)"))
    monkeypatch.setattr(_claims, "compute_fingerprint", lambda *a: [1.0 + 1e-9])
    assert revalidate(None, project, log=lambda m: None) == []
    payload = json.loads((project / "benchmarks/results/toy.json").read_text())
    assert freshness(payload, project)[0] == "validated"
    assert _problems(project) == []
    path.write_text(path.read_text().replace("1 + double(x)", "2 + double(x)"))
    monkeypatch.setattr(_claims, "compute_fingerprint", lambda *a: [1.5])
    assert revalidate(None, project, log=lambda m: None) == ["toy"]
    assert any("older than the code" in p for p in _problems(project))


def test_revalidation_on_a_machine_that_does_not_reproduce_the_fingerprint(
    project, monkeypatch
):
    """The measured fingerprint is 1.0; this machine computes 2.0 for the same
    code. An edit validates only if the current code's fingerprint equals that
    of the measured commit's code, computed here."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "measured"], cwd=project, check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True
    ).stdout.strip()
    results = project / "benchmarks/results/toy.json"
    payload = json.loads(results.read_text())
    payload["ledger"].update(commit=commit, dirty=False)
    results.write_text(json.dumps(payload, indent=2))
    path = project / "sklearn_ext/toy.py"
    path.write_text(path.read_text().replace("double(x) + 1", "1 + double(x)"))
    trees = []

    def here(stem, tree, root):
        trees.append(Path(tree))
        return [2.0]

    monkeypatch.setattr(_claims, "compute_fingerprint", here)
    assert revalidate(None, project, log=lambda m: None) == []
    assert trees[0] == project and trees[1] != project  # current, then reference
    payload = json.loads(results.read_text())
    assert payload["ledger"]["validated"][-1]["against"] == commit
    assert freshness(payload, project)[0] == "validated"
    # A behaviour change: the current code differs from the reference here.
    path.write_text(path.read_text().replace("1 + double(x)", "2 + double(x)"))

    def changed(stem, tree, root):
        return [2.0] if Path(tree) != project else [2.5]

    monkeypatch.setattr(_claims, "compute_fingerprint", changed)
    assert revalidate(None, project, log=lambda m: None) == ["toy"]


def test_a_results_file_outside_the_ledger_fails(project):
    _write(project / "benchmarks/results/other.json", json.dumps({"rows": []}))
    assert any("other.json: not in the ledger" in p for p in _problems(project))


def test_normalized_hash_ignores_docstrings_and_comments_only():
    a = 'def f(x):\n    """Doc."""\n    return x  # note\n'
    b = "def f(x):\n    return x\n"
    assert normalized_hash(a) == normalized_hash(b)
    assert normalized_hash(b) != normalized_hash("def f(x):\n    return -x\n")


def test_a_wrong_selector_keeps_the_run_and_fails_the_check(project):
    spec = Ledger("ToyEstimator", "toy", 5, {}, [Claim("x", "spectral", "ACC")])
    block = ledger_block("toy", ROWS, spec, "benchmarks/bench_toy.py", project)
    assert block["claims"] == [] and "0 rows match" in block["claims_error"]
    path = project / "benchmarks/results/toy.json"
    payload = json.loads(path.read_text())
    payload.update(block)
    path.write_text(json.dumps(payload))
    assert any("could not be read" in p for p in _problems(project))


def test_ratios_in_words_and_scientific_notation_are_figures():
    text = "It is 6 times faster and reaches 7e-5; ``tol=1e-4`` is a setting.\n"
    found = [f.text.split("'")[1] for f in bare_figures("x.rst", "rst", text)]
    assert found == ["6 times faster", "7e-5"]


def test_a_quoted_time_needs_the_code_it_was_measured_on(project, monkeypatch):
    rows = [*ROWS, {"method": "fit", "ACC": "2.5 s", DIFF: ""}]
    spec = Ledger(
        "ToyEstimator", "toy", 5, {}, [*SPEC.claims, Claim("t", "fit", "ACC")]
    )
    path = project / "benchmarks/results/toy.json"
    payload = json.loads(path.read_text())
    payload.update(
        ledger_block("toy", rows, spec, "benchmarks/bench_toy.py", project, [1.0])
    )
    payload["rows"] = rows
    path.write_text(json.dumps(payload))
    assert payload["claims"][-1]["timing"] is True
    guide = project / "docs/user_guide/toy.rst"
    guide.write_text(guide.read_text() + "\nA fit takes :claim:`toy.t`.\n")
    write(project)
    assert _problems(project) == []
    code = project / "sklearn_ext/toy.py"
    code.write_text(code.read_text().replace("double(x) + 1", "1 + double(x)"))
    monkeypatch.setattr(_claims, "compute_fingerprint", lambda *a: [1.0])
    assert revalidate(None, project, log=lambda m: None) == []
    problems = _problems(project)
    assert len(problems) == 1 and "claim 'toy.t' is a time measured" in problems[0]


def test_the_repository_passes_the_claims_check():
    out = subprocess.run(
        [sys.executable, "-m", "sklearn_ext", "claims", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
