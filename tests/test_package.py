"""Package-level behaviour: cheap import, registry, CLI."""

import subprocess
import sys

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
