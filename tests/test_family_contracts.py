"""The estimator contract where scikit-learn's checks cannot run as they are.

1. ``TaskVectorTransporter`` (fit takes two base models beside the calibration
   rows; transform moves a task vector, not rows) and ``MetaAllocationPolicy``
   (fit takes learning curves) skip scikit-learn's checks: the contract of
   tests/contract_checks.py runs on them (the reinforcement-learning agents have
   theirs in tests/test_rl_contract.py).
2. The puzzle solvers go through scikit-learn's checks in tests/test_common.py,
   but the checks that fit on the tables they generate cannot reach them (no
   generated table is a puzzle; see ``_EXPECTED_FAILED_CHECKS`` in
   sklearn_ext/coordination/_puzzles.py). What those checks assert is asserted
   here on puzzles.
"""

import inspect
import pickle

import numpy as np
import pytest
from contract_checks import Bad, cases_of, contract_tests
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.utils.validation import check_is_fitted

from sklearn_ext.coordination import SheafADMMMazeSolver, SheafADMMSudokuSolver
from sklearn_ext.datasets import load_lcdb_curves
from sklearn_ext.model_selection import LandmarkProblem, MetaAllocationPolicy
from sklearn_ext.transfer import TaskVectorTransporter
from sklearn_ext.utils._testing import instances_of
from sklearn_ext.utils.discovery import all_estimators


def _args(*args, **kwargs):
    return lambda: (args, kwargs)


# --- TaskVectorTransporter ---------------------------------------------------------


def _mlp(widths, seed):
    """A ReLU chain with weights drawn from its own generator."""
    import torch
    from torch import nn

    g = torch.Generator().manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        linear = nn.Linear(a, b)
        with torch.no_grad():
            linear.weight.copy_(torch.randn(b, a, generator=g) / a**0.5)
            linear.bias.copy_(0.1 * torch.randn(b, generator=g))
        layers.append(linear)
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


_MODELS = {}


def _models():
    """Source and target bases (hidden widths 8 and 12) and a task vector."""
    if not _MODELS:
        from sklearn_ext.transfer import task_vector

        source, target = _mlp((6, 8, 3), seed=0), _mlp((6, 12, 3), seed=1)
        tuned = _mlp((6, 8, 3), seed=0)
        for p, noise in zip(tuned.parameters(), _mlp((6, 8, 3), seed=2).parameters()):
            p.data += 0.1 * noise.data
        _MODELS.update(
            source=source,
            target=target,
            deeper=_mlp((6, 8, 8, 3), seed=3),
            tau=task_vector(tuned, source),
        )
    return _MODELS


CALIBRATION = np.random.default_rng(0).normal(size=(40, 6))


def _transport_input(X=CALIBRATION, **models):
    def make():
        m = _models()
        bases = {"source_base": m["source"], "target_base": m["target"], **models}
        return (X,), {
            k: m.get(v, v) if isinstance(v, str) else v for k, v in bases.items()
        }

    return make


def _task_vector(**changes):
    def make():
        tau = dict(_models()["tau"])
        for key, value in changes.items():
            if value is None:
                del tau[key]
            else:
                tau[key] = value(tau[key])
        return (tau,), {}

    return make


TRANSPORTER = cases_of(
    TaskVectorTransporter,
    fit_input=_transport_input(),
    calls=lambda: [("maps_", None), ("transform", (_models()["tau"],))],
    alt_params={"align": "hungarian"},
    needs=("torch",),
    bad=(
        Bad(
            "rows-of-another-width",
            _transport_input(X=np.ones((20, 7))),
            ValueError,
            r"7 columns; source_base reads 6",
        ),
        Bad(
            "nan-rows",
            _transport_input(X=np.where(CALIBRATION > 1, np.nan, CALIBRATION)),
            ValueError,
            r"NaN",
        ),
        Bad("1d-rows", _transport_input(X=CALIBRATION[0]), ValueError, r"2D"),
        Bad("one-row", _transport_input(X=CALIBRATION[:1]), ValueError, r"1 sample"),
        Bad(
            "layers-differ",
            _transport_input(target_base="deeper"),
            ValueError,
            r"do not correspond layer by layer: 2 linear layers against 3",
        ),
        Bad(
            "not-a-model",
            _transport_input(source_base=np.eye(3)),
            TypeError,
            r"source_base must be a torch nn.Sequential.*got ndarray",
        ),
        Bad(
            "missing-update",
            _task_vector(**{"0.bias": None}),
            ValueError,
            r"missing \['0.bias'\]",
            method="transform",
        ),
        Bad(
            "update-of-another-shape",
            _task_vector(**{"0.weight": lambda w: w[:3, :3]}),
            ValueError,
            r"has shape",
            method="transform",
        ),
        Bad(
            "nan-update",
            _task_vector(**{"0.bias": lambda b: b * float("nan")}),
            ValueError,
            r"NaN",
            method="transform",
        ),
        Bad(
            "not-a-dict",
            _args([1, 2]),
            TypeError,
            r"dict",
            method="transform",
        ),
        Bad(
            "apply-to-another-target",
            lambda: ((_models()["source"], _models()["tau"]), {}),
            ValueError,
            r"fitted for a target of widths \(6, 12, 3\)",
            method="apply",
        ),
    ),
)


# --- MetaAllocationPolicy ------------------------------------------------------------

LCDB = load_lcdb_curves()
PROBLEM = MetaAllocationPolicy().problem(LCDB, 200)
TWO_LANDMARKS = LandmarkProblem.from_lcdb(LCDB, 200, (0.1, 0.25))[0]

POLICY = cases_of(
    MetaAllocationPolicy,
    fit_input=_args(LCDB, datasets=range(8)),
    calls=lambda: [
        ("quantile_", None),
        ("threshold_", None),
        ("search", (PROBLEM,)),
        ("search", (PROBLEM, 0.5)),
    ],
    alt_params={"quantiles": (0.2,), "thresholds": (0.05,)},
    bad=(
        Bad(
            "a-table", _args(np.zeros((3, 3))), TypeError, r"Bunch of load_lcdb_curves"
        ),
        Bad(
            "a-list-of-strings",
            _args(["a", "b", "c"]),
            TypeError,
            r"a list of LandmarkProblem",
        ),
        Bad(
            "rows-out-of-range",
            _args(LCDB, datasets=[0, 1, 10**6]),
            ValueError,
            r"datasets must be row indices of learning_curves, integers in \[0, 248\)",
        ),
        Bad(
            "negative-rows",
            _args(LCDB, datasets=[-1, 0, 1]),
            ValueError,
            r"datasets must be row indices",
        ),
        Bad(
            "rows-of-a-list",
            _args([PROBLEM] * 3, datasets=[0]),
            ValueError,
            r"datasets selects rows of an LCDB Bunch",
        ),
        Bad(
            "too-few-problems",
            _args(LCDB, datasets=[0]),
            ValueError,
            r"at least n_splits=3",
        ),
        Bad(
            "problems-of-other-landmarks",
            _args([TWO_LANDMARKS] * 3),
            ValueError,
            r"every problem must have 3 landmarks",
        ),
        Bad(
            "landmarks-decreasing",
            _args(LCDB, datasets=range(8)),
            ValueError,
            r"landmarks must be increasing fractions",
            params={"landmarks": (0.5, 0.1)},
        ),
        Bad(
            "quantile-above-half",
            _args(LCDB, datasets=range(8)),
            ValueError,
            r"quantiles must be a non-empty tuple of values in \(0, 0.5\]",
            params={"quantiles": (0.7,)},
        ),
        Bad(
            "threshold-of-one",
            _args(LCDB, datasets=range(8)),
            ValueError,
            r"thresholds must be a non-empty tuple of values in \(0, 1\)",
            params={"thresholds": (1.0,)},
        ),
        Bad(
            "search-a-string",
            _args("problem"),
            TypeError,
            r"problem must be a LandmarkProblem",
            method="search",
        ),
        Bad(
            "search-other-landmarks",
            _args(TWO_LANDMARKS),
            ValueError,
            r"problem has 2 landmarks; the policy was fitted on 3",
            method="search",
        ),
        Bad(
            "negative-budget",
            _args(PROBLEM, -1.0),
            ValueError,
            r"budget must be a positive fraction",
            method="search",
        ),
        Bad(
            "budget-a-string",
            _args(PROBLEM, "half"),
            TypeError,
            r"budget must be a number",
            method="search",
        ),
    ),
)

CASES = [*TRANSPORTER, *POLICY]


def test_every_exempt_estimator_has_a_contract_test():
    """Outside scikit-learn's checks means inside a contract test, tags agreeing."""
    from test_rl_contract import CASES as RL_CASES

    exempt = {
        cls
        for _, cls in all_estimators()
        if getattr(cls, "_not_a_data_estimator", None)
    }
    covered = {type(case.estimator) for case in [*CASES, *RL_CASES]}
    assert exempt == covered
    for cls in exempt:
        for est in instances_of(cls):
            assert est.__sklearn_tags__()._skip_test, cls
    for case in CASES:
        assert (
            "tests/test_family_contracts.py"
            in type(case.estimator)._not_a_data_estimator
        )


def test_transporter_is_not_taken_for_a_transformer():
    """It has transform, but sets no transformer tags and skips the data checks."""
    from sklearn.utils.estimator_checks import check_estimator

    tags = TaskVectorTransporter().__sklearn_tags__()
    assert tags.transformer_tags is None and tags._skip_test
    with pytest.warns(UserWarning, match="Explicit SKIP via _skip_test"):
        results = check_estimator(TaskVectorTransporter(), on_fail=None)
    assert all(r["status"] == "passed" for r in results), results
    assert not any("transformer" in r["check_name"] for r in results)


globals().update(contract_tests(CASES))


# --- the puzzle solvers: scikit-learn's data checks, on puzzles --------------------

SOLVERS = [
    est.set_params(random_state=0)
    for cls in (SheafADMMSudokuSolver, SheafADMMMazeSolver)
    for est in instances_of(cls)
]


def _solver_id(est):
    return type(est).__name__


def _puzzles(est, n=24):
    return est._make_test_data(n, random_state=0)


def _outputs(est, X):
    return {"predict": est.predict(X), "predict_proba": est.predict_proba(X)}


def _assert_same(a, b):
    for method in a:
        np.testing.assert_array_equal(a[method], b[method], err_msg=method)


@pytest.mark.parametrize("solver", SOLVERS, ids=_solver_id)
def test_puzzle_fit_returns_self_and_changes_no_parameter(solver):
    """check_estimators_fit_returns_self, check_dont_overwrite_parameters,
    check_estimators_overwrite_params, check_fit_score_takes_y, check_fit2d_1sample,
    check_fit_check_is_fitted, check_n_features_in."""
    X, y = _puzzles(solver)
    est = clone(solver)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    before = pickle.dumps(est.get_params())
    public = {k for k in vars(est) if not k.startswith("_")}
    assert est.fit(X, y) is est
    assert pickle.dumps(est.get_params()) == before
    added = {k for k in vars(est) if not k.startswith("_")} - public
    assert added and all(k.endswith("_") for k in added), added
    check_is_fitted(est)
    assert est.n_features_in_ == X.shape[1]
    for method in (type(est).fit, type(est).score):
        assert list(inspect.signature(method).parameters)[1:3] == ["X", "y"]
    one = clone(solver).fit(X[:1], y[:1])  # one puzzle is a training set
    assert one.predict(X[:3]).shape == (3, X.shape[1])


@pytest.mark.parametrize("solver", SOLVERS, ids=_solver_id)
def test_puzzle_fit_is_idempotent_and_inference_changes_nothing(solver):
    """check_fit_idempotent, check_dict_unchanged, check_pipeline_consistency."""
    X, y = _puzzles(solver)
    est = clone(solver).fit(X, y)
    expected = _outputs(est, X)
    _assert_same(_outputs(est.fit(X, y), X), expected)
    state = dict(vars(est))
    arrays = {k: v.copy() for k, v in state.items() if isinstance(v, np.ndarray)}
    params = {k: v.detach().clone() for k, v in est.module_.state_dict().items()}
    est.predict(X), est.predict_proba(X), est.score(X, y), est.admm_states(X)
    assert vars(est).keys() == state.keys()
    assert all(vars(est)[k] is v for k, v in state.items())
    for k, v in arrays.items():
        np.testing.assert_array_equal(vars(est)[k], v, err_msg=k)
    for k, v in est.module_.state_dict().items():
        assert (v == params[k]).all(), k
    pipe = make_pipeline(clone(solver)).fit(X, y)
    _assert_same(_outputs(pipe, X), expected)


@pytest.mark.parametrize("solver", SOLVERS, ids=_solver_id)
def test_puzzle_outputs_are_per_puzzle(solver):
    """check_methods_sample_order_invariance, check_methods_subset_invariance."""
    X, y = _puzzles(solver)
    est = clone(solver).fit(X, y)
    full = _outputs(est, X)
    order = np.random.RandomState(0).permutation(len(X))
    _assert_same(_outputs(est, X[order]), {k: v[order] for k, v in full.items()})
    for part in np.array_split(np.arange(len(X)), 3):
        _assert_same(_outputs(est, X[part]), {k: v[part] for k, v in full.items()})


@pytest.mark.parametrize("solver", SOLVERS, ids=_solver_id)
def test_puzzle_dtypes_and_layouts_fit_alike(solver, tmp_path):
    """check_estimators_dtypes, check_dtype_object, check_f_contiguous_array_estimator,
    check_readonly_memmap_input, check_fit2d_predict1d, check_estimators_nan_inf."""
    X, y = _puzzles(solver)
    expected = _outputs(clone(solver).fit(X, y), X)
    memmap = np.memmap(tmp_path / "X.dat", dtype=X.dtype, mode="w+", shape=X.shape)
    memmap[:] = X
    memmap.flush()
    memmap = np.memmap(tmp_path / "X.dat", dtype=X.dtype, mode="r", shape=X.shape)
    for variant in (
        X.astype(np.int32),
        X.astype(np.float32),
        np.asfortranarray(X),
        X.astype(object),
        X.tolist(),
        memmap,
    ):
        est = clone(solver).fit(variant, y)
        _assert_same(_outputs(est, variant), expected)
    with pytest.raises(ValueError, match="Expected 2D array"):
        est.predict(X[0])
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="NaN|infinity"):
            est.predict(np.where(X == X[0, 0], bad, X))


@pytest.mark.parametrize("solver", SOLVERS, ids=_solver_id)
def test_puzzle_sample_weight_forms(solver):
    """check_sample_weights_list, check_sample_weights_not_an_array,
    check_sample_weights_pandas_series, check_sample_weights_shape,
    check_sample_weights_not_overwritten (and unit weights change nothing)."""
    X, y = _puzzles(solver)
    w = np.random.RandomState(0).uniform(0.5, 2.0, size=len(X))
    w_before = w.copy()
    expected = _outputs(clone(solver).fit(X, y, sample_weight=w), X)
    np.testing.assert_array_equal(w, w_before)
    forms = [w.tolist()]
    pd = pytest.importorskip("pandas")
    forms.append(pd.Series(w))
    for form in forms:
        _assert_same(_outputs(clone(solver).fit(X, y, sample_weight=form), X), expected)
    assert _differ(expected, _outputs(clone(solver).fit(X, y), X))
    # Unit weights give the unweighted fit (up to the order of the sums).
    np.testing.assert_allclose(
        clone(solver).fit(X, y, sample_weight=np.ones(len(X))).predict_proba(X),
        clone(solver).fit(X, y).predict_proba(X),
        rtol=1e-6,
    )
    for bad in (w[:-1], w[:, None].repeat(2, axis=1)):
        with pytest.raises(ValueError, match="[Ss]ample.weight"):
            clone(solver).fit(X, y, sample_weight=bad)


def _differ(a, b):
    return any(not np.array_equal(a[k], b[k]) for k in a)
