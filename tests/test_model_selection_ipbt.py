"""IPBTSearchCV: population mechanics, restarts, lineage, drivers and bad input."""

import copy
import warnings
import zlib

import numpy as np
import pytest
from scipy.stats import loguniform, randint, uniform
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_digits, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LinearRegression, SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from toy_estimators import ToyTorchRegressor

from sklearn_ext.model_selection import IPBTSearchCV
from sklearn_ext.model_selection._incremental import (
    incremental_protocol,
    shrink_perturb,
    train,
)
from sklearn_ext.model_selection._population import (
    _progress_stalled,
    propose_settings,
)
from sklearn_ext.model_selection._search_space import SearchSpace
from sklearn_ext.model_selection._toy import _PBTToyProblem

TOY_SPACE = {"h0": uniform(0, 1), "h1": uniform(0, 1)}
TOY_X = np.zeros((10, 1))


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:600] / 16.0, y[:600]


def _sgd_search(**kw):
    params = {
        "population_size": 4,
        "budget": 40,
        "random_state": 0,
    }
    params.update(kw)
    return IPBTSearchCV(
        SGDClassifier(learning_rate="constant", random_state=0),
        {"eta0": loguniform(1e-4, 1e-1), "alpha": loguniform(1e-6, 1e-2)},
        **params,
    )


class _NeverTrain(ClassifierMixin, BaseEstimator):
    """Has partial_fit, warm_start and max_iter, but must never be trained."""

    def __init__(self, alpha=1.0, max_iter=1, warm_start=False):
        self.alpha = alpha
        self.max_iter = max_iter
        self.warm_start = warm_start

    def fit(self, X, y):
        raise AssertionError("trained although the search should have refused")

    partial_fit = fit


# --- the search space -----------------------------------------------------------


def test_space_samples_inside_support_and_round_trips():
    space = SearchSpace(
        {
            "alpha": loguniform(1e-5, 1e-1),
            "max_iter": randint(1, 10),
            "penalty": ["l2", "l1", None],
        },
        SGDClassifier(),
    )
    rng = np.random.RandomState(0)
    for _ in range(50):
        p = space.sample(rng)
        assert 1e-5 <= p["alpha"] <= 1e-1
        assert isinstance(p["max_iter"], int) and 1 <= p["max_iter"] < 10
        assert p["penalty"] in ("l2", "l1", None)
        back = space.decode_many(space.encode_many([p]))[0]
        assert back["max_iter"] == p["max_iter"] and back["penalty"] == p["penalty"]
        assert back["alpha"] == pytest.approx(p["alpha"], rel=1e-9)
    params, U = space.sample_many(20, rng)
    np.testing.assert_allclose(U, space.encode_many(params))


def test_perturb_follows_pbt_zoo_rule():
    space = SearchSpace(
        {"eta0": loguniform(1e-4, 1.0), "max_iter": randint(1, 100)}, SGDClassifier()
    )
    rng = np.random.RandomState(0)
    seen = set()
    for _ in range(40):
        new = space.perturb({"eta0": 0.01, "max_iter": 5}, 2.0, rng)
        seen.add(round(new["eta0"], 12))
        assert isinstance(new["max_iter"], int)
    assert seen == {0.02, 0.005}  # times or divided by the factor, nothing else
    # clipped at the support's edge
    edge = {
        space.perturb({"eta0": 0.9, "max_iter": 5}, 2.0, rng)["eta0"] for _ in range(40)
    }
    assert edge == {1.0, 0.45}


@pytest.mark.parametrize(
    "space, message",
    [
        ({}, "empty"),
        ({"alpha": "0.1"}, "list of values or a frozen scipy.stats"),
        ({"alpha": []}, "non-empty"),
        ({"alpha": np.zeros((2, 2))}, "1-D"),
        ({"alpha": type("D", (), {"rvs": lambda self: 1})()}, "not a frozen scipy"),
        ({"nonsense": [1, 2]}, "not a parameter of _NeverTrain"),
        ({"max_iter": [1, 2]}, "cannot tune 'max_iter'"),
        ({"warm_start": [True]}, "cannot tune 'warm_start'"),
        # Empty ranges: scipy freezes them silently with a NaN support.
        ({"alpha": loguniform(1e-3, 1e-3)}, "'alpha'\\] has an empty range"),
        ({"alpha": uniform(0.1, 0)}, "'alpha'\\] has an empty range"),
        ({"alpha": randint(5, 5)}, "'alpha'\\] has an empty range"),
    ],
)
def test_malformed_param_distributions_fail_before_training(space, message):
    search = IPBTSearchCV(_NeverTrain(), space, budget=40, incremental="warm_start")
    with pytest.raises(ValueError, match=message):
        search.fit(np.zeros((20, 2)), np.arange(20) % 2)


def test_list_of_dicts_is_a_union_of_subspaces(digits):
    X, y = digits
    space = [
        {"loss": ["hinge"], "alpha": loguniform(1e-6, 1e-2)},
        {
            "loss": ["log_loss"],
            "learning_rate": ["constant"],
            "eta0": loguniform(1e-3, 1.0),
            "alpha": loguniform(1e-6, 1e-2),
        },
    ]
    search = IPBTSearchCV(
        SGDClassifier(random_state=0),
        space,
        population_size=6,
        budget=6 * 12,
        ready_interval=2,
        restarts=False,
        random_state=0,
    ).fit(X, y)
    params = search.cv_results_["params"]
    losses = {p["loss"] for p in params}
    assert losses == {"hinge", "log_loss"}  # both sub-spaces are drawn
    for p in params:  # explore stays inside a setting's own sub-space
        assert set(p) == ({"loss", "alpha"} if p["loss"] == "hinge" else set(space[1]))
    eta0 = search.cv_results_["param_eta0"]
    assert eta0.mask.tolist() == [p["loss"] == "hinge" for p in params]
    encoded = SearchSpace(space, SGDClassifier()).encode_many(list(params))
    assert encoded.shape == (len(params), 5) and np.all((encoded >= 0) & (encoded <= 1))
    with pytest.raises(ValueError, match="empty list"):
        IPBTSearchCV(SGDClassifier(), [], budget=8).fit(X, y)


def test_cv_results_have_scikit_learn_keys_and_the_schedules(digits):
    X, y = digits
    search = _sgd_search(cv=2).fit(X, y)
    res = search.cv_results_
    n = len(res["params"])
    for key in (
        "mean_fit_time",
        "std_fit_time",
        "mean_score_time",
        "std_score_time",
        "split0_test_score",
        "split1_test_score",
        "mean_test_score",
        "std_test_score",
        "rank_test_score",
        "param_eta0",
        "param_alpha",
        "run",
        "ready_step",
        "member",
        "start",
        "stop",
        "parent",
        "weights_from",
        "params_from",
    ):
        assert len(res[key]) == n, key
    halves = (res["split0_test_score"] + res["split1_test_score"]) / 2
    np.testing.assert_allclose(res["mean_test_score"], halves)
    # The pick is the best selection score (the mean over the last ready
    # steps), not necessarily the best single row.
    assert res["rank_test_score"][np.argmax(res["mean_test_score"])] == 1
    assert search.best_index_ == np.argmax(res["selection_score"])
    assert res["params"][search.best_index_] == search.best_params_
    assert res["selection_score"][search.best_index_] == search.best_score_
    assert search.multimetric_ is False and callable(search.scorer_)
    pd = pytest.importorskip("pandas")
    assert len(pd.DataFrame(res)) == n


def test_multi_metric_scoring_ranks_by_the_refit_metric(digits):
    X, y = digits
    search = _sgd_search(
        scoring={"acc": "accuracy", "bal": "balanced_accuracy"}, refit="bal"
    ).fit(X, y)
    res = search.cv_results_
    assert search.multimetric_ and set(search.scorer_) == {"acc", "bal"}
    for metric in ("acc", "bal"):
        assert f"mean_test_{metric}" in res and f"rank_test_{metric}" in res
    assert search.best_score_ == res["selection_score"].max()
    assert res["rank_test_bal"][np.argmax(res["mean_test_bal"])] == 1
    np.testing.assert_array_equal(search.history_["score"], res["mean_test_bal"])
    assert search.score(X, y) == pytest.approx(
        search.scorer_["bal"](search.best_estimator_, X, y)
    )
    for refit in (True, False, "f1"):
        with pytest.raises(ValueError, match="refit must name the scorer"):
            _sgd_search(scoring=["accuracy", "balanced_accuracy"], refit=refit).fit(
                X, y
            )


@pytest.mark.parametrize(
    "estimator, mode, iter_param, final_step",
    [
        (SGDClassifier(), "partial_fit", None, None),
        (MLPClassifier(), "partial_fit", None, None),
        (MLPClassifier(solver="lbfgs"), "warm_start", "max_iter", None),
        (MLPClassifier(early_stopping=True), "warm_start", "max_iter", None),
        (
            make_pipeline(StandardScaler(), MLPClassifier()),
            "partial_fit",
            None,
            "mlpclassifier",
        ),
        (GaussianNB(), "partial_fit", None, None),
        (ToyTorchRegressor(), "warm_start", "max_iter", None),
    ],
)
def test_protocol_is_detected(estimator, mode, iter_param, final_step):
    protocol = incremental_protocol(estimator)
    assert protocol.mode == mode and protocol.iter_param == iter_param
    assert protocol.final_step == final_step
    assert protocol.pass_classes == (mode == "partial_fit")


@pytest.mark.parametrize("estimator", [RandomForestClassifier(), LinearRegression()])
def test_estimator_that_cannot_train_incrementally_is_refused(estimator):
    search = IPBTSearchCV(estimator, {"n_jobs": [1, 2]}, budget=40)
    with pytest.raises(ValueError, match="cannot train incrementally"):
        search.fit(np.zeros((20, 2)), np.arange(20) % 2)
    with pytest.raises(ValueError, match="needs an estimator with a warm_start"):
        incremental_protocol(GaussianNB(), "warm_start")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"budget": 3}, r"4 members x 1 steps = 4"),
        ({"budget": 40, "ready_interval": 20}, r"4 members x 20 steps = 80"),
    ],
)
def test_budget_smaller_than_one_interval_fails_before_training(kwargs, message):
    search = IPBTSearchCV(
        _NeverTrain(), {"alpha": [0.1, 1.0]}, population_size=4, **kwargs
    )
    with pytest.raises(ValueError, match=message):
        search.fit(np.zeros((20, 2)), np.arange(20) % 2)


def _max_diff(a, b):
    return max(np.abs(u - v).max() for u, v in zip(a, b))


def _one_fit_and_intervals(cls, params, k, X, y, classes=None):
    """One fit of ``k`` epochs, and a member trained by ``k`` one-epoch calls."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached: the plan
        one = cls(max_iter=k, **params).fit(X, y)
    member = cls(**params)
    protocol = incremental_protocol(member)
    for _ in range(k):
        train(member, protocol, 1, X, y, classes=classes)
    return one, member


def test_mlp_driver_hands_a_new_learning_rate_to_the_live_optimiser():
    """MLP's own partial_fit keeps its first learning rate; train() does not."""
    X, y = make_classification(200, 5, random_state=0)
    proto = incremental_protocol(MLPClassifier())
    frozen = MLPClassifier((8,), solver="sgd", momentum=0, random_state=0)
    train(frozen, proto, 1, X, y, classes=[0, 1])
    before = [c.copy() for c in frozen.coefs_]
    frozen.set_params(learning_rate_init=1e-12)
    train(frozen, proto, 3, X, y, classes=[0, 1])
    assert _max_diff(before, frozen.coefs_) < 1e-8
    assert frozen._optimizer.learning_rate == 1e-12

    partial = MLPClassifier((8,), solver="sgd", momentum=0, random_state=0)
    partial.partial_fit(X, y, classes=[0, 1])
    before = [c.copy() for c in partial.coefs_]
    partial.set_params(learning_rate_init=1e-12)
    partial.partial_fit(X, y)
    assert _max_diff(before, partial.coefs_) > 1e-6


@pytest.mark.parametrize("solver", ["sgd", "adam"])
def test_the_compat_module_syncs_the_mlp_optimiser_or_names_what_changed(solver):
    """The driver reaches scikit-learn's private MLP optimiser only through
    the compat layer's ``sync_mlp_optimizer`` (run on the oldest and the
    newest scikit-learn by ``make test`` and ``make test-oldest``)."""
    from sklearn_ext.utils._sklearn_compat_mlp import sync_mlp_optimizer

    X, y = make_classification(60, 4, random_state=0)
    mlp = MLPClassifier((4,), solver=solver, random_state=0)
    assert sync_mlp_optimizer(mlp) is False  # no optimiser before training
    mlp.partial_fit(X, y, classes=[0, 1])
    mlp.set_params(learning_rate_init=0.5, beta_1=0.5, momentum=0.5)
    assert sync_mlp_optimizer(mlp) is True
    opt = vars(mlp)["_optimizer"]
    assert opt.learning_rate_init == 0.5
    if solver == "sgd":
        assert opt.learning_rate == 0.5 and opt.momentum == 0.5
    else:
        assert opt.beta_1 == 0.5
    # A scikit-learn whose optimiser lost an attribute is named, not ignored.
    del opt.learning_rate_init
    with pytest.raises(RuntimeError, match="needs updating for this version"):
        sync_mlp_optimizer(mlp)


@pytest.mark.parametrize("solver", ["sgd", "adam"])
def test_k_one_epoch_intervals_equal_one_k_epoch_fit_for_mlp(solver):
    """The optimiser (momentum, Adam moments, step count) survives intervals."""
    X, y = make_classification(300, 6, n_classes=3, n_informative=4, random_state=0)
    kw = {
        "hidden_layer_sizes": (16,),
        "solver": solver,
        "batch_size": 32,
        "shuffle": False,
        "momentum": 0.9,
        "learning_rate_init": 0.02,
        "tol": 0.0,
        "n_iter_no_change": 10_000,
        "random_state": 0,
    }
    one, member = _one_fit_and_intervals(MLPClassifier, kw, 6, X, y, np.unique(y))
    assert _max_diff(one.coefs_, member.coefs_) == 0.0
    np.testing.assert_array_equal(one.loss_curve_, member.loss_curve_)
    # A warm-started fit per interval (the old driver) rebuilds the optimiser.
    warm = MLPClassifier(max_iter=1, warm_start=True, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(6):
            warm.fit(X, y)
    assert _max_diff(one.coefs_, warm.coefs_) > 1e-3


def test_shuffling_members_draw_a_new_order_every_epoch():
    """An integer seed becomes one stream: epochs do not repeat the first order."""
    X, y = make_classification(300, 6, random_state=0)
    member = SGDClassifier(random_state=0)
    proto = incremental_protocol(member)
    train(member, proto, 1, X, y, classes=[0, 1])
    assert isinstance(member.random_state, np.random.RandomState)
    twin = copy.deepcopy(member)
    train(member, proto, 1, X, y, classes=[0, 1])
    train(twin, proto, 1, X, y, classes=[0, 1])
    np.testing.assert_array_equal(member.coef_, twin.coef_)  # copies continue alike
    # Re-seeding from the integer at every call (scikit-learn's partial_fit on
    # its own) trains a different model.
    reseeded = SGDClassifier(random_state=0)
    for _ in range(2):
        reseeded.partial_fit(X, y, classes=[0, 1])
    assert np.abs(reseeded.coef_ - member.coef_).max() > 1e-6


def test_k_one_epoch_warm_starts_equal_one_k_epoch_fit_for_torch():
    """The shared backend keeps the Adam state and the shuffling generator."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(150, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.normal(size=150)
    kw = {"hidden": 8, "batch_size": 16, "tol": 0.0, "n_iter_no_change": 10_000}
    kw.update(device="cpu", random_state=0)
    one, member = _one_fit_and_intervals(ToyTorchRegressor, kw, 5, X, y)
    proto = incremental_protocol(member)
    for p, q in zip(one.module_.parameters(), member.module_.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert one.loss_curve_ == member.loss_curve_
    # A learning rate changed between intervals acts on the continued state,
    # and the state survives pickling.
    import pickle

    member.set_params(learning_rate_init=1e-12)
    again = pickle.loads(pickle.dumps(member))
    before = [p.detach().clone() for p in again.module_.parameters()]
    train(again, proto, 2, X, y)
    for b, p in zip(before, again.module_.parameters()):
        assert (p.detach() - b).abs().max() < 1e-8
    cold = ToyTorchRegressor(max_iter=2, **kw).fit(X, y)  # warm_start=False
    assert cold._training_state is None


def test_skorch_trains_one_epoch_per_partial_fit_and_keeps_its_optimiser():
    skorch = pytest.importorskip("skorch")
    import torch

    X, y = make_classification(200, 8, random_state=0)
    X = X.astype(np.float32)

    def net(**kw):
        torch.manual_seed(0)
        return skorch.NeuralNetClassifier(
            torch.nn.Sequential(
                torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)
            ),
            criterion=torch.nn.CrossEntropyLoss,
            optimizer=torch.optim.SGD,
            optimizer__momentum=0.9,
            lr=0.05,
            batch_size=32,
            iterator_train__shuffle=False,
            train_split=None,
            verbose=0,
            **kw,
        )

    one = net(max_epochs=5).fit(X, y)
    member = net()
    proto = incremental_protocol(member)
    assert proto.mode == "partial_fit" and proto.iter_param == "max_epochs"
    for _ in range(5):
        train(member, proto, 1, X, y)
    assert len(member.history) == 5
    for p, q in zip(one.module_.parameters(), member.module_.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), atol=1e-6)


def test_a_skorch_net_that_diverges_without_raising_is_detected():
    """skorch keeps training on a NaN loss; the replay's check names it."""
    skorch = pytest.importorskip("skorch")
    import torch

    from sklearn_ext.model_selection._incremental import non_finite_state

    X, y = make_classification(64, 4, random_state=0)
    X = (X * 1e3).astype(np.float32)
    torch.manual_seed(0)
    net = skorch.NeuralNetRegressor(
        torch.nn.Linear(4, 1),
        optimizer=torch.optim.SGD,
        lr=1e6,
        max_epochs=3,
        train_split=None,
        verbose=0,
    ).fit(X, y.astype(np.float32)[:, None] * 1e3)
    assert not np.isfinite(net.history[-1]["train_loss"])
    assert "train_loss" in non_finite_state(net)
    torch.manual_seed(0)
    fine = skorch.NeuralNetRegressor(
        torch.nn.Linear(4, 1), max_epochs=1, train_split=None, verbose=0
    ).fit(X / 1e3, y.astype(np.float32)[:, None])
    assert non_finite_state(fine) is None


def test_skorch_members_start_from_their_seed_not_the_global_generator():
    skorch = pytest.importorskip("skorch")
    import torch

    from sklearn_ext.model_selection._incremental import seeded_start

    def net():  # a module class: skorch builds it at initialisation
        return skorch.NeuralNetClassifier(
            torch.nn.Linear, module__in_features=4, module__out_features=3
        )

    state = torch.random.get_rng_state()
    a, b, c = seeded_start(net(), 7), seeded_start(net(), 7), seeded_start(net(), 8)
    assert torch.equal(torch.random.get_rng_state(), state)  # caller's RNG kept
    wa, wb, wc = (n.module_.weight.detach() for n in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    # estimators seeded by their own random_state are left alone
    mlp = MLPClassifier(random_state=0)
    assert seeded_start(mlp, 7) is mlp and not hasattr(mlp, "coefs_")


def test_pipeline_trains_its_last_step_by_partial_fit():
    X, y = make_classification(300, 6, random_state=0)
    X = 5 + 3 * X
    kw = {"hidden_layer_sizes": (8,), "shuffle": False, "random_state": 0}
    pipe = make_pipeline(StandardScaler(), MLPClassifier(**kw))
    proto = incremental_protocol(pipe)
    for _ in range(4):
        train(pipe, proto, 1, X, y, classes=[0, 1])
    scaler, mlp = pipe[0], pipe[-1]
    ref = MLPClassifier(**kw)
    for _ in range(4):
        ref.partial_fit(scaler.transform(X), y, classes=[0, 1])
    assert _max_diff(ref.coefs_, mlp.coefs_) == 0.0 and mlp.t_ == ref.t_
    weights = np.linspace(0.5, 1.5, len(y))
    train(pipe, proto, 1, X, y, [0, 1], {"mlpclassifier__sample_weight": weights})
    with pytest.raises(ValueError, match="mlpclassifier__sample_weight"):
        train(pipe, proto, 1, X, y, [0, 1], {"sample_weight": weights})


def test_shrink_perturb_on_numpy_and_torch_weights():
    X, y = make_classification(100, 5, random_state=0)
    sgd = SGDClassifier(random_state=0).fit(X, y)
    coef, intercept = sgd.coef_.copy(), sgd.intercept_.copy()
    assert shrink_perturb(sgd, 0.2, 0.1, seed=3)
    np.testing.assert_allclose(sgd.intercept_, 0.2 * intercept)  # bias noise is 0
    noise = (sgd.coef_ - 0.2 * coef) / 0.1
    bound = np.sqrt(6 / (coef.shape[0] + coef.shape[1]))
    assert np.abs(noise).max() <= bound and np.abs(noise).std() > 0.1 * bound

    net = ToyTorchRegressor(max_iter=2, device="cpu", random_state=0).fit(X, y * 1.0)
    before = [p.detach().clone() for p in net.module_.parameters()]
    twin = copy.deepcopy(net)
    assert shrink_perturb(net, 0.2, 0.1, seed=5) and shrink_perturb(twin, 0.2, 0.1, 5)
    for b, p, q in zip(before, net.module_.parameters(), twin.module_.parameters()):
        assert not np.allclose(p.detach().numpy(), 0.2 * b.numpy())
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert not shrink_perturb(_PBTToyProblem().fit(), 0.2, 0.1, 0)


# --- the algorithm --------------------------------------------------------------------


def test_detector_fires_on_plateaus_not_on_steady_gains():
    rng = np.random.RandomState(0)
    ramp = 0.01 * np.arange(60) + rng.normal(0, 0.005, 60)
    saturating = 1.0 - 1.62 * 0.96 ** (2 * np.arange(60))
    plateau = 0.5 + rng.normal(0, 0.01, 60)
    assert not any(_progress_stalled(ramp[:k]) for k in range(2, 61))
    assert not any(_progress_stalled(saturating[:k]) for k in range(2, 61))
    fired = [_progress_stalled(plateau[:k]) for k in range(2, 61)]
    assert np.mean(fired[20:]) > 0.8
    assert _progress_stalled(np.full(10, 0.3))  # flat: no gain at all


def test_restart_proposals_beat_random_on_a_drifting_objective():
    """The time-varying GP tracks an optimum that moves over training."""
    space = SearchSpace(
        {"alpha": uniform(0, 1), "l1_ratio": uniform(0, 1)}, SGDClassifier()
    )

    def objective(p, t):  # the best alpha drifts from 0.1 to 0.58 by t = 0.6
        return -((p["alpha"] - 0.1 - 0.8 * t) ** 2) - 0.3 * (p["l1_ratio"] - 0.5) ** 2

    gp, blind, prior = [], [], []
    for seed in range(10):
        rng = np.random.RandomState(seed)
        params, times, scores = [], [], []
        for t in (0.0, 0.3, 0.6):  # the starts of three runs, 8 members each
            for _ in range(8):
                p = space.sample(rng)
                params += [p]
                times += [t]
                scores += [objective(p, t) + rng.normal(0, 0.01)]
        proposed = propose_settings(space, params, times, scores, 0.6, 4, rng)
        assert {source for _, source in proposed} == {"bo"}
        gp.append(np.mean([objective(p, 0.6) for p, _ in proposed]))
        timeless = propose_settings(space, params, [0.0] * 24, scores, 0.0, 4, rng)
        blind.append(np.mean([objective(p, 0.6) for p, _ in timeless]))
        prior.append(np.mean([objective(space.sample(rng), 0.6) for _ in range(4)]))
    gp, blind, prior = map(np.array, (gp, blind, prior))
    assert (gp > prior).sum() >= 8 and gp.mean() > prior.mean() + 0.03
    assert (gp > blind).sum() >= 8  # forgetting old runs is what helps


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_toy_problem_reaches_optimum_and_replay_is_exact(seed):
    search = IPBTSearchCV(
        _PBTToyProblem(), TOY_SPACE, budget=8 * 200, random_state=seed
    ).fit(TOY_X)
    assert search.best_score_ >= 1.19
    # The toy ignores its data, so replaying the best lineage must give back
    # exactly the best member: exploit copies and the lineage bookkeeping are exact.
    picked = search.cv_results_["mean_test_score"][search.best_index_]
    assert search.best_estimator_.score() == picked
    schedule = search.best_schedule_
    assert schedule[0]["start"] == 0 and schedule[0]["weights_from"] == "init"
    assert all(a["stop"] == b["start"] for a, b in zip(schedule, schedule[1:]))


def test_exploit_and_explore_move_the_bottom_quantile():
    search = IPBTSearchCV(
        _PBTToyProblem(),
        TOY_SPACE,
        budget=8 * 40,
        restarts=False,
        ready_interval=4,
        random_state=0,
        refit=False,
    ).fit(TOY_X)
    h = search.history_
    for step in range(1, h["ready_step"].max() + 1):
        now = h["ready_step"] == step
        exploited = now & (h["weights_from"] == "exploit")
        assert exploited.sum() == 2  # int(0.25 * 8)
        prev = np.flatnonzero(h["ready_step"] == step - 1)
        prev_scores = h["score"][prev]
        top = set(prev[np.argsort(prev_scores)[-2:]].tolist())
        for row in np.flatnonzero(exploited):
            parent = h["parent"][row]
            assert parent in top
            ratio = h["params"][row]["h0"] / h["params"][parent]["h0"]
            assert (
                ratio == pytest.approx(2)
                or ratio == pytest.approx(0.5)
                or (h["params"][row]["h0"] == 1.0)
            )
        kept = now & (h["weights_from"] == "continue")
        for row in np.flatnonzero(kept):
            assert h["params"][row] == h["params"][h["parent"][row]]
    assert search.n_restarts_ == 0 and search.ready_intervals_ == [4]
    assert set((h["stop"] - h["start"]).tolist()) == {4}


class _Plateau(BaseEstimator):
    """Scores rise for a few steps, then stay flat: forces restarts."""

    def __init__(self, rate=1.0):
        self.rate = rate

    def fit(self, X=None, y=None):
        self.coef_ = np.zeros((2, 2))
        self.t_ = 0
        return self

    def partial_fit(self, X=None, y=None):
        if not hasattr(self, "t_"):
            self.fit()
        self.t_ += 1
        self.coef_ = self.coef_ + 1.0
        return self

    def score(self, X=None, y=None):
        return float(min(self.t_, 3) * self.rate)


def test_restarts_double_the_interval_and_respect_the_budget():
    search = IPBTSearchCV(
        _Plateau(),
        {"rate": uniform(0.5, 0.5)},
        population_size=4,
        budget=4 * 120,
        ready_interval=1,
        patience=2,
        init_multiplier=2,
        random_hp_fraction=0.5,  # the paper's: half the settings from the GP
        random_state=0,
    ).fit(TOY_X)
    assert search.n_restarts_ >= 2
    intervals = search.ready_intervals_
    assert intervals == [2**k for k in range(len(intervals))]
    h = search.history_
    for run, interval in enumerate(intervals):
        lengths = (h["stop"] - h["start"])[h["run"] == run]
        assert lengths.max() == interval
    # Each run starts twice the population for one interval and keeps the
    # best half; those extra steps come out of every member's horizon, so the
    # budget is spent exactly and never exceeded.
    assert search.n_steps_ == 4 * 120 and h["stop"].max() < 120
    for run in range(len(intervals)):
        steps = h["ready_step"][h["run"] == run]
        sizes = [np.sum(h["ready_step"] == k) for k in sorted(set(steps))]
        assert sizes[0] == 8 and set(sizes[1:]) == {4}
        first = h["ready_step"] == steps.min()
        survivors = h["parent"][h["ready_step"] == steps.min() + 1]
        assert set(survivors) <= set(np.flatnonzero(first).tolist())
    # after a restart half the members start fresh and half from the best
    # member, shrunk and perturbed; half of the hyperparameters come from BO
    first = h["ready_step"] == h["ready_step"][h["run"] == 1].min()
    assert sorted(h["weights_from"][first]) == ["init"] * 4 + ["shrink_perturb"] * 4
    assert sorted(h["params_from"][first]) == ["bo"] * 4 + ["random"] * 4
    assert set(h["parent"][first & (h["weights_from"] == "shrink_perturb")]) <= set(
        np.flatnonzero(h["run"] == 0).tolist()
    )
    plain = clone(search).set_params(init_multiplier=1).fit(TOY_X)
    assert plain.n_steps_ == 4 * 120 and plain.history_["stop"].max() == 120


class _NoisyCurve(_Plateau):
    """A validation score that rises for ``rise`` steps (or for ever) plus noise.

    Trains as ``_Plateau``. ``true_score`` is the noiseless quality; ``score``
    adds N(0, noise²) drawn from (random_state, step), so that every member
    sees its own noise.
    """

    def __init__(self, rate=1.0, rise=3, noise=0.02, random_state=None):
        self.rate = rate
        self.rise = rise
        self.noise = noise
        self.random_state = random_state

    def true_score(self):
        steps = self.t_ if self.rise is None else min(self.t_, self.rise)
        return self.rate * steps / (self.rise or 100)

    def score(self, X=None, y=None):
        # The search may hand members a seed sequence: key the draw on its repr.
        key = zlib.crc32(repr((self.random_state, self.t_)).encode())
        draw = np.random.RandomState(key).normal()
        return float(self.true_score() + self.noise * draw)


@pytest.mark.parametrize("per_member", [20, 60, 200])
def test_restarts_fire_on_planted_stagnation_at_any_budget(per_member):
    # At the defaults, a population whose best stops rising restarts, whatever
    # the budget; one whose best keeps rising does not.
    space = {"rate": uniform(0.5, 0.5)}
    for seed in range(2):
        stalled = IPBTSearchCV(
            _NoisyCurve(), space, budget=8 * per_member, random_state=seed, refit=False
        ).fit(TOY_X)
        assert stalled.n_restarts_ >= 1, (per_member, seed)
        rising = IPBTSearchCV(
            _NoisyCurve(rise=None, noise=0.002),
            space,
            budget=8 * per_member,
            random_state=seed,
            refit=False,
        ).fit(TOY_X)
        assert rising.n_restarts_ == 0, (per_member, seed)


def test_selection_on_recent_scores_is_less_optimistic():
    # Noisy validation scores of plateaued members: picking the single best
    # score picks noise. The mean of the last three is closer to the truth.
    gaps = {1: [], 3: []}
    for seed in range(6):
        for window in gaps:
            search = IPBTSearchCV(
                _NoisyCurve(noise=0.05),
                {"rate": uniform(0.5, 0.5)},
                budget=8 * 40,
                restarts=False,
                ready_interval=2,
                selection_window=window,
                random_state=seed,
            ).fit(TOY_X)
            truth = search.best_estimator_.true_score()
            gaps[window].append(search.best_score_ - truth)
            row = search.cv_results_["selection_score"][search.best_index_]
            assert search.best_score_ == row
    assert np.mean(gaps[3]) < np.mean(gaps[1]) - 0.02
    assert np.mean(gaps[1]) > 0.05  # the curse the selection removes is real


def test_plain_pbt_never_restarts():
    search = IPBTSearchCV(
        _Plateau(),
        {"rate": uniform(0.5, 0.5)},
        population_size=4,
        budget=4 * 60,
        ready_interval=1,
        restarts=False,
        random_state=0,
    ).fit(TOY_X)
    assert search.n_restarts_ == 0 and set(search.history_["run"]) == {0}


# --- real estimators ----------------------------------------------------------------


def test_sgd_on_digits_results_and_delegation(digits):
    X, y = digits
    search = _sgd_search(cv=3).fit(X, y)
    assert search.n_splits_ == 3 and "split2_score" in search.history_
    h = search.history_
    np.testing.assert_allclose(
        h["score"], np.mean([h[f"split{k}_score"] for k in range(3)], axis=0)
    )
    assert search.best_score_ == h["selection_score"].max() > 0.85
    assert h["selection_score"].max() <= h["score"].max()
    assert search.best_params_ == h["params"][search.best_index_]
    assert search.score(X, y) > 0.85
    np.testing.assert_array_equal(search.classes_, np.arange(10))
    # the refit model reads like the estimator given: its own max_iter, no warm start
    assert search.best_estimator_.max_iter == 1000
    assert not search.best_estimator_.warm_start
    no_refit = _sgd_search(refit=False).fit(X, y)
    assert not hasattr(no_refit, "best_estimator_")
    with pytest.raises(AttributeError):
        no_refit.predict(X)


def test_pipeline_and_partial_fit_estimators(digits):
    X, y = digits
    pipe = IPBTSearchCV(
        make_pipeline(StandardScaler(), MLPClassifier((16,), random_state=0)),
        {"mlpclassifier__learning_rate_init": loguniform(1e-3, 1e-1)},
        population_size=2,
        budget=8,
        random_state=0,
    ).fit(X, y)
    # the MLP inside the pipeline warm-started through the whole replayed lineage
    # (its n_iter_ counts one fit call; loss_curve_ spans every epoch)
    mlp = pipe.best_estimator_[-1]
    assert len(mlp.loss_curve_) == pipe.best_schedule_[-1]["stop"] >= 2
    assert pipe.score(X, y) > 0.8
    nb = IPBTSearchCV(
        GaussianNB(),
        {"var_smoothing": loguniform(1e-10, 1e-1)},
        population_size=2,
        budget=4,
        random_state=0,
    ).fit(X, y)
    assert nb.score(X, y) > 0.7


def test_torch_estimator_with_restarts_uses_shrink_perturb():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0])
    search = IPBTSearchCV(
        ToyTorchRegressor(hidden=8, device="cpu"),
        {"learning_rate_init": loguniform(1e-3, 1e-1)},
        population_size=4,
        budget=4 * 40,
        ready_interval=1,
        patience=1,
        random_state=0,
    ).fit(X, y)
    h = search.history_
    assert search.n_restarts_ >= 1 and "shrink_perturb" in set(h["weights_from"])
    assert search.score(X, y) > 0.5


def test_parallel_run_equals_sequential(digits):
    X, y = digits
    one = _sgd_search(n_jobs=1).fit(X, y)
    two = _sgd_search(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.history_["score"], two.history_["score"])
    assert one.best_params_ == two.best_params_


def test_failing_members_get_error_score_and_total_failure_raises(digits):
    X, y = digits
    search = IPBTSearchCV(
        MLPClassifier((8,), random_state=0),
        {"hidden_layer_sizes": [(8,), (0,)]},
        population_size=8,
        budget=16,
        random_state=0,
    )
    with pytest.warns(FitFailedWarning, match="hidden_layer_sizes") as record:
        search.fit(X, y)
    # the warning names the user's line, not the library's
    assert {w.filename for w in record if w.category is FitFailedWarning} == {__file__}
    scores = search.history_["score"]
    assert np.isnan(scores).any() and np.isfinite(search.best_score_)
    bad = IPBTSearchCV(
        MLPClassifier((8,)),
        {"hidden_layer_sizes": [(0,)]},
        population_size=2,
        budget=2,
    )
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitFailedWarning)
            bad.fit(X, y)


def test_sample_weight_is_split_with_the_data(digits):
    X, y = digits
    weights = np.where(y == 0, 0.0, 1.0)  # class 0 never counts
    search = IPBTSearchCV(
        GaussianNB(),
        {"var_smoothing": [1e-9]},
        population_size=2,
        budget=2,
        random_state=0,
    ).fit(X, y, sample_weight=weights)
    assert (search.best_estimator_.class_count_[0]) == 0


def test_sample_weight_reaches_members_scorer_and_refit(digits):
    """Weights are split per training and validation split, like sklearn's searches.

    Each member's fit sees the training part of the weights and the scorer the
    validation part: the recorded score is the weighted validation accuracy of
    a model fitted with the weighted training part.
    """
    from sklearn.metrics import accuracy_score

    X, y = digits
    rng = np.random.RandomState(0)
    weights = rng.randint(0, 4, size=len(y)).astype(float)
    split = (np.arange(0, 450), np.arange(450, 600))
    search = IPBTSearchCV(
        GaussianNB(),
        {"var_smoothing": [1e-2]},
        population_size=2,
        budget=2,
        cv=[split],
        random_state=0,
    ).fit(X, y, sample_weight=weights)
    tr, te = split
    member = GaussianNB(var_smoothing=1e-2).fit(X[tr], y[tr], sample_weight=weights[tr])
    expected = accuracy_score(y[te], member.predict(X[te]), sample_weight=weights[te])
    unweighted = accuracy_score(y[te], member.predict(X[te]))
    assert expected != unweighted  # the weights matter for this split
    np.testing.assert_allclose(search.history_["score"], expected)
    refit = GaussianNB(var_smoothing=1e-2).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(search.best_estimator_.theta_, refit.theta_)


def test_sample_weight_with_metadata_routing(digits):
    """With routing enabled the member must request the weights, as in GridSearchCV."""
    import sklearn
    from sklearn.exceptions import UnsetMetadataPassedError
    from sklearn.pipeline import Pipeline

    X, y = digits
    weights = np.where(y == 0, 0.0, 1.0) + np.arange(len(y)) % 3
    plain = _sgd_search(budget=8).fit(X, y, sample_weight=weights)
    unweighted = _sgd_search(budget=8).fit(X, y)
    assert not np.array_equal(plain.history_["score"], unweighted.history_["score"])
    with sklearn.config_context(enable_metadata_routing=True):
        routed = _sgd_search(budget=8)
        # the fit and the (default, passthrough) scorer both take the weights,
        # as they do without routing
        routed.estimator.set_partial_fit_request(sample_weight=True)
        routed.estimator.set_score_request(sample_weight=True)
        routed.fit(X, y, sample_weight=weights)
        np.testing.assert_array_equal(routed.history_["score"], plain.history_["score"])
        np.testing.assert_array_equal(
            routed.best_estimator_.coef_, plain.best_estimator_.coef_
        )
        # in a pipeline, through the search's router
        piped = Pipeline(
            [
                ("scale", StandardScaler().set_fit_request(sample_weight=False)),
                ("search", clone(routed)),
            ]
        ).fit(X, y, sample_weight=weights)
        direct = clone(routed).fit(
            StandardScaler().fit_transform(X), y, sample_weight=weights
        )
        np.testing.assert_array_equal(
            piped[-1].history_["score"], direct.history_["score"]
        )
        # partial_fit members are asked through set_partial_fit_request
        nb = IPBTSearchCV(
            GaussianNB()
            .set_partial_fit_request(sample_weight=True)
            .set_score_request(sample_weight=False),
            {"var_smoothing": [1e-9]},
            population_size=2,
            budget=2,
            random_state=0,
        ).fit(X, y, sample_weight=np.where(y == 0, 0.0, 1.0))
        assert nb.best_estimator_.class_count_[0] == 0
        with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
            _sgd_search(budget=8).fit(X, y, sample_weight=weights)


def test_members_expected_convergence_warnings_are_silenced(digits):
    """1-epoch warm-start intervals end at max_iter by design: no warning spam."""
    from sklearn.exceptions import ConvergenceWarning

    X, y = digits
    search = IPBTSearchCV(
        MLPClassifier((8,), solver="sgd", random_state=0),
        {"learning_rate_init": loguniform(1e-3, 1e-1)},
        population_size=2,
        budget=2 * 6,
        ready_interval=1,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        search.fit(X, y)
    assert search.n_steps_ == 12 and len(search.ready_intervals_) >= 1


def test_verbose_shows_a_labelled_bar_and_prints_no_lines(capsys):
    search = IPBTSearchCV(
        _Plateau(),
        {"rate": uniform(0.5, 0.5)},
        population_size=4,
        budget=4 * 60,
        ready_interval=1,
        patience=2,
        random_state=0,
        verbose=1,
    ).fit(TOY_X)
    out, err = capsys.readouterr()
    assert out == ""
    assert "IPBTSearchCV: steps per member" in err and "IPBTSearchCV: refit" in err
    assert f"restarts={search.n_restarts_}" in err and "best=" in err
    search.set_params(verbose=0).fit(TOY_X)
    assert capsys.readouterr() == ("", "")


def test_parallel_workers_train_large_weights_in_place(digits):
    """Weights over joblib's 1 MB memmap threshold must stay writable in workers."""
    X, y = digits

    def search(n_jobs):
        return IPBTSearchCV(
            MLPClassifier((2100,), max_iter=1, random_state=0),
            {"alpha": loguniform(1e-5, 1e-2)},
            population_size=2,
            budget=4,
            n_jobs=n_jobs,
            random_state=0,
            refit=False,
        )

    with warnings.catch_warnings():
        warnings.simplefilter("error", FitFailedWarning)
        two = search(2).fit(X, y)
    np.testing.assert_array_equal(
        two.history_["score"], search(1).fit(X, y).history_["score"]
    )


def test_total_iteration_estimators_are_refused():
    from sklearn.ensemble import HistGradientBoostingClassifier

    for est in (
        HistGradientBoostingClassifier(),
        make_pipeline(StandardScaler(), HistGradientBoostingClassifier()),
    ):
        with pytest.raises(ValueError, match="counts the total"):
            IPBTSearchCV(est, {"learning_rate": [0.1]}, budget=8).fit(
                np.zeros((20, 2)), np.arange(20) % 2
            )


def test_shrink_perturb_gives_noise_to_one_dimensional_weights():
    from sklearn.linear_model import SGDRegressor

    X, y = make_classification(100, 5, random_state=0)
    reg = SGDRegressor(random_state=0).fit(X, y * 1.0)
    coef, intercept = reg.coef_.copy(), reg.intercept_.copy()
    shrink_perturb(reg, 0.2, 0.1, seed=0)
    assert np.abs(reg.coef_ - 0.2 * coef).max() > 1e-3
    np.testing.assert_allclose(reg.intercept_, 0.2 * intercept)


def test_groups_classes_and_small_data_splits():
    from sklearn.model_selection import GroupKFold

    X, y = make_classification(60, 4, random_state=0)
    groups = np.repeat(np.arange(6), 10)
    search = _sgd_search(cv=GroupKFold(3), budget=8).fit(X, y, groups=groups)
    assert search.n_splits_ == 3
    partial = _sgd_search(incremental="partial_fit", budget=8)
    partial.fit(X, y, classes=[0, 1, 2])
    np.testing.assert_array_equal(partial.classes_, [0, 1, 2])
    # 30 samples of 10 classes: a 20% stratified hold-out cannot hold every class
    X10, y10 = np.random.RandomState(0).normal(size=(30, 3)), np.arange(30) % 10
    assert _sgd_search(budget=8).fit(X10, y10).n_splits_ == 1


def test_all_nan_scores_warn():
    def nan_scorer(estimator, X, y):
        return np.nan

    with pytest.warns(UserWarning, match="Every member scored NaN") as record:
        _sgd_search(budget=8, scoring=nan_scorer, refit=False).fit(
            *make_classification(60, 4, random_state=0)
        )
    assert record[0].filename == __file__


class _DivergesOnMoreData(_PBTToyProblem):
    """Trains on up to 50 samples; more data "diverges" (raises)."""

    def partial_fit(self, X=None, y=None):
        if len(X) > 50:
            raise ValueError("Solver produced non-finite parameter weights.")
        return super().partial_fit(X, y)


def test_replay_failure_falls_back_to_the_trained_best_member():
    X = np.zeros((60, 1))
    search = IPBTSearchCV(
        _DivergesOnMoreData(), TOY_SPACE, budget=8 * 10, random_state=0
    )
    with pytest.warns(FitFailedWarning, match="Replaying the best member"):
        search.fit(X)
    picked = search.cv_results_["mean_test_score"][search.best_index_]
    assert search.best_estimator_.score() == picked
    strict = clone(search).set_params(error_score="raise")
    with pytest.raises(ValueError, match="non-finite"):
        strict.fit(X)


class _SilentlyDivergesOnMoreData(_PBTToyProblem):
    """On more than 50 samples its weights go NaN without an error (as an MLP's
    or a skorch net's do on a NaN loss)."""

    def partial_fit(self, X=None, y=None):
        super().partial_fit(X, y)
        self.coef_ = self.theta_.copy() if len(X) <= 50 else np.full(2, np.nan)
        return self


def test_a_replay_that_goes_non_finite_silently_falls_back_too():
    X = np.zeros((60, 1))
    search = IPBTSearchCV(
        _SilentlyDivergesOnMoreData(), TOY_SPACE, budget=8 * 10, random_state=0
    )
    with pytest.warns(FitFailedWarning, match="coef_ holds NaN"):
        search.fit(X)
    assert np.all(np.isfinite(search.best_estimator_.coef_))
    picked = search.cv_results_["mean_test_score"][search.best_index_]
    assert search.best_estimator_.score() == picked
    strict = clone(search).set_params(error_score="raise")
    with pytest.raises(FloatingPointError, match="the replay diverged"):
        strict.fit(X)


def test_plot_schedules_draws_every_member_and_the_best_lineage(digits):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sklearn_ext.model_selection import plot_schedules

    X, y = digits
    search = _sgd_search(budget=4 * 16, ready_interval=2, restarts=False).fit(X, y)
    axes = plot_schedules(search)
    assert [ax.get_title() for ax in axes] == ["eta0", "alpha"]
    n_rows = len(search.cv_results_["params"])
    segments = axes[0].collections[0].get_segments()
    drawn = sum(len(c.get_segments()) for c in axes[0].collections)
    assert drawn == n_rows and len(segments) == 1
    assert axes[0].get_yscale() == "log"  # log-uniform over three decades
    best = axes[0].get_lines()[0]  # the best member's lineage ends at its row
    best_row = search.best_index_
    assert best.get_xdata()[-1] == search.cv_results_["stop"][best_row]
    assert best.get_ydata()[-1] == search.best_params_["eta0"]
    with pytest.raises(ValueError, match="not hyperparameters"):
        plot_schedules(search, ["gamma"])
    plt.close("all")
