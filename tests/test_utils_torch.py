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
    child_seeds,
    cpu_thread_limit,
    dataset_mean,
    init_parameters,
    iter_batches,
    lbfgs_minimize,
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


def test_max_grad_norm_bounds_every_step():
    """Clipped to norm 0.1, a plain SGD step (lr 1) moves the weights by at
    most 0.1, on a loss whose raw gradient is millions of times larger;
    unclipped, the same step diverges."""
    X, y = _data()
    Xt = to_tensor(X, dtype=torch.float64)
    yt = to_tensor(y * 1e6, dtype=torch.float64)

    def run(max_grad_norm):
        module = torch.nn.Linear(3, 1).double()
        opt = torch.optim.SGD(module.parameters(), lr=1.0)
        start = torch.cat([p.detach().flatten() for p in module.parameters()])

        def batch_loss(idx):
            return ((module(Xt[idx]).squeeze(1) - yt[idx]) ** 2).mean()

        train_loop(
            batch_loss,
            len(X),
            opt,
            batch_size=len(X),
            max_iter=1,
            generator=make_generator(0),
            warn_at_max_iter=False,
            max_grad_norm=max_grad_norm,
        )
        end = torch.cat([p.detach().flatten() for p in module.parameters()])
        return float(torch.linalg.norm(end - start))

    assert run(0.1) == pytest.approx(0.1, rel=1e-6)
    assert run(None) > 1e6


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


# --- the pieces methods used to write by hand ----------------------------------


def test_child_seeds_are_reproducible_and_advance_a_random_state():
    assert child_seeds(3, 4) == child_seeds(3, 4)
    assert len(set(child_seeds(3, 50))) == 50
    rng = np.random.RandomState(0)
    assert child_seeds(rng) != child_seeds(rng)
    assert isinstance(child_seeds(None), int)


def test_iter_batches_densifies_sparse_rows_alike():
    sp = pytest.importorskip("scipy.sparse")
    X = np.random.RandomState(0).binomial(1, 0.2, size=(23, 5)).astype(float)
    dense = list(iter_batches(X, 10))
    sparse = list(iter_batches(sp.csr_matrix(X), 10))
    assert [(a, b) for a, b, _ in dense] == [(0, 10), (10, 20), (20, 23)]
    for (_, _, d), (_, _, s) in zip(dense, sparse):
        assert isinstance(s, np.ndarray)
        np.testing.assert_array_equal(d, s)
    (empty,) = list(iter_batches(X[:0], 10))
    assert empty[2].shape == (0, 5)


def test_lbfgs_minimize_solves_a_least_squares_problem():
    rng = np.random.RandomState(0)
    A, b = rng.normal(size=(30, 4)), rng.normal(size=30)
    At, bt = to_tensor(A, dtype=torch.float64), to_tensor(b, dtype=torch.float64)
    x = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    loss = lbfgs_minimize(
        [x],
        lambda: ((At @ x - bt) ** 2).sum(),
        max_iter=100,
        tolerance_grad=1e-12,
        tolerance_change=1e-15,
    )
    exact = np.linalg.lstsq(A, b, rcond=None)[0]
    np.testing.assert_allclose(x.detach().numpy(), exact, rtol=1e-6, atol=1e-8)
    assert loss == pytest.approx(float(((A @ exact - b) ** 2).sum()), rel=1e-8)


def test_sample_weight_of_three_acts_as_three_copies():
    """Weighted least squares at conflicting rows: the weighted mean, as repeated."""
    rng = np.random.RandomState(0)
    X0 = rng.normal(size=(40, 2))
    X = np.vstack([X0, X0])
    y = np.r_[np.ones(40), -np.ones(40)]
    w = np.r_[3 * np.ones(40), np.ones(40)]
    X_rep, y_rep = np.vstack([X0, X0, X0, X0]), np.r_[np.ones(120), -np.ones(40)]
    params = {"hidden": 16, "max_iter": 150, "tol": 0.0, "n_iter_no_change": 200}
    params.update(learning_rate_init=1e-2, device="cpu")
    weighted, repeated, plain = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for seed in range(3):
            est = ToyTorchRegressor(random_state=seed, **params)
            weighted.append(est.fit(X, y, sample_weight=w).predict(X0).mean())
            repeated.append(est.fit(X_rep, y_rep).predict(X0).mean())
            plain.append(est.fit(X, y).predict(X0).mean())
    # The optimum at each row is the weighted mean of its targets: 0.5 (3 vs 1).
    assert np.allclose(weighted, 0.5, atol=0.1), weighted
    assert np.allclose(repeated, 0.5, atol=0.1), repeated
    assert np.allclose(plain, 0.0, atol=0.1), plain


def test_sample_weight_is_checked():
    X, y = _data()
    est = ToyTorchRegressor(max_iter=2, device="cpu")
    with pytest.raises(ValueError, match="[Nn]egative"):
        est.fit(X, y, sample_weight=-np.ones(len(X)))
    with pytest.raises(ValueError, match="non-zero|sums to 0"):
        est.fit(X, y, sample_weight=np.zeros(len(X)))
    with pytest.raises(ValueError, match="shape|samples"):
        est.fit(X, y, sample_weight=np.ones(len(X) + 1))


def test_warm_start_refuses_a_changed_architecture_with_one_message():
    X, y = _data()
    est = ToyTorchRegressor(max_iter=2, warm_start=True, device="cpu", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
        module = est.module_
        with pytest.raises(ValueError, match=r"hidden: 16 -> 8.*warm_start=False"):
            est.set_params(hidden=8).fit(X, y)
        assert est.module_ is module  # fitted state untouched
        with pytest.raises(ValueError, match=r"n_features: 3 -> 2"):
            est.set_params(hidden=16).fit(X[:, :2], y)


def test_a_phase_trains_through_the_same_loop_with_its_own_budget(capsys):
    """A pretraining phase: its own max_iter, its label, no warning, own curve."""
    X, y = _data()
    est = ToyTorchRegressor(max_iter=3, verbose=1, device="cpu", random_state=0)
    est.n_features_in_, est.n_outputs_ = X.shape[1], 1
    ctx = est._torch_context()
    module = est._build_module("module_")
    Xt, yt = to_tensor(X), to_tensor(y)

    def batch_loss(idx):
        return ((module(Xt[idx]).squeeze(1) - yt[idx]) ** 2).mean()

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est._train(
            {"module_": module},
            batch_loss,
            len(X),
            ctx,
            phase="pretraining",
            max_iter=4,
            max_iter_param="pretrain_iter",
            fixed_epochs=True,
        )
    assert len(est.pretraining_loss_curve_) == 4
    assert not hasattr(est, "loss_curve_") and not hasattr(est, "n_iter_")
    assert "ToyTorchRegressor: pretraining" in capsys.readouterr().err


def test_convergence_warning_names_the_phase_and_its_parameter():
    X, y = _data()
    est = ToyTorchRegressor(max_iter=2, device="cpu", random_state=0)
    est.n_features_in_, est.n_outputs_ = X.shape[1], 1
    module = est._build_module("module_")
    Xt, yt = to_tensor(X), to_tensor(y)

    def batch_loss(idx):
        return ((module(Xt[idx]).squeeze(1) - yt[idx]) ** 2).mean()

    with pytest.warns(
        ConvergenceWarning, match="pretraining stopped at pretrain_iter=2"
    ):
        est._train(
            {"module_": module},
            batch_loss,
            len(X),
            est._torch_context(),
            phase="pretraining",
            max_iter=2,
            max_iter_param="pretrain_iter",
        )


# --- threads -----------------------------------------------------------------------


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_thread_limit_uses_one_thread_and_restores(two_threads):
    with cpu_thread_limit() as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with cpu_thread_limit(8) as n:  # never above torch's own setting
        assert n == 2 and torch.get_num_threads() == 2
    with pytest.raises(RuntimeError):
        with cpu_thread_limit():
            raise RuntimeError
    assert torch.get_num_threads() == 2


def test_fit_and_predict_run_inside_the_thread_policy(two_threads, monkeypatch):
    seen = {"build": [], "train": [], "predict": []}
    original = ToyTorchRegressor._build_module

    def record(module, *_):
        seen["train" if module.training else "predict"].append(torch.get_num_threads())

    def probe(self, attr):
        seen["build"].append(torch.get_num_threads())
        module = original(self, attr)
        module.register_forward_hook(record)
        return module

    monkeypatch.setattr(ToyTorchRegressor, "_build_module", probe)
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = ToyTorchRegressor(max_iter=1, device="cpu").fit(X, y)
    est.predict(X)
    assert seen["build"] and seen["train"] and seen["predict"]
    assert set(seen["build"]) | set(seen["train"]) | set(seen["predict"]) == {1}
    assert torch.get_num_threads() == 2


def test_cpu_threads_opts_in_to_more_threads_in_a_block_only(two_threads):
    from sklearn_ext.utils import cpu_threads

    seen = []
    X, y = _data()
    with cpu_threads(2):
        with cpu_thread_limit() as n:
            assert n == 2
        est = ToyTorchRegressor(max_iter=2, device="cpu", random_state=0)
        real = est._build_module

        def probe(attr):
            seen.append(torch.get_num_threads())
            return real(attr)

        est._build_module = probe
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y)
    assert seen == [2]
    with cpu_thread_limit() as n:  # the block is over: one thread again
        assert n == 1
    with cpu_threads(16), cpu_thread_limit() as n:  # never above torch's setting
        assert n == 2
    with pytest.raises(ValueError, match="at least 1"):
        with cpu_threads(0):
            pass
    with pytest.raises(TypeError, match="must be an integer"):
        with cpu_threads(1.5):
            pass


# --- messages ------------------------------------------------------------------------


def test_warn_names_the_first_frame_outside_the_package():
    from sklearn_ext.utils._messages import warn

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn("probe", UserWarning)
    assert caught[0].filename == __file__


def test_fill_doc_refuses_an_unknown_entry():
    from sklearn_ext.utils._docstrings import fill_doc

    def f():
        """Summary.

        Parameters
        ----------
        %(no_such_parameter)s
        """

    with pytest.raises(KeyError, match="no_such_parameter"):
        fill_doc(f)


def test_train_loop_stops_on_the_validation_loss_when_given_one():
    """Overfitting: the training loss keeps falling, the held-out loss turns up."""
    rng = np.random.RandomState(0)
    X = torch.tensor(rng.randn(40, 30))
    y = torch.tensor(rng.randn(40))  # pure noise: 30 weights fit 30 of it
    X_valid, y_valid = torch.tensor(rng.randn(200, 30)), torch.tensor(rng.randn(200))
    w = torch.zeros(30, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.Adam([w], lr=0.05)

    def batch_loss(idx):
        return ((X[idx] @ w - y[idx]) ** 2).mean()

    def validation_loss():
        with torch.no_grad():
            return float(((X_valid @ w - y_valid) ** 2).mean())

    common = {"batch_size": 40, "max_iter": 300, "tol": 0.0, "n_iter_no_change": 5}
    result = train_loop(
        batch_loss,
        40,
        optimizer,
        generator=torch.Generator().manual_seed(0),
        validation_loss=validation_loss,
        **common,
    )
    curve = result.validation_curve
    assert result.converged and len(curve) == result.n_iter < 300
    best = int(np.argmin(curve))
    assert result.n_iter == best + 1 + 5  # five epochs without improvement
    assert result.loss_curve[-1] < result.loss_curve[best]  # training still falls
    # Without it the same rule watches the training loss, and runs on.
    w.data.zero_()
    optimizer = torch.optim.Adam([w], lr=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain = train_loop(
            batch_loss,
            40,
            optimizer,
            generator=torch.Generator().manual_seed(0),
            **common,
        )
    assert plain.n_iter > 2 * result.n_iter and plain.validation_curve == []


def test_dataset_mean_is_the_weighted_mean_over_all_rows():
    rng = np.random.RandomState(0)
    losses = torch.tensor(rng.rand(23, 3))
    w = torch.tensor(rng.randint(0, 4, 23).astype(float))

    def per_sample(idx):
        assert not torch.is_grad_enabled()
        return losses[idx]

    got = dataset_mean(per_sample, 23, 5, w)  # 5 batches, the last of 3 rows
    expected = (w[:, None] * losses).sum(0) / w.sum()
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        dataset_mean(lambda idx: losses[idx, 0], 23, 4).numpy(), losses[:, 0].mean()
    )


def test_conjugate_gradient_solves_a_block_spd_system():
    import torch

    from sklearn_ext.utils._torch import conjugate_gradient

    rng = np.random.default_rng(0)
    B = rng.normal(size=(7, 7))
    A = torch.as_tensor(B @ B.T + 7 * np.eye(7))
    b = torch.as_tensor(rng.normal(size=7))

    def matvec(v):  # the 7-vector as a (3,) block and a (2, 2) block
        flat = torch.cat([v[0], v[1].reshape(-1)])
        out = A @ flat
        return out[:3], out[3:].reshape(2, 2)

    x = conjugate_gradient(matvec, (b[:3], b[3:].reshape(2, 2)), max_iter=50)
    solution = torch.cat([x[0], x[1].reshape(-1)])
    np.testing.assert_allclose(solution.numpy(), np.linalg.solve(A, b), atol=1e-8)
    # Fewer iterations than the dimension: an approximation, not the solution.
    rough = conjugate_gradient(matvec, (b[:3], b[3:].reshape(2, 2)), max_iter=2)
    assert not np.allclose(torch.cat([rough[0], rough[1].reshape(-1)]), solution)
