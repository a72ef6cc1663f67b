"""TaskVectorTransporter (Theseus): exact cases, behaviour and bad input."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.neural_network import MLPClassifier
from torch import nn

from sklearn_ext.transfer import TaskVectorTransporter, task_vector
from sklearn_ext.transfer._digits_task import digits_transfer_task, fine_tune
from sklearn_ext.unlearning import UnlearnableMLPClassifier
from sklearn_ext.utils._sklearn_compat import InvalidParameterError


def _mlp(widths, act=nn.ReLU, seed=0):
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(nn.Linear(a, b))
        if i + 2 < len(widths):
            layers.append(act())
    return nn.Sequential(*layers)


def _perturbed(net, seed=1, scale=0.1):
    """A copy of ``net`` with every parameter moved (a stand-in fine-tune)."""
    g = torch.Generator().manual_seed(seed)
    tuned = copy.deepcopy(net)
    with torch.no_grad():
        for p in tuned.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))
    return tuned


def _permuted(net, perms, signs=None):
    """``net`` with the units of hidden layer i permuted by ``perms[i]``
    (and multiplied by ``signs[i]``): the same function."""
    twin = copy.deepcopy(net)
    linears = [m for m in twin if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for i, p in enumerate(perms):
            s = torch.ones(len(p)) if signs is None else signs[i]
            lin, nxt = linears[i], linears[i + 1]
            lin.weight.copy_(lin.weight[p] * s[:, None])
            lin.bias.copy_(lin.bias[p] * s)
            nxt.weight.copy_(nxt.weight[:, p] * s)
    return twin


def _out(net, X):
    with torch.no_grad():
        return net(torch.as_tensor(X, dtype=torch.float32)).numpy()


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(300, 6))


# --- exact cases ---------------------------------------------------------------


@pytest.mark.parametrize("align", ["procrustes", "functional", "lstsq", "hungarian"])
def test_source_equal_to_target_gives_the_identity(X, align):
    net = _mlp((6, 16, 12, 3))
    tau = task_vector(_perturbed(net), net)
    tr = TaskVectorTransporter(align=align, ridge=1e-9)
    tr.fit(X, source_base=net, target_base=net)
    for m in tr.maps_:
        np.testing.assert_allclose(m, np.eye(len(m)), atol=1e-8)
    moved = tr.transform(tau)
    for k in tau:
        np.testing.assert_allclose(moved[k], tau[k], atol=1e-4)


@pytest.mark.parametrize("whiten", [0.0, 0.25, 0.5])
def test_a_permutation_of_hidden_units_is_recovered(X, whiten):
    net = _mlp((6, 16, 12, 3))
    tuned = _perturbed(net)
    perms = [torch.randperm(16), torch.randperm(12)]
    twin = _permuted(net, perms)
    np.testing.assert_allclose(_out(twin, X), _out(net, X), atol=1e-5)
    tr = TaskVectorTransporter(whiten=whiten).fit(X, source_base=net, target_base=twin)
    for k, p in enumerate(perms, start=1):
        expected = np.zeros((len(p), len(p)))
        expected[p.numpy(), np.arange(len(p))] = 1.0
        np.testing.assert_allclose(tr.maps_[k], expected, atol=1e-6)
    moved = tr.apply(twin, tr.transform(task_vector(tuned, net)))
    np.testing.assert_allclose(_out(moved, X), _out(tuned, X), atol=1e-4)


@pytest.mark.parametrize("tie_break", [True, False])
def test_units_silent_on_every_calibration_row_are_still_matched(
    X, tie_break, monkeypatch
):
    """The pre-activations fix what the ReLU outputs of a dead unit leave free."""
    import sklearn_ext.transfer._graph as graph

    if not tie_break:
        monkeypatch.setattr(graph, "_TIE_BREAK", 0.0)
    net = _mlp((6, 16, 3))
    with torch.no_grad():
        net[0].bias[:3] = -100.0  # units 0-2 never fire
    perm = torch.randperm(16)
    twin = _permuted(net, [perm])
    tr = TaskVectorTransporter().fit(X, source_base=net, target_base=twin)
    expected = np.zeros((16, 16))
    expected[perm.numpy(), np.arange(16)] = 1.0
    exact = np.allclose(tr.maps_[1], expected, atol=1e-6)
    assert exact == tie_break


def test_signed_permutations_are_recovered_for_odd_activations(X):
    net = _mlp((6, 10, 3), act=nn.Tanh)
    tuned = _perturbed(net)
    p = torch.randperm(10)
    s = torch.tensor([1.0, -1.0] * 5)
    twin = _permuted(net, [p], [s])
    tr = TaskVectorTransporter().fit(X, source_base=net, target_base=twin)
    expected = np.zeros((10, 10))
    expected[p.numpy(), np.arange(10)] = s.numpy()
    np.testing.assert_allclose(tr.maps_[1], expected, atol=1e-6)
    moved = tr.apply(twin, tr.transform(task_vector(tuned, net)))
    np.testing.assert_allclose(_out(moved, X), _out(tuned, X), atol=1e-4)


def test_maps_across_widths_are_semi_orthogonal(X):
    small, wide = _mlp((6, 8, 8, 3)), _mlp((6, 14, 20, 3), seed=1)
    for source, target in ((small, wide), (wide, small)):
        tr = TaskVectorTransporter().fit(X, source_base=source, target_base=target)
        for m in tr.maps_[1:-1]:
            k = min(m.shape)
            gram = m @ m.T if m.shape[0] == k else m.T @ m
            np.testing.assert_allclose(gram, np.eye(k), atol=1e-8)
        moved = tr.transform(task_vector(_perturbed(source), source))
        shapes = {k: tuple(v.shape) for k, v in target.state_dict().items()}
        assert {k: tuple(v.shape) for k, v in moved.items()} == shapes


def test_scikit_learn_mlps_are_supported_without_torch_models():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    base = MLPClassifier((9,), max_iter=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base.fit(X, y)
    tuned = copy.deepcopy(base)
    tuned.coefs_ = [c + 0.1 * rng.normal(size=c.shape) for c in tuned.coefs_]
    twin = copy.deepcopy(base)
    p = rng.permutation(9)
    twin.coefs_ = [base.coefs_[0][:, p], base.coefs_[1][p]]
    twin.intercepts_ = [base.intercepts_[0][p], base.intercepts_[1]]
    tau = task_vector(tuned, base)
    assert all(isinstance(v, np.ndarray) for v in tau.values())
    tr = TaskVectorTransporter().fit(X, source_base=base, target_base=twin)
    moved = tr.apply(twin, tr.transform(tau))
    np.testing.assert_allclose(
        moved.predict_proba(X), tuned.predict_proba(X), atol=1e-10
    )
    assert twin.coefs_[0] is not moved.coefs_[0]


def test_estimators_apply_their_own_preprocessing():
    rng = np.random.default_rng(0)
    X = rng.normal(loc=50.0, scale=20.0, size=(200, 4))
    y = (X[:, 0] > 50).astype(int)
    est = UnlearnableMLPClassifier((8,), max_iter=20, random_state=0).fit(X, y)
    tuned = fine_tune(est, X + 5.0, y, max_iter=5)
    twin = copy.deepcopy(est)
    perm = torch.randperm(8)
    twin.module_ = _permuted(est.module_, [perm])
    tr = TaskVectorTransporter().fit(X, source_base=est, target_base=twin)
    expected = np.zeros((8, 8))
    expected[perm.numpy(), np.arange(8)] = 1.0
    np.testing.assert_allclose(tr.maps_[1], expected, atol=1e-6)
    moved = tr.apply(twin, tr.transform(task_vector(tuned, est)))
    assert isinstance(moved, UnlearnableMLPClassifier) and moved is not twin
    np.testing.assert_allclose(
        moved.predict_proba(X), tuned.predict_proba(X), atol=1e-5
    )


# --- behaviour -----------------------------------------------------------------


@pytest.fixture(scope="module")
def digits_transfer():
    task = digits_transfer_task(0)
    X, y, S = task["X_train"], task["y_train"], task["S_train"]
    source = UnlearnableMLPClassifier((64, 64), max_iter=100, random_state=0)
    target = UnlearnableMLPClassifier((96, 96), max_iter=100, random_state=100)
    source.fit(X, y)
    target.fit(X, y)
    return task, source, target, task_vector(fine_tune(source, S, y), source)


def _moved_accuracy(digits_transfer, **params):
    task, source, target, tau = digits_transfer
    tr = TaskVectorTransporter(random_state=0, **params)
    tr.fit(task["S_train"][:256], source_base=source, target_base=target)
    model = tr.apply(target, tr.transform(tau))
    return np.mean(model.predict(task["S_test"]) == task["y_test"])


def test_procrustes_transport_beats_the_baselines_on_rotated_digits(
    digits_transfer,
):
    task, _, target, _ = digits_transfer
    zero_shot = np.mean(target.predict(task["S_test"]) == task["y_test"])
    ours = _moved_accuracy(digits_transfer)
    assert ours > zero_shot + 0.1
    for align in ("hungarian", "truncate", "random", "lstsq"):
        assert ours > _moved_accuracy(digits_transfer, align=align) + 0.02, align


def test_alpha_scales_the_update(X):
    net, wide = _mlp((6, 8, 3)), _mlp((6, 12, 3), seed=1)
    tr = TaskVectorTransporter().fit(X, source_base=net, target_base=wide)
    update = tr.transform(task_vector(_perturbed(net), net))
    half = tr.set_params(alpha=0.5).apply(wide, update)
    full = tr.set_params(alpha=1.0).apply(wide, update)
    w0, w_half, w_full = (m[0].weight.detach() for m in (wide, half, full))
    torch.testing.assert_close(w_full - w0, 2 * (w_half - w0))
    torch.testing.assert_close(w_full - w0, update["0.weight"])


def test_fitted_transporter_pickles_and_clones(X):
    net, wide = _mlp((6, 8, 3)), _mlp((6, 12, 3), seed=1)
    tau = task_vector(_perturbed(net), net)
    tr = TaskVectorTransporter(whiten=0.25).fit(X, source_base=net, target_base=wide)
    back = pickle.loads(pickle.dumps(tr))
    for k, v in tr.transform(tau).items():
        torch.testing.assert_close(back.transform(tau)[k], v)
    assert clone(tr).get_params() == tr.get_params()
    assert not hasattr(clone(tr), "maps_")


def test_inputs_are_left_unchanged(X):
    net, wide = _mlp((6, 8, 3)), _mlp((6, 12, 3), seed=1)
    tau = task_vector(_perturbed(net), net)
    copies = (X.copy(), {k: v.clone() for k, v in tau.items()}, copy.deepcopy(wide))
    tr = TaskVectorTransporter().fit(X, source_base=net, target_base=wide)
    tr.apply(wide, tr.transform(tau))
    np.testing.assert_array_equal(X, copies[0])
    for k in tau:
        torch.testing.assert_close(tau[k], copies[1][k])
    for a, b in zip(wide.parameters(), copies[2].parameters()):
        torch.testing.assert_close(a, b)


def test_too_few_calibration_rows_warn(X):
    net, wide = _mlp((6, 8, 3)), _mlp((6, 12, 3), seed=1)
    with pytest.warns(UserWarning, match="calibration rows"):
        TaskVectorTransporter().fit(X[:5], source_base=net, target_base=wide)


# --- bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    "target, match",
    [
        (lambda: _mlp((6, 8, 8, 3)), "2 linear layers against 3"),
        (lambda: _mlp((5, 8, 3)), "input widths 6 and 5"),
        (lambda: _mlp((6, 8, 4)), "output widths 3 and 4"),
    ],
)
def test_architectures_that_do_not_correspond_are_named(X, target, match):
    with pytest.raises(ValueError, match=match):
        TaskVectorTransporter().fit(
            X, source_base=_mlp((6, 8, 3)), target_base=target()
        )


@pytest.mark.parametrize(
    "model, error, match",
    [
        (lambda: nn.Linear(6, 3), ValueError, "do not correspond"),
        (
            lambda: nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 3)),
            ValueError,
            "graphs differ at operation 2: LayerNorm and ReLU",
        ),
        (
            lambda: nn.Sequential(nn.Linear(6, 8), nn.GRU(8, 3)),
            TypeError,
            "holds a GRU layer",
        ),
        (lambda: nn.Sequential(nn.ReLU()), ValueError, "no Linear"),
        (lambda: "net", TypeError, "got str"),
        (lambda: MLPClassifier(), NotFittedError, "not fitted"),
        (lambda: UnlearnableMLPClassifier(), NotFittedError, "not fitted"),
    ],
)
def test_unsupported_models_are_named(X, model, error, match):
    with pytest.raises(error, match=match):
        TaskVectorTransporter().fit(X, source_base=model(), target_base=_mlp((6, 8, 3)))


def test_calibration_rows_of_the_wrong_width_are_named(X):
    with pytest.raises(ValueError, match="7 columns; source_base reads 6"):
        TaskVectorTransporter().fit(
            np.ones((20, 7)), source_base=_mlp((6, 8, 3)), target_base=_mlp((6, 9, 3))
        )
    with pytest.raises(ValueError, match="NaN"):
        X_nan = X.copy()
        X_nan[0, 0] = np.nan
        TaskVectorTransporter().fit(
            X_nan, source_base=_mlp((6, 8, 3)), target_base=_mlp((6, 9, 3))
        )


def test_bad_task_vectors_and_targets_are_named(X):
    net, wide = _mlp((6, 8, 3)), _mlp((6, 12, 3), seed=1)
    tau = task_vector(_perturbed(net), net)
    tr = TaskVectorTransporter().fit(X, source_base=net, target_base=wide)
    with pytest.raises(ValueError, match=r"missing \['0.bias'\]"):
        tr.transform({k: v for k, v in tau.items() if k != "0.bias"})
    with pytest.raises(ValueError, match="has shape"):
        tr.transform({**tau, "0.weight": torch.zeros(3, 3)})
    with pytest.raises(ValueError, match="NaN"):
        tr.transform({**tau, "0.bias": torch.full((8,), float("nan"))})
    with pytest.raises(TypeError, match="dict"):
        tr.transform([1, 2])
    with pytest.raises(ValueError, match="fitted for a target of widths"):
        tr.apply(net, tau)
    with pytest.raises(ValueError, match="not the same architecture"):
        task_vector(net, wide)
    with pytest.raises(NotFittedError):
        TaskVectorTransporter().transform(tau)


@pytest.mark.parametrize(
    "params", [{"whiten": 0.7}, {"align": "svd"}, {"ridge": -1.0}, {"alpha": "big"}]
)
def test_bad_parameters_are_named(X, params):
    with pytest.raises(InvalidParameterError, match=next(iter(params))):
        TaskVectorTransporter(**params).fit(
            X, source_base=_mlp((6, 8, 3)), target_base=_mlp((6, 9, 3))
        )


# --- parameters of element-wise layers, models as input, outputs ------------------


def _prelu_net(per_unit, seed=0):
    torch.manual_seed(seed)
    net = nn.Sequential(
        nn.Linear(6, 16), nn.PReLU(16 if per_unit else 1), nn.Linear(16, 3)
    )
    with torch.no_grad():  # slopes that differ by unit
        net[1].weight.copy_(torch.linspace(0.05, 0.5, net[1].weight.numel()))
    return net


@pytest.mark.parametrize("per_unit", [True, False])
def test_prelu_slopes_are_in_the_task_vector_and_move_with_their_units(X, per_unit):
    net = _prelu_net(per_unit)
    tuned = _perturbed(net)
    tau = task_vector(tuned, net)
    assert "1.weight" in tau  # the slopes are not dropped
    perm = torch.randperm(16)
    twin = _permuted(net, [perm])
    if per_unit:
        with torch.no_grad():
            twin[1].weight.copy_(net[1].weight[perm])
    np.testing.assert_allclose(_out(twin, X), _out(net, X), atol=1e-5)
    tr = TaskVectorTransporter().fit(X, source_base=net, target_base=twin)
    moved = tr.transform(tau)
    expected = tau["1.weight"][perm] if per_unit else tau["1.weight"]
    np.testing.assert_allclose(moved["1.weight"], expected, atol=1e-5)
    # The moved model computes what the fine-tuned source computes.
    np.testing.assert_allclose(
        _out(tr.apply(twin, moved), X), _out(tuned, X), atol=1e-4
    )


def test_prelu_layers_that_do_not_correspond_are_named(X):
    with pytest.raises(ValueError, match="PReLU layers in different places"):
        TaskVectorTransporter().fit(
            X, source_base=_prelu_net(True), target_base=_prelu_net(False)
        )


def test_transform_takes_the_finetuned_model_and_returns_a_model_or_state(X):
    net = _mlp((6, 16, 12, 3))
    target = _mlp((6, 24, 20, 3), seed=1)
    tuned = _perturbed(net)
    tr = TaskVectorTransporter(alpha=1.5).fit(X, source_base=net, target_base=target)
    from_vector = tr.transform(task_vector(tuned, net))
    from_model = tr.transform(tuned)
    for k in from_vector:
        torch.testing.assert_close(from_model[k], from_vector[k])
    moved = tr.transform(tuned, output="model", target_base=target)
    np.testing.assert_allclose(
        _out(moved, X), _out(tr.apply(target, from_vector), X), atol=1e-6
    )
    state = tr.transform(tuned, output="state_dict")
    loaded = copy.deepcopy(target)
    loaded.load_state_dict(state)
    np.testing.assert_allclose(_out(loaded, X), _out(moved, X), atol=1e-6)
    assert not np.allclose(_out(loaded, X), _out(target, X), atol=1e-3)
    with pytest.raises(ValueError, match="needs the target base"):
        tr.transform(tuned, output="model")
    with pytest.raises(ValueError, match="not of the source base's architecture"):
        tr.transform(_mlp((6, 24, 20, 3)))
    with pytest.raises(ValueError, match="output must be one of"):
        tr.transform(tuned, output="weights")


def test_state_output_of_scikit_learn_mlps():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = MLPClassifier((8,), max_iter=50, random_state=0).fit(X, y)
        b = MLPClassifier((12,), max_iter=50, random_state=1).fit(X, y)
        tuned = copy.deepcopy(a).partial_fit(X, 1 - y)
    tr = TaskVectorTransporter().fit(X, source_base=a, target_base=b)
    state = tr.transform(tuned, output="state_dict")
    moved = tr.transform(tuned, output="model", target_base=b)
    for i in range(2):
        np.testing.assert_allclose(state[f"coefs_.{i}"], moved.coefs_[i])
        np.testing.assert_allclose(state[f"intercepts_.{i}"], moved.intercepts_[i])


def test_centring_aligns_on_covariances(X):
    net = _mlp((6, 16, 12, 3))
    perm = [torch.randperm(16), torch.randperm(12)]
    twin = _permuted(net, perm)
    centred = TaskVectorTransporter(center=True).fit(
        X, source_base=net, target_base=twin
    )
    for k, p in enumerate(perm, start=1):  # a permutation is still recovered
        assert (centred.maps_[k].argmax(axis=0) == p.numpy()).all()
    # Between different bases, centring changes the maps: a unit's mean
    # level no longer counts as agreement.
    other = _mlp((6, 16, 12, 3), seed=3)
    plain = TaskVectorTransporter().fit(X, source_base=net, target_base=other)
    centred = TaskVectorTransporter(center=True).fit(
        X, source_base=net, target_base=other
    )
    assert not np.allclose(plain.maps_[1], centred.maps_[1], atol=1e-3)


def test_functional_matching_is_pulled_to_the_procrustes_update_by_its_ridge(X):
    narrow, wide = _mlp((6, 8, 3)), _mlp((6, 12, 3), seed=1)
    tau = task_vector(_perturbed(narrow), narrow)

    def moved(**params):
        tr = TaskVectorTransporter(**params)
        return tr.fit(X, source_base=narrow, target_base=wide).transform(tau)

    mapped, anchored = moved(), moved(align="functional", ridge=1e9)
    fitted, free = (
        moved(align="functional", ridge=1e-9),
        moved(align="lstsq", ridge=1e-9),
    )
    for k in mapped:
        if k.endswith("weight"):  # a bias is refit, never shrunk
            np.testing.assert_allclose(anchored[k], mapped[k], atol=1e-5)
        # X has more rows than any layer reads units: the fit is determined.
        np.testing.assert_allclose(fitted[k], free[k], atol=1e-4)
    assert not np.allclose(fitted["2.weight"], mapped["2.weight"], atol=1e-3)
