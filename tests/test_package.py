"""Package-level behaviour: cheap import, registry, CLI, the import graph."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sklearn_ext
from sklearn_ext.utils.discovery import all_estimators


def _run(code):
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def test_import_is_cheap_and_torch_free():
    out = _run(
        "import sys, sklearn_ext, sklearn_ext.datasets, sklearn_ext.utils, "
        "sklearn_ext.base;"
        "from sklearn_ext.utils.discovery import all_estimators; all_estimators();"
        "print('torch' in sys.modules)"
    )
    assert out.strip() == "False"


def test_torch_loads_when_a_torch_estimator_is_used():
    code = (
        "import sys, numpy as np; sys.path.insert(0, 'tests');"
        "from toy_estimators import ToyTorchRegressor;"
        "before = 'torch' in sys.modules;"
        "ToyTorchRegressor(max_iter=1, device='cpu').fit(np.ones((4, 2)), np.ones(4));"
        "print(before, 'torch' in sys.modules)"
    )
    assert _run(code).split() == ["False", "True"]


def test_lazy_subpackages():
    assert "datasets" in dir(sklearn_ext)
    assert sklearn_ext.datasets.load_mfeat is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sklearn_ext.nope  # noqa: B018


def test_all_estimators_filters_and_rejects_unknown_types():
    everything = all_estimators()
    for kind in ("classifier", "regressor", "transformer", "cluster"):
        assert set(all_estimators(kind)) <= set(everything)
    regressors = dict(all_estimators("regressor"))
    classifiers = dict(all_estimators(["classifier"]))
    assert (
        "GraphGuidedRegressor" in regressors
        and "GraphGuidedRegressor" not in classifiers
    )
    assert "GraphGuidedClassifier" in classifiers
    with pytest.raises(ValueError, match="type_filter"):
        all_estimators("forest")


def test_cli_list_demo_and_bench_run():
    listing = _run("from sklearn_ext.__main__ import main; main(['list'])")
    assert "name" in listing and "family" in listing and "GPU" in listing
    for name, _ in all_estimators():
        assert name in listing
    demo = subprocess.run(
        [sys.executable, "-m", "sklearn_ext", "demo", "NoSuchEstimator"],
        capture_output=True,
        text=True,
    )
    assert demo.returncode == 2 and "NoSuchEstimator" in demo.stderr
    bench = subprocess.run(
        [sys.executable, "-m", "sklearn_ext", "bench", "no_such_method"],
        capture_output=True,
        text=True,
    )
    assert bench.returncode == 2 and "bench_no_such_method.py" in bench.stderr


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "sklearn_ext", *args], capture_output=True, text=True
    )


def _assert_fits(text, width=100):
    wide = [line for line in text.splitlines() if len(line) > width]
    assert not wide, f"lines wider than {width} columns: {wide}"


def test_cli_demo_list_names_every_demo_without_running_one():
    listing = _cli("demo", "--list")
    assert listing.returncode == 0, listing.stderr
    _assert_fits(listing.stdout)
    assert listing.stdout.split("\n")[0].split() == ["name", "data", "seconds"]
    rows = {line.split()[0]: line for line in listing.stdout.splitlines()[2:] if line}
    for name, _ in all_estimators():
        assert name in rows and rows[name].split()[-1].isdigit(), name
    assert "demos" in listing.stdout and "one core" in listing.stdout
    one = _cli("demo", "MultiTaskGuarantee", "--list")
    assert one.returncode == 0 and "MultiTaskGuarantee" in one.stdout
    assert "TGINEE" not in one.stdout
    unknown = _cli("demo", "NoSuchEstimator", "--list")
    assert unknown.returncode == 2 and "NoSuchEstimator" in unknown.stderr


def test_cli_demo_verbose_row_fits_100_columns():
    run = _cli("demo", "ConformalRobustOptimizer", "--verbose")
    assert run.returncode == 0, run.stderr
    _assert_fits(run.stdout)
    header = run.stdout.splitlines()[0].split()
    assert header == ["name", "metric", "ours", "baseline", "verdict", "seconds"]
    row = run.stdout.splitlines()[2]
    assert row.startswith("ConformalRobustOptimizer")
    assert row.split()[-2] in ("ours", "baseline", "tie")
    # The long descriptions come under the row with --verbose only.
    assert "data: make_shortest_path" in run.stdout
    assert "(lower is better)" in run.stdout and "baseline: Ridge" in run.stdout
    assert "1 demo in" in run.stdout
    # stderr is no terminal here: no progress line drawn over the table.
    assert "\r" not in run.stderr and "\033" not in run.stderr


def test_demo_table_wraps_long_cells_within_100_columns():
    from sklearn_ext.__main__ import _DemoTable

    name = "FederatedMultiViewClustering"
    result = {
        "data": "a data set " * 30,
        "metric": "a metric whose description runs on and on " * 4,
        "score": 12345.678,
        "baseline": "the strongest plain baseline " * 10,
        "baseline_score": -0.5,
        "greater_is_better": False,
        "seconds": 123.4,
        "cpu_seconds": 120.0,
        "better": "baseline",
        "time_saved": 0.25,
    }
    for verbose in (False, True):
        table = _DemoTable([name, "TGINEE"], verbose=verbose)
        text = "\n".join([table.header(), table.row(name, result, None)])
        _assert_fits(text)
        assert text.splitlines()[2].split()[-2:] == ["baseline", "123.4"]
        assert ("time_saved: 0.250" in text) == verbose
        assert ("(lower is better)" in " ".join(text.split())) == verbose
    error = table.row("TGINEE", None, "error: ValueError: " + "x" * 300)
    _assert_fits(error)
    assert error.split()[:2] == ["TGINEE", "error:"]
    assert error.splitlines()[0].split()[-3:] == ["-", "-", "error"]


def test_cli_demo_runs_in_one_thread_workers_as_they_finish(monkeypatch, capsys):
    """Two cheap demos through the worker pool: both rows, a summary, rc 0."""
    import sklearn_ext.__main__ as cli

    cheap = [
        (name, cls)
        for name, cls in all_estimators()
        if name in ("ConformalRobustOptimizer", "MultiTaskGuarantee")
    ]
    monkeypatch.setattr(cli, "_estimators", lambda: cheap)
    assert cli.main(["demo", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    _assert_fits(out)
    rows = [line.split()[0] for line in out.splitlines()[2:] if line[:1].isalpha()]
    assert sorted(rows[:2]) == ["ConformalRobustOptimizer", "MultiTaskGuarantee"]
    assert "2 demos in" in out and "with 2 jobs" in out
    assert cli.main(["demo", "--jobs", "0"]) == 2


def test_demo_worker_keeps_thread_pools_to_one(monkeypatch):
    import sklearn_ext.__main__ as cli

    for variable in cli._THREAD_VARIABLES:
        monkeypatch.setenv(variable, "8")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    cls = dict(all_estimators())["MultiTaskGuarantee"]
    name, result, error = cli._demo_task("MultiTaskGuarantee", cls)
    assert error is None and result["better"] in ("MultiTaskGuarantee", "baseline")
    for variable in cli._THREAD_VARIABLES:
        assert os.environ[variable] == "1", variable
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"


# --- the import graph ------------------------------------------------------------
#
# Layers, lowest first: utils (with the root package, which holds the version and
# loads subpackages lazily by name) < base, datasets < the families < what sits
# beside the command line (__main__ and the other top-level modules) and each
# family's _demo.py. A module imports only from its own layer or below, a family
# only from itself and the layers below it, and no import circle exists.

_LOWER_LAYERS = {"utils": 0, "base": 1, "datasets": 1}
_FAMILY, _TOP = 2, 3

# Modules below the families that load modules by a name computed at run time
# (importlib), which the graph cannot see: each is a registry that walks every
# family by name. Any other such call below the families fails the test.
_DYNAMIC_IMPORTERS = {
    "sklearn_ext": "loads the subpackages lazily (module __getattr__)",
    "sklearn_ext.utils.discovery": "all_estimators walks every family",
    "sklearn_ext.utils._persistence": "collects every family's skops types",
    "sklearn_ext.utils._testing": "the test harness walks every family module",
}


def _modules(root):
    """Dotted name -> (path, is_package) of every module under ``root``."""
    modules = {}
    for path in sorted(Path(root).rglob("*.py")):
        parts = path.relative_to(Path(root).parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _imported_names(node, package):
    """Dotted names an import statement imports (relative ones resolved).

    ``from P import n`` imports ``P`` (its ``__init__`` when ``P`` is a
    package) and ``P.n`` when that is a module; ``import a.b`` imports
    ``a.b``. Parent packages, which Python also runs, are not counted: every
    submodule would otherwise import its own package.
    """
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1])
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = node.module
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _is_dynamic_import(node):
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__")


def import_graph(root):
    """Edges of every import in the package, module level and inside functions.

    Returns
    -------
    graph : dict of str to set of str
        The package's modules each imports (edges outside it are dropped).
    dynamic : set of str
        Modules that call ``importlib.import_module`` or ``__import__``.
    packages : set of str
        The modules that are packages.
    """
    modules = _modules(root)
    graph = {name: set() for name in modules}
    dynamic = set()
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets = _imported_names(node, package)
                graph[name].update(t for t in targets if t in modules and t != name)
            elif isinstance(node, ast.Call) and _is_dynamic_import(node):
                dynamic.add(name)
    return graph, dynamic, {name for name, (_, pkg) in modules.items() if pkg}


def import_cycles(graph):
    """The import circles: strongly connected groups of modules (Tarjan)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def module_layer(module, packages):
    """Layer of a module and its family (None outside the families)."""
    parts = module.split(".")
    if len(parts) == 1:
        return 0, None
    top = parts[1]
    if top in _LOWER_LAYERS:
        return _LOWER_LAYERS[top], None
    if ".".join(parts[:2]) not in packages or parts[-1].endswith("_demo"):
        return _TOP, None
    return _FAMILY, top


def layering_violations(graph, packages):
    """Imports that go up a layer or from one family into another."""
    bad = []
    for module, targets in sorted(graph.items()):
        layer, family = module_layer(module, packages)
        for target in sorted(targets):
            target_layer, target_family = module_layer(target, packages)
            if target_layer > layer or (
                layer == target_layer == _FAMILY and family != target_family
            ):
                bad.append(f"{module} -> {target}")
    return bad


def _write_package(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_import_graph_checks_find_planted_faults(tmp_path):
    """The checks themselves, on a planted package: a circle through a
    package's __init__, an import up from datasets into a family (relative,
    inside a function), one family importing another, a family importing a
    demo, and a dynamic import."""
    root = tmp_path / "sklearn_ext"
    _write_package(
        root,
        {
            "__init__.py": "",
            "utils/__init__.py": "",
            "utils/_a.py": "import numpy\n",
            "datasets/__init__.py": "from ._gen import make\n",
            "datasets/_gen.py": "def make():\n    from ..net._layout import f\n",
            "net/__init__.py": "from sklearn_ext.net._est import Est\n",
            "net/_est.py": "from sklearn_ext.net import _layout\n",
            "net/_layout.py": "from sklearn_ext.utils._a import numpy\n",
            "net/_demo.py": "from sklearn_ext.net import Est\n",
            "rl/__init__.py": "",
            "rl/_agent.py": "from sklearn_ext.net._layout import f\n",
            "rl/_x.py": "import sklearn_ext.rl._demo\n",
            "rl/_demo.py": "",
            "base.py": "import importlib\nimportlib.import_module('x')\n",
        },
    )
    graph, dynamic, packages = import_graph(root)
    assert graph["sklearn_ext.datasets._gen"] == {"sklearn_ext.net._layout"}
    assert graph["sklearn_ext.net._est"] == {
        "sklearn_ext.net",
        "sklearn_ext.net._layout",
    }
    assert import_cycles(graph) == [["sklearn_ext.net", "sklearn_ext.net._est"]]
    assert set(layering_violations(graph, packages)) == {
        "sklearn_ext.datasets._gen -> sklearn_ext.net._layout",
        "sklearn_ext.rl._agent -> sklearn_ext.net._layout",
        "sklearn_ext.rl._x -> sklearn_ext.rl._demo",
    }
    assert dynamic == {"sklearn_ext.base"}
    # Once the package's own module is named instead, the circle is gone.
    (root / "net/_est.py").write_text("import sklearn_ext.net._layout as layout\n")
    assert import_cycles(import_graph(root)[0]) == []


def test_import_graph_has_no_cycles_and_respects_layers():
    graph, dynamic, packages = import_graph(Path(sklearn_ext.__file__).parent)
    assert import_cycles(graph) == []
    assert layering_violations(graph, packages) == []
    assert set(_DYNAMIC_IMPORTERS) <= set(graph)
    below_families = {m for m in dynamic if module_layer(m, packages)[0] < _FAMILY}
    assert below_families <= set(_DYNAMIC_IMPORTERS), (
        "a module below the families imports by a computed name: "
        f"{sorted(below_families - set(_DYNAMIC_IMPORTERS))}"
    )
