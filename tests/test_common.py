"""Every estimator through scikit-learn's checks and sklearn_ext's own contract.

The estimators come from ``all_estimators()``; their small parameters from each
class's ``_get_test_params()``; the checks they cannot pass from the
``_expected_failed_checks`` declared in their module (strict: a listed check that
passes fails here). The backend's toy regressor (tests/toy_estimators.py) runs
through the same harness, so the harness itself is exercised before any method
lands.
"""

import inspect
import io
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import sklearn
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, StandardScaler
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import check_param_validation
from sklearn.utils.validation import has_fit_parameter
from toy_estimators import ToyTorchRegressor

from sklearn_ext.__main__ import demo_function, run_demo
from sklearn_ext.base import TorchDeviceMixin
from sklearn_ext.utils import skops_trusted_types
from sklearn_ext.utils._messages import _INTERNAL_DIRS
from sklearn_ext.utils._sklearn_compat import BaseSearchCV, parametrize_with_checks
from sklearn_ext.utils._testing import (
    METHOD_CONTRACT,
    estimators_to_check,
    expected_failed_checks,
    instances_of,
    make_test_data,
    predictions,
    unregistered_estimators,
)
from sklearn_ext.utils._torch import ModuleState
from sklearn_ext.utils.discovery import all_estimators

TESTS_DIR = Path(__file__).parent
ROOT = TESTS_DIR.parent

REGISTERED = all_estimators()
ESTIMATORS = [
    *estimators_to_check(),
    *estimators_to_check([("Toy", ToyTorchRegressor)]),
]


def _id(estimator):
    return type(estimator).__name__


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


# --- the registry --------------------------------------------------------------


def test_every_estimator_module_is_registered():
    """A method whose class is not re-exported would escape every check below."""
    assert unregistered_estimators() == []


def test_unregistered_estimator_is_detected(tmp_path, monkeypatch):
    """The scan above really finds a class that a family forgot to re-export."""
    pkg = tmp_path / "fakepkg"
    (pkg / "fam").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "fam" / "__init__.py").write_text("from fakepkg.fam._a import Shown\n")
    (pkg / "fam" / "_a.py").write_text(
        "from sklearn.base import BaseEstimator\n"
        "class Shown(BaseEstimator):\n    pass\n"
    )
    (pkg / "fam" / "_b.py").write_text(
        "from sklearn.base import BaseEstimator\n"
        "class Hidden(BaseEstimator):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import fakepkg.fam

    found = unregistered_estimators("fakepkg", registered={fakepkg.fam.Shown})
    assert found == ["fakepkg.fam._b.Hidden"]


@pytest.mark.parametrize("name, cls", REGISTERED, ids=[n for n, _ in REGISTERED])
def test_estimator_meets_method_contract(name, cls):
    assert not name.lower().startswith("base")
    missing = [attr for attr in METHOD_CONTRACT if not hasattr(cls, attr)]
    assert not missing, f"{name} lacks {missing}"
    # The demo lives in the family's _demo.py (no _demo classmethod on the class),
    # with its seconds on one core and a summary line that `demo --list` shows.
    fn, seconds = demo_function(cls)
    assert fn.__module__ == f"sklearn_ext.{cls.__module__.split('.')[1]}._demo"
    assert callable(fn) and seconds > 0
    assert (fn.__doc__ or "").strip(), f"demo_{name} has no docstring"
    assert not hasattr(cls, "_demo") and not hasattr(cls, "_demo_seconds")
    assert (ROOT / "benchmarks" / f"bench_{cls._bench_name}.py").exists()
    doc = cls.__doc__ or ""
    assert "References" in doc and "Examples" in doc, f"{name} docstring incomplete"
    # A trailing underscore names fitted state; a method named so reads as one.
    like_state = [
        attr
        for attr, value in inspect.getmembers(cls)
        if callable(value) and attr.endswith("_") and not attr.startswith("_")
    ]
    assert not like_state, f"{name}: methods named like fitted attributes {like_state}"
    for check, reason in expected_failed_checks(next(instances_of(cls))).items():
        assert check.startswith("check_") and len(reason) > 10, (check, reason)


# --- scikit-learn's checks -----------------------------------------------------


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_check_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


# --- sklearn_ext's own checks ----------------------------------------------------


def _comparable(params):
    # Nested estimators (alone or in a list) are cloned, i.e. equal by
    # parameters, not by identity.
    def one(v):
        if hasattr(v, "get_params"):
            return type(v), _comparable(v.get_params())
        if isinstance(v, (list, tuple)):
            return type(v), [one(x) for x in v]
        return v

    return {k: one(v) for k, v in params.items()}


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_clone_keeps_params_and_drops_fit(estimator):
    X, y = make_test_data(estimator)
    fitted = clone(estimator).fit(X, y)
    copy = clone(fitted)
    assert _comparable(copy.get_params()) == _comparable(estimator.get_params())
    assert not any(k.endswith("_") and not k.startswith("__") for k in vars(copy))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_pickle_in_fresh_process(estimator, tmp_path):
    """Unpickled in a new interpreter with CUDA hidden, predictions are identical."""
    X, y = make_test_data(estimator)
    fitted = clone(estimator).fit(X, y)
    expected = predictions(fitted, X)
    assert expected, "the estimator has no inference method"
    with open(tmp_path / "est.pkl", "wb") as f:
        pickle.dump((fitted, X), f)
    script = textwrap.dedent(
        """
        import pickle, sys
        import numpy as np
        from sklearn_ext.utils._testing import predictions
        with open(sys.argv[1], "rb") as f:
            est, X = pickle.load(f)
        np.savez(sys.argv[2], **predictions(est, X))
        """
    )
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONPATH": os.pathsep.join(
            [str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]
        ),
    }
    out = tmp_path / "pred.npz"
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "est.pkl"), str(out)],
        check=True,
        env=env,
        capture_output=True,
    )
    with np.load(out) as got:
        assert sorted(got.files) == sorted(expected)
        for method, values in expected.items():
            np.testing.assert_array_equal(got[method], values, err_msg=method)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_pipeline_grid_search_parallel(estimator):
    X, y = make_test_data(estimator)
    if _takes_networks(estimator):
        # A transformer of 3-D input (networks) comes first; a scaler and a
        # regressor use its 2-D rows.
        search = GridSearchCV(
            Pipeline(
                [
                    ("est", clone(estimator)),
                    ("scale", StandardScaler()),
                    ("final", LinearRegression()),
                ]
            ),
            {"scale__with_mean": [True, False]},
            cv=3,
            n_jobs=2,
            error_score="raise",
        )
        search.fit(X, y)
        assert np.isfinite(search.cv_results_["mean_test_score"]).all()
        assert predictions(search.best_estimator_, X)
        return
    # Estimators of non-negative data (interaction counts) get a scaler that
    # keeps them non-negative; of integer codes (puzzle cells), a step that
    # keeps the codes (a scaler would change what they mean).
    tags = get_tags(estimator)
    if tags.input_tags.categorical:
        scaler, grid = FunctionTransformer(), {"scale__validate": [True, False]}
    elif tags.input_tags.positive_only:
        scaler, grid = MaxAbsScaler(), {"scale__copy": [True, False]}
    else:
        scaler, grid = StandardScaler(), {"scale__with_mean": [True, False]}
    steps = [("scale", scaler), ("est", clone(estimator))]
    scoring = None
    if not (is_classifier(estimator) or is_regressor(estimator)):
        if tags.estimator_type == "clusterer":
            scoring = "adjusted_rand_score"
        elif hasattr(estimator, "transform"):
            steps.append(("final", LinearRegression()))
        # Otherwise its own score (the puzzle solvers' solve rate) ranks.
    search = GridSearchCV(
        Pipeline(steps),
        grid,
        cv=3,
        n_jobs=2,
        scoring=scoring,
        error_score="raise",
    )
    search.fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert predictions(search.best_estimator_, X)


def _takes_networks(estimator):
    """Its input is 3-D (one matrix or time series per sample), not a table."""
    tags = get_tags(estimator).input_tags
    return not tags.two_d_array and tags.three_d_array


def _bad_networks(X):
    """The bad-input table for an estimator of 3-D input (see _bad_inputs)."""
    with_nan = X.copy()
    with_nan[3, 0, 0] = np.nan
    with_inf = X.copy()
    with_inf[2, 1, 1] = np.inf
    return {
        "nan": (with_nan, r"NaN"),
        "inf": (with_inf, r"[Ii]nfinit|inf"),
        "empty": (X[:0], r"0 sample|no subject|empty"),
        "1d": (X[:, 0, 0], r"1-D|1D|3-D|dimension"),
        "3d": (X[:, :, 0], r"2-D|2D|3-D|dimension"),
        "strings": (
            np.where(X > 0, "high", "low").astype(object),
            r"string|str|numeric|convert",
        ),
    }


def _bad_inputs(n_features):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(20, n_features))
    with_nan = X.copy()
    with_nan[3, 0] = np.nan
    with_inf = X.copy()
    with_inf[2, 1 % n_features] = np.inf
    return {
        "nan": (with_nan, r"NaN"),
        "inf": (with_inf, r"[Ii]nfinity|inf"),
        "empty": (np.empty((0, n_features)), r"0 sample"),
        "1d": (X[:, 0], r"Expected 2D|1D|1-D|one-dimensional|2D"),
        "3d": (X.reshape(20, n_features, 1), r"dim|2D|3D|3-D"),
        "strings": (
            np.where(X > 0, "high", "low").astype(object),
            r"string|str|numeric|convert",
        ),
    }


BAD_CASES = ["nan", "inf", "empty", "1d", "3d", "strings"]


@pytest.mark.parametrize("case", BAD_CASES)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_bad_input_at_fit(estimator, case):
    X, y = make_test_data(estimator)
    if case == "nan" and get_tags(estimator).input_tags.allow_nan:
        pytest.skip("NaN is allowed (it marks a missing view)")
    if _takes_networks(estimator):
        bad, message = _bad_networks(X)[case]
    else:
        bad, message = _bad_inputs(X.shape[1])[case]
    y_bad = y[: len(bad)] if len(bad) <= len(y) else y
    with pytest.raises((ValueError, TypeError), match=message):
        clone(estimator).fit(bad, y_bad)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_bad_input_at_predict(estimator):
    X, y = make_test_data(estimator)
    fitted = clone(estimator).fit(X, y)
    wrong = np.ones((5, X.shape[1] + 1))
    expected = r"features"
    if _takes_networks(estimator):
        # Networks of one node more than those fitted.
        wrong = np.random.RandomState(1).rand(5, X.shape[1] + 1, X.shape[2] + 1)
        if wrong.shape[1] == wrong.shape[2]:
            wrong = (wrong + wrong.transpose(0, 2, 1)) / 2
        expected = r"nodes"
    for method in ("predict", "predict_proba", "decision_function", "transform"):
        if hasattr(fitted, method):
            with pytest.raises(ValueError, match=expected):
                getattr(fitted, method)(wrong)
    X_before = X.copy()
    predictions(fitted, X)
    np.testing.assert_array_equal(X, X_before)


# --- conventions users expect ----------------------------------------------------


def _seeded(estimator):
    """A clone with random_state fixed, so that two fits can be compared."""
    est = clone(estimator)
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    return est


def _weights(n, seed=0):
    return np.random.RandomState(seed).uniform(0.5, 2.0, size=n)


def _is_router(estimator):
    """A search object: fit(X, y, **params) routes metadata to its estimator."""
    return isinstance(estimator, BaseSearchCV)


def _takes_sample_weight(estimator):
    return has_fit_parameter(estimator, "sample_weight")


def _assert_same_predictions(a, b):
    assert sorted(a) == sorted(b)
    for method in a:
        np.testing.assert_allclose(a[method], b[method], rtol=1e-7, err_msg=method)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_fit_target_is_y(estimator):
    """``fit(X, y=...)``: the target is called y, as in scikit-learn."""
    names = list(inspect.signature(type(estimator).fit).parameters)
    assert names[1:3] == ["X", "y"], names
    X, y = make_test_data(estimator)
    expected = predictions(_seeded(estimator).fit(X, y), X)
    _assert_same_predictions(predictions(_seeded(estimator).fit(X=X, y=y), X), expected)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_sample_weight_in_fit(estimator):
    """sample_weight is accepted, or its absence is explained in the class."""
    reason = getattr(type(estimator), "_no_sample_weight", None)
    if reason is not None:
        assert not _takes_sample_weight(estimator)
        assert isinstance(reason, str) and len(reason) > 20, reason
        return
    if _is_router(estimator):
        # Routed like scikit-learn's searches; tested in the method's own file.
        kinds = [
            p.kind for p in inspect.signature(type(estimator).fit).parameters.values()
        ]
        assert inspect.Parameter.VAR_KEYWORD in kinds
        return
    assert _takes_sample_weight(estimator), (
        f"{_id(estimator)}.fit takes no sample_weight and its class states no "
        "_no_sample_weight reason"
    )
    names = list(inspect.signature(type(estimator).fit).parameters)
    assert names[1:4] == ["X", "y", "sample_weight"], names


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_sample_weight_metadata_routing(estimator):
    """Routed by set_fit_request through a Pipeline, weights act as passed directly."""
    if not _takes_sample_weight(estimator):
        pytest.skip("no sample_weight")
    X, y = make_test_data(estimator)
    w = _weights(len(X))
    direct = predictions(_seeded(estimator).fit(X, y, sample_weight=w), X)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline(
            [
                ("identity", FunctionTransformer()),
                ("est", _seeded(estimator).set_fit_request(sample_weight=True)),
            ]
        )
        pipe.fit(X, y, sample_weight=w)
        routed = predictions(pipe[-1], X)
    _assert_same_predictions(routed, direct)


def _named(value, names, n_features, param):
    """A column parameter's positions rewritten as column names.

    A string (an option such as ``dyad_columns="auto"``) is kept as it is.
    """
    if isinstance(value, str):
        return value
    if param == "views" and all(isinstance(v, (int, np.integer)) for v in value):
        edges = np.cumsum([0, *value])
        return [names[a:b] for a, b in zip(edges[:-1], edges[1:])]
    if param == "views":
        return [[names[i] for i in view] for view in value]
    if isinstance(value, (int, np.integer)):
        return names[value]
    return type(value)(names[i] for i in value)


COLUMN_PARAMS = ("task_column", "dyad_columns", "views")


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_dataframe_with_column_names(estimator):
    """A DataFrame fits as its array does; column parameters take its names."""
    pd = pytest.importorskip("pandas")
    if _takes_networks(estimator):
        pytest.skip("its input is 3-D (networks), not a table with column names")
    X, y = make_test_data(estimator)
    names = [f"col_{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    params = estimator.get_params()
    named = {
        p: _named(params[p], names, X.shape[1], p)
        for p in COLUMN_PARAMS
        if params.get(p) is not None
    }
    expected = predictions(_seeded(estimator).fit(X, y), X)
    fitted = _seeded(estimator).set_params(**named).fit(frame, y)
    assert list(fitted.feature_names_in_) == names
    _assert_same_predictions(predictions(fitted, frame), expected)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_inputs_not_modified(estimator):
    """fit and inference leave X, y and sample_weight untouched (read-only works)."""
    X, y = make_test_data(estimator)
    w = _weights(len(X)) if _takes_sample_weight(estimator) else None
    originals = [a.copy() for a in (X, y, w) if a is not None]
    for a in (X, y, w):
        if a is not None:
            a.setflags(write=False)
    kwargs = {} if w is None else {"sample_weight": w}
    fitted = clone(estimator).fit(X, y, **kwargs)
    predictions(fitted, X)
    for before, after in zip(originals, [a for a in (X, y, w) if a is not None]):
        np.testing.assert_array_equal(after, before)


def _internal(filename):
    return os.path.abspath(filename).startswith(_INTERNAL_DIRS)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_warnings_point_at_the_callers_line(estimator):
    """A fit stopped at max_iter=1 warns, and every warning names this file."""
    params = estimator.get_params()
    if "max_iter" not in params:
        pytest.skip("no max_iter")
    X, y = make_test_data(estimator)
    est = clone(estimator).set_params(max_iter=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    if params.get("tol", 0) is not None:
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    ours = [w for w in caught if _internal(w.filename)]
    assert not ours, [(w.filename, w.lineno, str(w.message)) for w in ours]
    if not isinstance(estimator, ToyTorchRegressor):  # the toy lives in tests/
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                assert w.filename == __file__, (w.filename, str(w.message))


@pytest.mark.slow
@pytest.mark.parametrize("name, cls", REGISTERED, ids=[n for n, _ in REGISTERED])
def test_demo_at_defaults_converges_and_reports(name, cls):
    """The CLI demo (``demo_<name>`` of the family's ``_demo.py``) fits at the
    defaults without a ConvergenceWarning and returns the documented dict."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        try:
            result = run_demo(cls)
        except ImportError as exc:  # a demo that needs an optional extra
            pytest.skip(str(exc))
    assert isinstance(result["greater_is_better"], bool)
    assert np.isfinite(result["score"]) and np.isfinite(result["baseline_score"])
    assert result["better"] in (name, "baseline", "tie")
    for key in ("data", "metric", "baseline"):
        assert isinstance(result[key], str) and result[key], key
    assert result["seconds"] > 0 and result["cpu_seconds"] >= 0


# --- persistence -------------------------------------------------------------------


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_skops_round_trip(estimator, tmp_path):
    """skops.io loads a fitted estimator trusting only sklearn_ext's own types."""
    sio = pytest.importorskip("skops.io")
    X, y = make_test_data(estimator)
    fitted = clone(estimator).fit(X, y)
    path = tmp_path / "est.skops"
    sio.dump(fitted, path)
    trusted = skops_trusted_types()
    if isinstance(estimator, ToyTorchRegressor):
        trusted = [*trusted, "toy_estimators.ToyTorchRegressor"]
    untrusted = set(sio.get_untrusted_types(file=path)) - set(trusted)
    assert not untrusted, f"types outside sklearn_ext to trust: {sorted(untrusted)}"
    loaded = sio.load(path, trusted=trusted)
    expected = predictions(fitted, X)
    got = predictions(loaded, X)
    assert sorted(got) == sorted(expected)
    for method, values in expected.items():
        np.testing.assert_array_equal(got[method], values, err_msg=method)


@pytest.mark.parametrize(
    "estimator",
    [e for e in ESTIMATORS if isinstance(e, TorchDeviceMixin)],
    ids=_id,
)
def test_fitted_torch_state_loads_with_weights_only(estimator):
    """Each pickled module is a CPU state dict that torch loads weights-only."""
    import torch

    X, y = make_test_data(estimator)
    fitted = clone(estimator).fit(X, y)
    states = [v for v in fitted.__getstate__().values() if isinstance(v, ModuleState)]
    assert len(states) == sum(hasattr(fitted, a) for a in fitted._module_attributes)
    for state in states:
        tensors = torch.load(io.BytesIO(state.data), weights_only=True)
        assert all(t.device.type == "cpu" for t in tensors.values())
