"""The estimator contract for estimators whose ``fit`` takes no (X, y) table.

The reinforcement-learning agents, ``TaskVectorTransporter`` and
``MetaAllocationPolicy`` declare ``_not_a_data_estimator``: scikit-learn's checks,
which fit on tables they generate, cannot run on them. Their family tests
(tests/test_rl_contract.py, tests/test_family_contracts.py) describe each class
by a :class:`Case` (what ``fit`` takes, which outputs to compare, a valid change
of parameters, a table of bad inputs) and run the checks below on it:

- ``clone`` keeps the parameters and drops the fitted state;
- every constrained parameter, set to a value of the wrong type and to each
  invalid value scikit-learn generates for its constraints, makes ``fit`` raise
  ``InvalidParameterError`` naming it (as scikit-learn's
  ``check_param_validation`` does, with the fit input of the class);
- a fitted estimator pickled and loaded in a new interpreter (CUDA hidden;
  one interpreter serves every case of a file), and one saved and loaded by
  skops trusting only sklearn_ext's types, give identical outputs;
- ``set_params`` then ``fit`` on a fitted estimator gives what constructing
  with those parameters and fitting gives, and the change takes effect;
- each bad input raises a ``ValueError`` or ``TypeError`` naming the problem.

The class's small parameters come from its ``_get_test_params()``.
"""

import copy
import dataclasses
import importlib.util
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_ext.utils import skops_trusted_types
from sklearn_ext.utils._sklearn_compat import (
    InvalidParameterError,
    generate_invalid_param_val,
    make_constraint,
)
from sklearn_ext.utils._testing import instances_of

TESTS_DIR = Path(__file__).parent


@dataclasses.dataclass(frozen=True)
class Bad:
    """One bad input: what ``method`` is called with, and the error it must raise.

    ``make()`` returns ``(args, kwargs)``. ``method="fit"`` calls an unfitted
    estimator (with ``params`` set first: values that only ``fit`` can judge,
    such as limits against an environment); any other method is called on the
    fitted estimator.
    """

    id: str
    make: object
    error: type
    match: str
    method: str = "fit"
    params: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Case:
    """What the contract checks need to know about one estimator.

    ``fit_input()`` returns fresh ``(args, kwargs)`` for ``fit``; ``calls()``
    the outputs to compare, as ``(name, args)`` pairs (``args=None`` reads an
    attribute); ``alt_params`` is a valid change of parameters that changes
    those outputs; ``needs`` names optional modules the case imports.
    """

    id: str
    estimator: object
    fit_input: object
    calls: object
    alt_params: dict
    bad: tuple
    needs: tuple = ()


def cases_of(cls, **fields):
    """One :class:`Case` per instance of ``cls._get_test_params()``."""
    instances = list(instances_of(cls))
    return [
        Case(
            id=cls.__name__ if len(instances) == 1 else f"{cls.__name__}-{i}",
            estimator=est,
            **fields,
        )
        for i, est in enumerate(instances)
    ]


def skip_without(case):
    for module in case.needs:
        pytest.importorskip(module)


def available(case):
    """Whether the optional modules the case needs are installed."""
    return all(importlib.util.find_spec(module) for module in case.needs)


def fit(estimator, case):
    args, kwargs = case.fit_input()
    return estimator.fit(*args, **kwargs)


_FITTED = {}


def fitted(case):
    """The case's estimator fitted once per session; callers must not change it."""
    if case.id not in _FITTED:
        _FITTED[case.id] = fit(clone(case.estimator), case)
    return _FITTED[case.id]


def _arrays(name, value):
    """``value`` as named arrays: dicts, dataclasses, lists of arrays and
    tensors flattened."""
    if isinstance(value, (list, tuple)) and any(
        isinstance(v, (np.ndarray, dict, list, tuple)) or hasattr(v, "detach")
        for v in value
    ):
        for i, v in enumerate(value):
            yield from _arrays(f"{name}[{i}]", v)
    elif isinstance(value, dict):
        for key, v in value.items():
            yield from _arrays(f"{name}.{key}", v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _arrays(f"{name}.{field.name}", getattr(value, field.name))
    elif hasattr(value, "detach"):  # a torch tensor
        yield name, value.detach().cpu().numpy()
    else:
        yield name, np.asarray(value)


def outputs(estimator, calls):
    """The outputs named by ``calls`` (see :class:`Case`), as arrays by name.

    Imported by the fresh interpreter of :func:`check_pickle_in_fresh_process`.
    """
    out = {}
    for i, (name, args) in enumerate(calls):
        value = getattr(estimator, name)
        if args is not None:
            value = value(*args)
        out.update(_arrays(f"{i}:{name}", value))
    return out


def assert_same_outputs(got, expected):
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def _differ(a, b):
    return sorted(a) != sorted(b) or any(
        np.shape(a[k]) != np.shape(b[k]) or not np.array_equal(a[k], b[k]) for k in a
    )


def _same_params(a, b):
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_equal(a[key], b[key], err_msg=key)


# --- the checks ------------------------------------------------------------------


def check_clone(case):
    est = case.estimator
    model = fitted(case)
    _same_params(model.get_params(), est.get_params())  # fit changed no parameter
    copy_ = clone(model)
    _same_params(copy_.get_params(), est.get_params())
    state = [k for k in vars(copy_) if k.endswith("_") and not k.startswith("__")]
    assert not state, f"clone kept fitted state {state}"
    assert_same_outputs(
        outputs(fit(copy_, case), case.calls()), outputs(model, case.calls())
    )


class _BadType:
    """A value of no type any constraint accepts."""


def invalid_values(constraints):
    """What scikit-learn's check_param_validation tries for a parameter."""
    values = [_BadType()]
    for constraint in constraints:
        try:
            values.append(generate_invalid_param_val(make_constraint(constraint)))
        except NotImplementedError:
            pass
    return values


def check_param_validation(case):
    est = case.estimator
    name = type(est).__name__
    params = est.get_params(deep=False)
    constraints = type(est)._parameter_constraints
    assert set(constraints) == set(params), (
        f"constraints without a parameter {set(constraints) - set(params)}, "
        f"parameters without a constraint {set(params) - set(constraints)}"
    )
    for param, allowed in constraints.items():
        if allowed == "no_validation":
            continue
        for value in invalid_values(allowed):
            bad = clone(est).set_params(**{param: value})
            with pytest.raises(
                InvalidParameterError,
                match=rf"The '{param}' parameter of {name} must be .* Got .* instead",
            ):
                fit(bad, case)


_UNPICKLE = textwrap.dedent(
    """
    import pickle, sys
    from pathlib import Path
    import numpy as np
    from contract_checks import outputs
    folder = Path(sys.argv[1])
    with open(folder / "fitted.pkl", "rb") as f:
        fitted = pickle.load(f)
    for i, (est, calls) in enumerate(fitted):
        np.savez(folder / f"{i}.npz", **outputs(est, calls))
    """
)


def outputs_in_fresh_process(cases, folder):
    """Outputs of each case's fitted estimator, pickled and loaded in a new
    interpreter with CUDA hidden (one interpreter for all the cases)."""
    with open(folder / "fitted.pkl", "wb") as f:
        pickle.dump([(fitted(case), case.calls()) for case in cases], f)
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONPATH": os.pathsep.join(
            [str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]
        ),
    }
    run = subprocess.run(
        [sys.executable, "-c", _UNPICKLE, str(folder)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    got = {}
    for i, case in enumerate(cases):
        with np.load(folder / f"{i}.npz") as arrays:
            got[case.id] = dict(arrays)
    return got


def check_pickle_in_fresh_process(case, unpickled):
    """``unpickled``: what :func:`outputs_in_fresh_process` returned."""
    assert_same_outputs(unpickled[case.id], outputs(fitted(case), case.calls()))


def check_skops_round_trip(case, tmp_path):
    sio = pytest.importorskip("skops.io")
    model = fitted(case)
    path = tmp_path / "est.skops"
    sio.dump(model, path)
    trusted = skops_trusted_types()
    untrusted = set(sio.get_untrusted_types(file=path)) - set(trusted)
    assert not untrusted, f"types outside sklearn_ext to trust: {sorted(untrusted)}"
    loaded = sio.load(path, trusted=trusted)
    calls = case.calls()
    assert_same_outputs(outputs(loaded, calls), outputs(model, calls))


def check_set_params_then_fit(case):
    before = outputs(fitted(case), case.calls())
    refit = copy.deepcopy(fitted(case)).set_params(**case.alt_params)
    after = outputs(fit(refit, case), case.calls())
    params = {**case.estimator.get_params(deep=False), **case.alt_params}
    fresh = outputs(fit(type(case.estimator)(**params), case), case.calls())
    assert_same_outputs(after, fresh)
    assert _differ(after, before), f"set_params({case.alt_params}) changed nothing"


def check_bad_input(case, bad):
    assert issubclass(bad.error, (ValueError, TypeError)), bad.error
    args, kwargs = bad.make()
    if bad.method == "fit":
        est = clone(case.estimator).set_params(**bad.params)
        call = est.fit
    else:
        call = getattr(fitted(case), bad.method)
    with pytest.raises(bad.error, match=bad.match):
        call(*args, **kwargs)


def bad_ids(cases):
    """``(case, bad)`` pairs and their ids, to parametrize the bad-input test."""
    pairs = [(case, bad) for case in cases for bad in case.bad]
    return pairs, [f"{case.id}-{bad.id}" for case, bad in pairs]


def contract_tests(cases):
    """The contract's test functions for ``cases``, to put in a test module.

    ``globals().update(contract_tests(CASES))`` gives the module the
    parametrised tests (and the module-scoped ``unpickled`` fixture that
    pickles every case in one fresh interpreter), so that the tests are
    written once for every family that uses the contract.
    """
    ids = [case.id for case in cases]
    bad, bad_names = bad_ids(cases)

    @pytest.mark.parametrize("case", cases, ids=ids)
    def test_clone(case):
        skip_without(case)
        check_clone(case)

    @pytest.mark.parametrize("case", cases, ids=ids)
    def test_param_validation(case):
        skip_without(case)
        check_param_validation(case)

    @pytest.fixture(scope="module")
    def unpickled(tmp_path_factory):
        present = [case for case in cases if available(case)]
        return outputs_in_fresh_process(present, tmp_path_factory.mktemp("pickles"))

    @pytest.mark.parametrize("case", cases, ids=ids)
    def test_pickle_in_fresh_process(case, unpickled):
        skip_without(case)
        check_pickle_in_fresh_process(case, unpickled)

    @pytest.mark.parametrize("case", cases, ids=ids)
    def test_skops_round_trip(case, tmp_path):
        skip_without(case)
        check_skops_round_trip(case, tmp_path)

    @pytest.mark.parametrize("case", cases, ids=ids)
    def test_set_params_then_fit(case):
        skip_without(case)
        check_set_params_then_fit(case)

    @pytest.mark.parametrize("case, bad", bad, ids=bad_names)
    def test_bad_input(case, bad):
        skip_without(case)
        check_bad_input(case, bad)

    return {
        "test_clone": test_clone,
        "test_param_validation": test_param_validation,
        "unpickled": unpickled,
        "test_pickle_in_fresh_process": test_pickle_in_fresh_process,
        "test_skops_round_trip": test_skops_round_trip,
        "test_set_params_then_fit": test_set_params_then_fit,
        "test_bad_input": test_bad_input,
    }
