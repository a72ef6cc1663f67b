"""The private torch backend: devices, seeding, conversion, training loop, pickling."""

import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from toy_estimators import ToyTorchRegressor

from sklearn_ext.base import TorchMixin, is_torch_estimator
from sklearn_ext.utils._sklearn_compat import InvalidParameterError
from sklearn_ext.utils._torch import (
    ModuleState,
    batch_bounds,
    init_parameters,
    make_generator,
    module_from_bytes,
    module_to_bytes,
    resolve_device,
    to_numpy,
    to_tensor,
    train_loop,
)


def _data(n=80, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=n)
    return X, y


# --- devices -------------------------------------------------------------------


def test_resolve_device_accepts_cpu_forms():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda")])
def test_missing_cuda_is_a_value_error_naming_the_parameter(device):
    with pytest.raises(ValueError, match=r"'device' parameter .*CUDA is not available"):
        resolve_device(device)
    with pytest.raises(ValueError, match="'device' parameter"):
        ToyTorchRegressor(device=device).fit(*_data())


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_missing_cuda_at_inference_falls_back_with_warning():
    with pytest.warns(UserWarning, match="using the CPU"):
        assert resolve_device("cuda", strict=False) == torch.device("cpu")


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "tpu", 3])
def test_malformed_device_is_rejected(device):
    with pytest.raises((ValueError, TypeError)):
        resolve_device(device)
    with pytest.raises(InvalidParameterError, match="'device' parameter"):
        ToyTorchRegressor(device=device).fit(*_data())


# --- seeding ---------------------------------------------------------------------


def test_generator_is_determined_by_random_state():
    a = torch.rand(5, generator=make_generator(42))
    b = torch.rand(5, generator=make_generator(42))
    c = torch.rand(5, generator=make_generator(43))
    assert torch.equal(a, b) and not torch.equal(a, c)
    rs = np.random.RandomState(0)
    first = torch.rand(3, generator=make_generator(rs))
    second = torch.rand(3, generator=make_generator(rs))
    assert not torch.equal(first, second)  # a RandomState advances


def test_fit_depends_on_random_state_not_on_global_rngs():
    X, y = _data()
    np_state = np.random.get_state()[1].copy()
    preds = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)  # the test may; the library never does
        est = ToyTorchRegressor(max_iter=5, random_state=0, device="cpu")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            preds.append(est.fit(X, y).predict(X))
    np.testing.assert_array_equal(preds[0], preds[1])
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)


def test_same_random_state_same_model_different_state_different_model():
    X, y = _data()
    fits = [
        ToyTorchRegressor(max_iter=20, random_state=s, device="cpu").fit(X, y)
        for s in (0, 0, 1)
    ]
    preds = [f.predict(X) for f in fits]
    np.testing.assert_array_equal(preds[0], preds[1])
    assert not np.allclose(preds[0], preds[2])


def test_init_parameters_is_seeded_and_keeps_torch_default_scale():
    def make():
        return torch.nn.Sequential(
            torch.nn.Linear(50, 20), torch.nn.LayerNorm(20), torch.nn.Linear(20, 2)
        )

    a = init_parameters(make(), make_generator(0))
    b = init_parameters(make(), make_generator(0))
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    weight = a[0].weight
    bound = 1 / np.sqrt(50)  # Kaiming-uniform(a=sqrt(5)) == U(-1/sqrt(fan_in), ...)
    assert weight.abs().max() <= bound and weight.abs().max() > 0.9 * bound
    assert torch.equal(a[1].weight, torch.ones(20))


def test_init_parameters_defers_to_custom_initialiser():
    class Custom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.theta = torch.nn.Parameter(torch.empty(4))

        def init_parameters(self, generator):
            self.theta.fill_(7.0)

    module = init_parameters(Custom(), make_generator(0))
    assert torch.equal(module.theta, torch.full((4,), 7.0))


# --- conversion ----------------------------------------------------------------


def test_to_tensor_never_aliases_user_or_readonly_arrays():
    X = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = to_tensor(X)
    t += 1
    np.testing.assert_array_equal(X, np.arange(6).reshape(2, 3))
    X.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns on non-writable numpy memory
        t = to_tensor(X)
    assert t.dtype == torch.float32


def test_to_numpy_returns_float64_copy():
    t = torch.ones(3)
    out = to_numpy(t)
    assert out.dtype == np.float64
    out[0] = 5
    assert t[0] == 1


def test_fit_does_not_modify_readonly_input():
    X, y = _data()
    X.setflags(write=False)
    y.setflags(write=False)
    ToyTorchRegressor(max_iter=3, device="cpu", random_state=0).fit(X, y).predict(X)


# --- training loop -------------------------------------------------------------


def test_batches_never_hold_a_single_sample():
    assert batch_bounds(11, 5) == [(0, 5), (5, 11)]
    assert batch_bounds(10, 5) == [(0, 5), (5, 10)]
    assert batch_bounds(1, 5) == [(0, 1)]
    for n in range(2, 40):
        for bs in range(1, 12):
            bounds = batch_bounds(n, bs)
            assert bounds[0][0] == 0 and bounds[-1][1] == n
            assert all(b - a >= min(2, bs) for a, b in bounds) or bs == 1


def test_loop_learns_and_stops_when_loss_settles():
    X, y = _data(200)
    est = ToyTorchRegressor(max_iter=500, tol=1e-3, random_state=0, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(X, y)
    assert est.n_iter_ < 500
    assert len(est.loss_curve_) == est.n_iter_
    assert est.loss_curve_[-1] < 0.1 * est.loss_curve_[0]
    assert est.score(X, y) > 0.9
    assert est.device_ == "cpu"


def test_reaching_max_iter_warns():
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        est = ToyTorchRegressor(max_iter=2, device="cpu", random_state=0).fit(*_data())
    assert est.n_iter_ == 2


def test_warm_start_continues_from_the_fitted_module():
    X, y = _data()
    est = ToyTorchRegressor(max_iter=5, warm_start=True, device="cpu", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
        first = est.loss_curve_[-1]
        module = est.module_
        est.fit(X, y)
    assert est.n_iter_ == 10 and len(est.loss_curve_) == 10
    assert est.module_ is module
    assert est.loss_curve_[5] < est.loss_curve_[0] and est.loss_curve_[-1] < first
    cold = ToyTorchRegressor(max_iter=5, device="cpu", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cold.fit(X, y).fit(X, y)
    assert cold.n_iter_ == 5


def test_verbose_shows_a_progress_bar(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ToyTorchRegressor(max_iter=3, verbose=1, device="cpu").fit(*_data())
        err_verbose = capsys.readouterr().err
        ToyTorchRegressor(max_iter=3, verbose=0, device="cpu").fit(*_data())
        err_silent = capsys.readouterr().err
    assert "ToyTorchRegressor" in err_verbose and "loss=" in err_verbose
    assert err_silent == ""


def test_diverging_loss_is_a_clear_error():
    X, y = _data()
    module = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(module.parameters(), lr=1e6)
    Xt, yt = to_tensor(X), to_tensor(y * 1e6)

    def batch_loss(idx):
        return ((module(Xt[idx]).squeeze(1) - yt[idx]) ** 2).mean()

    with pytest.raises(ValueError, match="training loss became"):
        train_loop(
            batch_loss,
            len(X),
            opt,
            batch_size=16,
            max_iter=50,
            generator=make_generator(0),
            estimator_name="Probe",
        )


# --- pickling ------------------------------------------------------------------


def test_pickle_stores_state_dict_bytes_not_modules():
    est = ToyTorchRegressor(max_iter=3, device="cpu", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(*_data())
    state = est.__getstate__()
    assert isinstance(state["module_"], ModuleState)
    assert isinstance(est.module_, torch.nn.Module)  # the estimator is untouched
    restored = pickle.loads(pickle.dumps(est))
    assert isinstance(restored.module_, torch.nn.Module)
    X = _data()[0]
    np.testing.assert_array_equal(restored.predict(X), est.predict(X))


def test_module_bytes_are_loaded_with_weights_only(monkeypatch):
    module = torch.nn.Linear(3, 2)
    data = module_to_bytes(module)
    seen = {}
    original = torch.load

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    copy = module_from_bytes(torch.nn.Linear(3, 2), data)
    assert seen.get("weights_only") is True and seen.get("map_location") == "cpu"
    assert torch.equal(copy.weight, module.weight)


def test_gpu_pickle_unpickles_on_cpu_only_machine(tmp_path):
    """A model whose device is 'cuda' unpickles and predicts where CUDA is hidden.

    No GPU here: the model is fitted on the CPU and its device set to 'cuda', as a
    GPU-fitted model's is; its weights are CPU state dicts either way. The real
    GPU round trip is in benchmarks/gpu_check.py.
    """
    est = ToyTorchRegressor(max_iter=3, device="cpu", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(*_data())
    est.set_params(device="cuda")  # as if fitted on a GPU machine
    path = tmp_path / "est.pkl"
    path.write_bytes(pickle.dumps(est))
    script = tmp_path / "load.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import pickle, sys
            import numpy as np
            import pytest
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            with open({str(path)!r}, "rb") as f:
                est = pickle.load(f)
            with pytest.warns(UserWarning, match="using the CPU"):
                print(est.predict(np.zeros((2, 3))).shape)
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=True,
        env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "(2,)"


def test_is_torch_estimator():
    assert is_torch_estimator(ToyTorchRegressor)
    assert is_torch_estimator(ToyTorchRegressor())
    from sklearn.linear_model import Ridge

    assert not is_torch_estimator(Ridge())
    assert issubclass(ToyTorchRegressor, TorchMixin)
