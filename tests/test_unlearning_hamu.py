"""HAMU: the closed-form per-step subproblem."""

import numpy as np
import pytest
import torch

from sklearn_ext.unlearning import hamu_step


def _brute_force(g_r, g_f, c, R, n=4001):
    """Minimum of g_r . d over the feasible set, searched in span(g_r, g_f).

    The objective and the constraint see only the component of d in the span,
    and dropping the rest shortens d: the optimum lies in the span.
    """
    e1 = g_f / np.linalg.norm(g_f)
    rest = g_r - (g_r @ e1) * e1
    e2 = rest / np.linalg.norm(rest) if np.linalg.norm(rest) > 1e-12 else None
    best = np.inf
    radii = np.linspace(0, R, 401)
    angles = np.linspace(0, 2 * np.pi, n)
    for r in radii:
        d1, d2 = r * np.cos(angles), r * np.sin(angles)
        forget = d1 * np.linalg.norm(g_f)
        retain = d1 * (g_r @ e1) + (0 if e2 is None else d2 * (g_r @ e2))
        ok = forget >= c - 1e-9
        if ok.any():
            best = min(best, retain[ok].min())
    return best


@pytest.mark.parametrize("seed", range(8))
def test_closed_form_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    g_r, g_f = rng.normal(size=(2, 6))
    g_f += rng.uniform(-1.5, 1.5) * g_r  # every angle between the two
    R = rng.uniform(0.3, 2.0)
    c = rng.uniform(0.05, 0.9) * R * np.linalg.norm(g_f)  # feasible
    step = hamu_step(torch.tensor(g_r), torch.tensor(g_f), c, R)
    delta = step.delta.numpy()
    assert step.branch in ("direct", "rectified")
    assert np.linalg.norm(delta) <= R * (1 + 1e-9)
    assert g_f @ delta >= c * (1 - 1e-9)
    best = _brute_force(g_r, g_f, c, R)
    # The grid is a lower-resolution search: the closed form is at least as good.
    assert step.retain_change <= best + 1e-9
    assert step.retain_change == pytest.approx(best, abs=5e-3 * R * np.linalg.norm(g_r))


def test_branches():
    g_r = torch.tensor([1.0, 0.0])
    # Opposed gradients: descending the retain loss raises the forget loss.
    step = hamu_step(g_r, torch.tensor([-1.0, 0.0]), 0.5, 1.0)
    assert step.branch == "direct"
    torch.testing.assert_close(step.delta, torch.tensor([-1.0, 0.0]))
    assert step.forget_change == pytest.approx(1.0)
    assert not step.degradation_unavoidable
    # Orthogonal: the forget constraint is met sideways at no retain cost...
    step = hamu_step(g_r, torch.tensor([0.0, 1.0]), 0.6, 1.0)
    assert step.branch == "rectified"
    torch.testing.assert_close(step.delta, torch.tensor([-0.8, 0.6]))
    assert step.forget_change == pytest.approx(0.6)
    assert step.retain_change == pytest.approx(-0.8)
    # ...aligned: any rise of the forget loss raises the retain loss.
    step = hamu_step(g_r, torch.tensor([1.0, 0.0]), 0.5, 1.0)
    assert step.branch == "rectified"
    assert step.retain_change == pytest.approx(0.5)
    assert step.degradation_unavoidable
    # Out of reach within the radius: the smallest sufficient step.
    step = hamu_step(g_r, torch.tensor([0.0, 1.0]), 2.0, 1.0)
    assert step.branch == "infeasible"
    torch.testing.assert_close(step.delta, torch.tensor([0.0, 2.0]))
    assert step.degradation_unavoidable


def test_hardness_and_degradation_rise_with_alignment():
    g_r = torch.tensor([1.0, 0.0, 0.0])
    steps = [
        hamu_step(g_r, torch.tensor([np.cos(a), np.sin(a), 0.0]), 0.5, 1.0)
        for a in np.linspace(np.pi, 0, 7)  # from opposed to aligned
    ]
    hardness = [s.hardness for s in steps]
    cost = [s.retain_change for s in steps]
    assert np.all(np.diff(hardness) > 0)
    assert np.all(np.diff(cost) >= -1e-12)
    assert [s.degradation_unavoidable for s in steps][0] is False
    assert steps[-1].degradation_unavoidable


@pytest.mark.parametrize(
    "args, match",
    [
        ((torch.ones(2), torch.zeros(2), 0.1, 1.0), "forget gradient is zero"),
        ((torch.ones(2), torch.ones(3), 0.1, 1.0), "differ in size"),
        ((torch.ones(2), torch.ones(2), 0.0, 1.0), "improvement must be positive"),
        ((torch.ones(2), torch.ones(2), 0.1, -1.0), "radius must be positive"),
        ((torch.tensor([np.nan, 1.0]), torch.ones(2), 0.1, 1.0), "NaN"),
    ],
)
def test_bad_input_is_named(args, match):
    with pytest.raises(ValueError, match=match):
        hamu_step(*args)


# --- the unlearner -------------------------------------------------------------


@pytest.fixture(scope="module")
def digits_logistic():
    from sklearn.datasets import load_digits

    from sklearn_ext.unlearning._hamu import HAMUUnlearner
    from sklearn_ext.unlearning._mlp import UnlearnableMLPClassifier

    X, y = load_digits(return_X_y=True)
    base = UnlearnableMLPClassifier((), random_state=0)
    unlearner = HAMUUnlearner(
        base,
        step_size=0.05,
        max_steps=60,
        batch_size=5000,
        stop_on_infeasible=False,
        random_state=0,
    )
    return X, y, unlearner.fit(X, y)


def test_convex_model_gets_the_guaranteed_forget_rise(digits_logistic):
    import copy

    X, y, fitted = digits_logistic
    forget = y == 3
    u = copy.deepcopy(fitted).unlearn(X[forget], y[forget], X[~forget], y[~forget])
    rise = np.array(u.history_["batch_forget_rise"])
    required = np.array(u.history_["required_rise"])
    assert np.mean(rise >= 0.95 * required) >= 0.95
    assert u.score(X[forget], y[forget]) < 0.9
    assert u.score(X[~forget], y[~forget]) > 0.97


def test_hardness_rises_as_the_forget_set_looks_like_the_retain_set(digits_logistic):
    import copy

    X, y, fitted = digits_logistic
    rng = np.random.default_rng(0)
    cls, others = np.flatnonzero(y == 3), np.flatnonzero(y != 3)
    hardness = []
    for rho in (0.0, 0.5, 1.0):  # share of the class swapped for random rows
        k = int(rho * len(cls))
        rows = np.r_[
            rng.choice(cls, len(cls) - k, replace=False),
            rng.choice(others, k, replace=False),
        ]
        mask = np.isin(np.arange(len(y)), rows)
        u = copy.deepcopy(fitted).set_params(max_steps=5)
        u.unlearn(X[mask], y[mask], X[~mask], y[~mask])
        hardness.append(np.mean(u.hardness_))
    assert hardness[0] < hardness[1] < hardness[2]


def test_a_random_subset_is_more_similar_to_the_retain_set_than_a_class(
    digits_logistic,
):
    from sklearn_ext.unlearning._hamu import forget_retain_similarity

    X, y, fitted = digits_logistic
    model = fitted.estimator_
    one_class = y == 3
    random = np.random.default_rng(0).random(len(y)) < one_class.mean()
    sims = [
        forget_retain_similarity(model, X[m], y[m], X[~m], y[~m])
        for m in (one_class, random)
    ]
    assert sims[1] > sims[0] + 0.3


def test_retain_set_defaults_to_the_kept_rows_not_forgotten(digits_logistic):
    import copy

    X, y, fitted = digits_logistic
    forget = y == 3
    kept = copy.deepcopy(fitted).set_params(keep_training_data=True).fit(X, y)
    u = kept.set_params(max_steps=3).unlearn(X[forget], y[forget])
    v = copy.deepcopy(fitted).set_params(max_steps=3)
    v.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    np.testing.assert_allclose(u.history_["retain_loss"], v.history_["retain_loss"])
    assert u.n_training_rows_kept_ == (~forget).sum()
    assert v.n_training_rows_kept_ == 0


def test_without_kept_rows_the_retain_set_is_required(digits_logistic):
    X, y, fitted = digits_logistic
    assert fitted._X_fit is None and fitted._y_fit is None
    with pytest.raises(ValueError, match="unlearn needs the retain set"):
        fitted.unlearn(X[:5], y[:5])


@pytest.mark.parametrize(
    "forget, match",
    [
        (lambda X, y: (X[:0], y[:0]), "forget set is empty"),
        (lambda X, y: (X[:5, :10], y[:5]), "10 features"),
        (lambda X, y: (X[:5], y[:4]), "5 rows but y_forget has 4"),
        (lambda X, y: (X[:5], np.full(5, 42)), "label 42"),
        (lambda X, y: (np.full((5, 64), np.nan), y[:5]), "NaN"),
    ],
)
def test_unlearn_bad_input_is_named(digits_logistic, forget, match):
    X, y, fitted = digits_logistic
    with pytest.raises(ValueError, match=match):
        fitted.unlearn(*forget(X, y), X[100:], y[100:])


@pytest.mark.parametrize(
    "retain, match",
    [
        (lambda X, y: (X[100:], None), "give both X_retain and y_retain"),
        (lambda X, y: (X[100:, :10], y[100:]), "10 features"),
        (lambda X, y: (X[100:], y[101:]), "rows but y_retain has"),
        (lambda X, y: (X[100:100], y[100:100]), "0 sample"),
        (lambda X, y: (X[100:], np.full(len(y) - 100, 42)), "label 42"),
    ],
)
def test_unlearn_bad_retain_input_is_named(digits_logistic, retain, match):
    X, y, fitted = digits_logistic
    with pytest.raises(ValueError, match=match):
        fitted.unlearn(X[:5], y[:5], *retain(X, y))


def test_an_estimator_without_gradients_is_refused():
    from sklearn.linear_model import LogisticRegression

    from sklearn_ext.unlearning._hamu import HAMUUnlearner

    with pytest.raises(TypeError, match="LogisticRegression exposes no torch network"):
        HAMUUnlearner(LogisticRegression()).fit(np.eye(4), [0, 1, 0, 1])


def test_sheaf_admm_classifier_follows_the_unlearning_protocol():
    from sklearn.datasets import load_digits

    from sklearn_ext.coordination import SheafADMMClassifier
    from sklearn_ext.unlearning import HAMUUnlearner

    X, y = load_digits(return_X_y=True)
    X, y = X[:400], y[:400]
    base = SheafADMMClassifier(max_iter=10, random_state=0)
    u = HAMUUnlearner(
        base, step_size=0.3, max_steps=4, stop_on_infeasible=False, random_state=0
    ).fit(X, y)
    forget = y == 3
    before = u.score(X[forget], y[forget])
    u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    loss = u.history_["forget_loss"]
    # The guaranteed rise shows in the forget loss, step after step.
    assert len(loss) == 4 and np.all(np.diff(loss) > 0)
    assert u.score(X[forget], y[forget]) < before


# --- what the unlearned model holds (issue 53, item 1) --------------------------


def _holds_row(blob, X_rows):
    """Indices of the rows whose float64 or float32 bytes occur in ``blob``.

    A zip archive (a skops file, a torch state inside it) is searched member by
    member, decompressed, as well as byte for byte.
    """
    import io
    import zipfile

    blobs = [blob]
    queue = [blob]
    while queue:
        data = queue.pop()
        if not zipfile.is_zipfile(io.BytesIO(data)):
            continue
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for name in archive.namelist():
                member = archive.read(name)
                blobs.append(member)
                queue.append(member)
    found = set()
    for i, row in enumerate(np.asarray(X_rows, dtype=np.float64)):
        for encoded in (row.tobytes(), row.astype(np.float32).tobytes()):
            if any(encoded in b for b in blobs):
                found.add(i)
    return sorted(found)


def _skops_bytes(model, tmp_path):
    sio = pytest.importorskip("skops.io")
    path = tmp_path / "model.skops"
    sio.dump(model, path)
    return path.read_bytes()


@pytest.fixture(scope="module")
def digits_small():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    forget = np.zeros(len(y), dtype=bool)
    forget[rng.choice(len(y), 30, replace=False)] = True
    return X, y, forget


def _unlearner(**params):
    from sklearn_ext.unlearning import HAMUUnlearner, UnlearnableMLPClassifier

    base = UnlearnableMLPClassifier((16,), max_iter=15, device="cpu", random_state=0)
    return HAMUUnlearner(base, random_state=0, **{"max_steps": 3, **params})


@pytest.mark.parametrize("keep", [False, True])
def test_no_forget_row_is_held_after_unlearn(digits_small, tmp_path, keep):
    import pickle

    X, y, forget = digits_small
    u = _unlearner(keep_training_data=keep).fit(X, y)
    if keep:
        # The detector finds the rows while they are held (in both files)...
        assert _holds_row(pickle.dumps(u), X[forget]) == list(range(forget.sum()))
        assert _holds_row(_skops_bytes(u, tmp_path), X[forget]) == list(
            range(forget.sum())
        )
        u.unlearn(X[forget], y[forget])
        # ...and the rows not forgotten are still there.
        assert _holds_row(pickle.dumps(u), X[~forget][:5]) == list(range(5))
    else:
        u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    assert _holds_row(pickle.dumps(u), X[forget]) == []
    assert _holds_row(_skops_bytes(u, tmp_path), X[forget]) == []


def test_a_forgotten_row_never_reenters_a_retain_set(digits_small, monkeypatch):
    from sklearn_ext.unlearning import UnlearnableMLPClassifier

    X, y, first = digits_small
    rng = np.random.default_rng(1)
    second = np.zeros(len(y), dtype=bool)
    second[rng.choice(np.flatnonzero(~first), 30, replace=False)] = True
    u = _unlearner(keep_training_data=True).fit(X, y)
    u.unlearn(X[first], y[first])
    assert u.n_training_rows_kept_ == len(y) - first.sum()

    seen = []
    original = UnlearnableMLPClassifier._module_inputs

    def spy(self, rows, **kwargs):
        seen.append(np.array(rows, copy=True))
        return original(self, rows, **kwargs)

    monkeypatch.setattr(UnlearnableMLPClassifier, "_module_inputs", spy)
    u.unlearn(X[second], y[second])
    # Two calls: the forget rows, then the retain rows the batches come from.
    assert len(seen) == 2
    np.testing.assert_array_equal(seen[0], X[second])
    retain = seen[1]
    assert len(retain) == len(y) - first.sum() - second.sum()
    assert _holds_row(retain.tobytes(), X[first]) == []
    assert _holds_row(retain.tobytes(), X[second]) == []
    assert u.n_training_rows_kept_ == len(retain)
    # Given explicitly, a forgotten row is refused as well.
    with pytest.raises(ValueError, match="forgotten by an earlier unlearn"):
        rows = np.flatnonzero(~first & ~second)[:10]
        rest = np.setdiff1d(np.arange(len(y)), rows)
        u.unlearn(X[rows], y[rows], X[rest], y[rest])
    # So is a second request for a row already deleted.
    with pytest.raises(ValueError, match="earlier unlearn already deleted them"):
        u.unlearn(X[first][:3], y[first][:3])


def test_a_forget_row_never_trained_on_is_an_error(digits_small):
    X, y, _ = digits_small
    u = _unlearner(keep_training_data=True).fit(X[100:], y[100:])
    with pytest.raises(
        ValueError, match=r"2 of the 5 forget rows \(the first at index 0\)"
    ):
        u.unlearn(np.r_[X[:2], X[100:103]], np.r_[y[:2], y[100:103]])
    # A known row with another label is not that row either.
    wrong = (y[100:101] + 1) % 10
    with pytest.raises(ValueError, match="not among the kept training rows"):
        u.unlearn(X[100:101], wrong)
    # Nothing was deleted by the refused requests.
    assert u.n_training_rows_kept_ == len(y) - 100
    with pytest.raises(ValueError, match="cannot also be retained"):
        u.unlearn(X[100:103], y[100:103], X[100:200], y[100:200])


# --- batches (issue 53, item 5) -------------------------------------------------


def test_batches_are_drawn_without_replacement():
    from sklearn_ext.unlearning._hamu import _batch_indices
    from sklearn_ext.utils._torch import make_generator

    whole = _batch_indices(7, 7, make_generator(0))
    for _ in range(3):
        assert next(whole).tolist() == list(range(7))
    assert next(_batch_indices(7, 100, make_generator(0))).tolist() == list(range(7))
    batches = _batch_indices(10, 4, make_generator(0))
    epoch = [next(batches).tolist() for _ in range(3)]
    assert [len(b) for b in epoch] == [4, 4, 2]
    assert sorted(sum(epoch, [])) == list(range(10))
    assert sorted(sum((next(batches).tolist() for _ in range(3)), [])) == list(
        range(10)
    )


def test_a_batch_as_large_as_the_set_is_the_whole_set(digits_small):
    X, y, forget = digits_small
    u = _unlearner(batch_size=5000, max_steps=6, max_step_retries=0).fit(X, y)
    u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    h = u.history_
    # Each step's batch rise is the rise of the whole forget set's loss.
    np.testing.assert_allclose(
        h["batch_forget_rise"][1:], np.diff(h["forget_loss"]), rtol=1e-6, atol=1e-9
    )


def test_same_random_state_same_floats(digits_small):
    X, y, forget = digits_small
    runs = []
    for _ in range(2):
        u = _unlearner(batch_size=8, max_steps=5).fit(X, y)
        u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
        runs.append((u.history_, u.predict_proba(X[:50])))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_the_standardiser_is_refit_on_the_retain_set(digits_small):
    X, y, _ = digits_small
    # One forgotten row: the means of all rows and of the retain rows would
    # give it back exactly.
    forget = np.zeros(len(y), dtype=bool)
    forget[7] = True
    u = _unlearner(max_steps=1).fit(X, y)
    base = u.estimator_
    n = len(y)
    recovered = n * base._mean - X[~forget].sum(axis=0)
    np.testing.assert_allclose(recovered, X[7], atol=1e-8)
    proba = base.predict_proba(X)
    base._refit_preprocessing(X[~forget])
    # Same function (float32 weights: up to rounding), retain statistics only.
    np.testing.assert_allclose(base.predict_proba(X), proba, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(base._mean, X[~forget].mean(axis=0))
    u = _unlearner(max_steps=1).fit(X, y)
    u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    assert u.preprocessing_refit_
    np.testing.assert_array_equal(u.estimator_._mean, X[~forget].mean(axis=0))
    recovered = n * u.estimator_._mean - X[~forget].sum(axis=0)
    assert np.abs(recovered - X[7]).max() > 1.0


# --- the absolute requirement and the stopping signal (issue 53, item 2) --------


@pytest.fixture(scope="module")
def digits_mlp():
    from sklearn.datasets import load_digits

    from sklearn_ext.unlearning import HAMUUnlearner, UnlearnableMLPClassifier

    X, y = load_digits(return_X_y=True)
    forget = np.random.default_rng(0).random(len(y)) < 0.1
    base = UnlearnableMLPClassifier((64,), device="cpu", random_state=0)
    return X, y, forget, HAMUUnlearner(base, random_state=0).fit(X, y)


def test_an_infeasible_absolute_requirement_stops_the_run(digits_mlp):
    import copy

    X, y, forget, fitted = digits_mlp
    proba = fitted.predict_proba(X)
    params = {"requirement": "absolute", "forget_improvement": 0.05, "step_size": 0.2}
    u = copy.deepcopy(fitted).set_params(**params, max_steps=20)
    u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    # The trained model fits the forget rows: ||g_f|| is small, and no step of
    # norm 0.2 raises their loss by 0.05 nats to first order.
    assert u.stopped_reason_ == "degradation unavoidable at step 0 (infeasible)"
    assert u.history_["forget_loss"] == []
    # Unchanged but for the refit standardiser's rounding.
    np.testing.assert_allclose(u.predict_proba(X), proba, rtol=1e-5, atol=1e-7)
    # Without the stop the run goes on, through the smallest sufficient step.
    v = copy.deepcopy(fitted).set_params(**params, max_steps=20)
    v.set_params(stop_on_infeasible=False).unlearn(
        X[forget], y[forget], X[~forget], y[~forget]
    )
    assert v.stopped_reason_ == "max_steps"
    assert len(v.history_["forget_loss"]) == 20
    assert v.history_["branch"][0] == "infeasible"
    assert v.history_["degradation_unavoidable"][0]
    assert v.score(X[forget], y[forget]) < 0.9
    # The same rise asked relatively is always within reach.
    w = copy.deepcopy(fitted).set_params(step_size=0.2, max_steps=5)
    w.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    assert "infeasible" not in w.history_["branch"]


def test_a_relative_requirement_above_one_is_refused(digits_mlp):
    import copy

    X, y, forget, fitted = digits_mlp
    u = copy.deepcopy(fitted).set_params(forget_improvement=1.5)
    with pytest.raises(ValueError, match="at most 1 with requirement='relative'"):
        u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    u.set_params(requirement="absolute", max_steps=1, stop_on_infeasible=False)
    u.unlearn(X[forget], y[forget], X[~forget], y[~forget])


# --- the guarantee on the MLP (issue 53, item 3) --------------------------------


def _share_meeting(u):
    rise = np.array(u.history_["batch_forget_rise"])
    return np.mean(rise >= np.array(u.history_["required_rise"]))


def test_verified_steps_meet_the_required_rise_on_the_mlp(digits_mlp):
    import copy

    X, y, forget, fitted = digits_mlp
    shares = {}
    for retries in (0, 3):
        u = copy.deepcopy(fitted).set_params(
            step_size=0.2,
            max_steps=100,
            batch_size=64,
            max_step_retries=retries,
            stop_on_infeasible=False,
        )
        u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
        assert len(u.history_["forget_loss"]) == 100
        shares[retries] = _share_meeting(u)
    # First order alone falls short on the non-convex network; verified
    # steps meet the requirement (the realised rise, not 95% of it).
    assert shares[3] >= 0.95
    assert shares[0] < 0.95
