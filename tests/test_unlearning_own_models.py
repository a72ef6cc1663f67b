"""HAMU on the user's own torch models: the adapter, skorch, FrozenEstimator."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.frozen import FrozenEstimator

from sklearn_ext.unlearning import HAMUUnlearner
from sklearn_ext.utils import TorchModuleClassifier, torch_classifier_view


def _cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(6 * 4 * 4, 10),
    )


def _train(module, X, y, epochs=60, lr=0.02, seed=0):
    """Plain PyTorch training, as a user would do it (full batch Adam)."""
    torch.manual_seed(seed)
    for p in module.parameters():  # a fixed start, whatever ran before
        if p.dim() > 1:
            torch.nn.init.xavier_uniform_(p)
        else:
            torch.nn.init.zeros_(p)
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    for _ in range(epochs):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(module(Xt), yt).backward()
        opt.step()
    return module.eval()


@pytest.fixture(scope="module")
def digits_cnn():
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    net = _train(_cnn(), X.reshape(-1, 1, 8, 8), y)
    return X, y, net


def _state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_a_plain_torch_cnn_unlearns_a_class_and_the_callers_net_is_untouched(
    digits_cnn,
):
    X, y, net = digits_cnn
    before = _state(net)
    adapter = TorchModuleClassifier(net, classes=np.arange(10), input_shape=(1, 8, 8))
    fitted = adapter.fit(X, y)
    assert fitted.score(X, y) > 0.95  # the adapter predicts with the net as is
    forget = y == 3
    u = HAMUUnlearner(
        FrozenEstimator(fitted),
        step_size=0.2,
        max_steps=200,
        target_forget_accuracy=0.0,
        random_state=0,
    ).fit(X, y)
    u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    assert u.stopped_reason_ == "target forget accuracy reached"
    assert u.score(X[forget], y[forget]) == 0.0
    assert u.score(X[~forget], y[~forget]) > 0.9
    # The user's module and the frozen adapter's copy are not edited.
    for key, value in _state(net).items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0)
    assert fitted.score(X[forget], y[forget]) > 0.95
    # The unlearned model pickles and predicts the same after loading.
    loaded = pickle.loads(pickle.dumps(u))
    np.testing.assert_array_equal(loaded.predict(X), u.predict(X))


def test_images_as_four_axes_and_integer_token_ids_reach_the_module(digits_cnn):
    X, y, net = digits_cnn
    images = X.reshape(-1, 1, 8, 8)
    flat = TorchModuleClassifier(net, classes=np.arange(10), input_shape=(1, 8, 8))
    four = TorchModuleClassifier(net, classes=np.arange(10))
    np.testing.assert_allclose(
        four.fit(images, y).predict_proba(images),
        flat.fit(X, y).predict_proba(X),
        rtol=1e-6,
    )
    # Token ids: an embedding bag over 5 ids per row, classes by a planted rule.
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, size=(300, 5))
    labels = (ids.min(axis=1) < 10).astype(int)
    bag = torch.nn.Sequential(torch.nn.EmbeddingBag(50, 8), torch.nn.Linear(8, 2))
    _train(bag, ids, labels, epochs=150, lr=0.05)
    clf = TorchModuleClassifier(bag, classes=[0, 1]).fit(ids, labels)
    assert clf.score(ids, labels) > 0.9
    u = HAMUUnlearner(FrozenEstimator(clf), max_steps=5, random_state=0).fit(
        ids, labels
    )
    u.unlearn(ids[:20], labels[:20], ids[20:], labels[20:])
    assert len(u.history_["forget_loss"]) == 5
    assert u.history_["forget_loss"][-1] > u.history_["forget_loss"][0]


def test_the_loss_follows_what_the_module_returns(digits_cnn):
    """Logits with cross-entropy and log-probabilities with NLL are the same
    objective: the same unlearning run, step for step."""
    X, y, net = digits_cnn
    log_net = torch.nn.Sequential(net, torch.nn.LogSoftmax(dim=1))
    runs = []
    for module, output in ((net, "logits"), (log_net, "log_proba")):
        clf = TorchModuleClassifier(
            module, classes=np.arange(10), output=output, input_shape=(1, 8, 8)
        ).fit(X, y)
        u = HAMUUnlearner(FrozenEstimator(clf), max_steps=4, random_state=0)
        u.fit(X, y).unlearn(X[y == 1], y[y == 1], X[y != 1], y[y != 1])
        runs.append(u)
    np.testing.assert_allclose(
        runs[0].history_["forget_loss"], runs[1].history_["forget_loss"], rtol=1e-4
    )
    np.testing.assert_allclose(
        runs[0].predict_proba(X), runs[1].predict_proba(X), rtol=1e-4, atol=1e-6
    )
    # A loss given explicitly is the one the steps use: a loss that ignores
    # the forget rows' labels has no forget gradient to follow.
    ignore = TorchModuleClassifier(
        net,
        classes=np.arange(10),
        input_shape=(1, 8, 8),
        loss=lambda out, t: (out * 0.0).sum(),
    ).fit(X, y)
    with pytest.raises(ValueError, match="forget gradient is zero"):
        HAMUUnlearner(FrozenEstimator(ignore), max_steps=1).fit(X, y).unlearn(
            X[:5], y[:5], X[5:], y[5:]
        )


def test_skorch_net_trains_in_fit_and_unlearns_with_its_own_loss():
    skorch = pytest.importorskip("skorch")
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    y = y.astype(np.int64)
    module = torch.nn.Sequential(
        torch.nn.Linear(64, 32),
        torch.nn.ReLU(),
        torch.nn.Linear(32, 10),
        torch.nn.Softmax(dim=-1),
    )
    net = skorch.NeuralNetClassifier(
        module,
        max_epochs=15,
        lr=0.1,
        batch_size=128,
        train_split=None,
        verbose=0,
        optimizer=torch.optim.Adam,
        optimizer__lr=0.01,
    )
    torch.manual_seed(0)
    forget = y == 8
    u = HAMUUnlearner(
        net, step_size=0.2, max_steps=200, target_forget_accuracy=0.0, random_state=0
    ).fit(X, y)
    trained = u.estimator_
    assert trained.score(X, y) > 0.9
    # The steps' loss is skorch's (NLLLoss on the log of its softmax output).
    view = torch_classifier_view(trained)
    with torch.no_grad():
        out = view.module(view.inputs(X[forget], device="cpu", dtype=torch.float32))
        expected = float(trained.get_loss(out, torch.as_tensor(y[forget])))
    frozen = HAMUUnlearner(FrozenEstimator(trained), max_steps=1, random_state=0)
    frozen.fit(X, y).unlearn(X[forget], y[forget], X[~forget], y[~forget])
    assert frozen.history_["forget_loss"][0] > expected  # one step up from it
    assert trained.score(X[forget], y[forget]) > 0.8  # the frozen net untouched
    u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    assert u.score(X[forget], y[forget]) == 0.0
    assert u.score(X[~forget], y[~forget]) > 0.85


def test_bad_models_and_labels_are_named(digits_cnn):
    X, y, net = digits_cnn
    with pytest.raises(TypeError, match="module must be a torch.nn.Module"):
        TorchModuleClassifier("net", classes=np.arange(10)).fit(X, y)
    with pytest.raises(ValueError, match=r"expected \(2, 3\), one score per class"):
        TorchModuleClassifier(net, classes=[0, 1, 2], input_shape=(1, 8, 8)).fit(
            X[y < 3], y[y < 3]
        )
    with pytest.raises(ValueError, match="needs rows of 64 values"):
        TorchModuleClassifier(net, classes=np.arange(10), input_shape=(1, 8, 8)).fit(
            X[:, :32], y
        )
    with pytest.raises(ValueError, match="no output for: \\[10\\]"):
        TorchModuleClassifier(net, classes=np.arange(10), input_shape=(1, 8, 8)).fit(
            X, np.where(y == 0, 10, y)
        )
    clf = TorchModuleClassifier(net, classes=np.arange(10), input_shape=(1, 8, 8))
    clf.fit(X, y)
    # A frozen model cannot be fitted to labels it has no output for.
    with pytest.raises(ValueError, match="label 12 is not among the model's classes"):
        HAMUUnlearner(FrozenEstimator(clf)).fit(X, np.where(y == 0, 12, y))
    u = HAMUUnlearner(FrozenEstimator(clf), max_steps=1).fit(X, y)
    with pytest.raises(ValueError, match="y_forget: label 'cat' is not among"):
        u.unlearn(X[:3], np.array(["cat"] * 3), X[3:], y[3:])
    with pytest.raises(ValueError, match="y_retain: label -1 is not among"):
        u.unlearn(X[:3], y[:3], X[3:], np.where(y[3:] == 5, -1, y[3:]))


def test_batch_norm_statistics_are_kept_and_dropout_is_off_while_unlearning():
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(64, 32),
        torch.nn.BatchNorm1d(32),
        torch.nn.ReLU(),
        torch.nn.Dropout(0.5),
        torch.nn.Linear(32, 10),
    )
    net.train()
    _train(net, X, y, epochs=40)
    clf = TorchModuleClassifier(net, classes=np.arange(10)).fit(X, y)
    stats = {
        k: v.clone() for k, v in clf.module_.state_dict().items() if "running" in k
    }
    forget = y == 5
    runs = []
    for _ in range(2):
        u = HAMUUnlearner(FrozenEstimator(clf), max_steps=5, random_state=0).fit(X, y)
        u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
        state = u.estimator_.module_.state_dict()
        for k, v in stats.items():  # the forget rows never enter the statistics
            torch.testing.assert_close(state[k], v, rtol=0, atol=0)
        runs.append(u.history_["forget_loss"])
    np.testing.assert_array_equal(runs[0], runs[1])  # no dropout noise
