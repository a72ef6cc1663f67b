"""A plain torch MLP classifier that follows the unlearning protocol.

``hidden_layer_sizes=()``
is multinomial logistic regression: a convex loss, on which HAMU's per-step
first-order guarantee can be checked.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets

from sklearn_ext.base import TorchMixin
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import (
    adam,
    import_torch,
    init_parameters,
    to_tensor,
    weighted_mean,
)
from sklearn_ext.utils._validation import check_sample_weight


class UnlearnableMLPClassifier(ClassifierMixin, TorchMixin, BaseEstimator):
    """Standardised features, a ReLU MLP and a softmax, trained by Adam.

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=(64,)
        Hidden widths; ``()`` is multinomial logistic regression.
    alpha : float, default=1e-4
        L2 penalty (Adam's weight decay).
    batch_size : int or "auto", default="auto"
        ``min(200, n_samples)`` when "auto".
    learning_rate_init : float, default=1e-2
        Adam's step size.
    max_iter : int, default=200
        Epochs at most.
    tol : float, default=1e-4
        Improvement of the epoch loss that counts.
    n_iter_no_change : int, default=10
        Epochs without such an improvement before stopping.
    warm_start : bool, default=False
        Continue the fitted network.
    device : str, default="auto"
        Torch device.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation and the batches.
    verbose : int, default=0
        Print the loss per epoch when positive.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    module_ : torch.nn.Module
        The network (logits over ``classes_`` from standardised rows).
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Training loss per epoch.

    See Also
    --------
    HAMUUnlearner : Unlearns a forget set from this classifier.

    References
    ----------
    .. [1] J. Chen, X. Niu, R. H. L. Sim, Z. Liu, N. F. Chen and B. K. H. Low,
       "How Hard Can It Be? Hardness-Aware Multi-Objective Unlearning",
       ICML 2026, arXiv:2606.02119 (the unlearning protocol it follows).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_ext.unlearning import UnlearnableMLPClassifier
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = UnlearnableMLPClassifier((32,), max_iter=30, random_state=0)
    >>> bool(clf.fit(X[:1000], y[:1000]).score(X[1000:], y[1000:]) > 0.85)
    True
    """

    _paper = "Chen, Niu, Sim, Liu, Chen & Low, ICML 2026 (arXiv:2606.02119)"
    _bench_name = "hamu"
    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "minibatch Adam on shuffled batches: a row repeated twice and a row "
            "of weight 2 are drawn into different batches"
        ),
    }

    _parameter_constraints: dict = {
        **TorchMixin._parameter_constraints,
        "hidden_layer_sizes": [tuple, list],
        "alpha": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        hidden_layer_sizes=(64,),
        *,
        alpha=1e-4,
        batch_size="auto",
        learning_rate_init=1e-2,
        max_iter=200,
        tol=1e-4,
        n_iter_no_change=10,
        warm_start=False,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _build_module(self, attr="module_"):
        from sklearn_ext.utils._torch_nn import mlp

        return mlp(self._sizes)

    def _module_inputs(self, X, *, device, dtype):
        """``module_``'s input for raw rows ``X`` (the unlearning protocol)."""
        return to_tensor((X - self._mean) / self._scale, dtype=dtype, device=device)

    def _refit_preprocessing(self, X):
        """Standardise on the rows ``X`` from now on, with the same function.

        The unlearning protocol's optional hook: ``HAMUUnlearner.unlearn``
        calls it with the retain set, so that the stored column means and
        scales no longer depend on the forget rows (from the means of all
        training rows and the retain rows, the sum of the forget rows could be
        read off: one forgotten row exactly). The first layer absorbs the
        change, ``W' = W diag(s'/s)`` and ``b' = b + W ((m' - m) / s)``, so the
        network computes the same logits up to rounding. The optimiser state
        kept for ``warm_start`` (Adam moments of gradients over all training
        rows) is dropped.
        """
        torch = import_torch()
        mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        first = self.module_[0]
        with torch.no_grad():
            w = first.weight
            ratio = to_tensor(scale / self._scale, dtype=w.dtype, device=w.device)
            shift = to_tensor(
                (mean - self._mean) / self._scale, dtype=w.dtype, device=w.device
            )
            first.bias.add_(w @ shift)
            w.mul_(ratio)
        self._mean, self._scale = mean, scale
        if getattr(self, "_training_state", None) is not None:
            self._training_state = None

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples in the loss.

        Returns
        -------
        self : UnlearnableMLPClassifier
            Fitted estimator.
        """
        torch = import_torch()
        warm = self.warm_start and hasattr(self, "module_")
        X, y = validate_data(
            self, X, y, dtype=np.float64, ensure_min_samples=2, reset=not warm
        )
        check_classification_targets(y)
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                "UnlearnableMLPClassifier needs samples of at least 2 classes; "
                f"the data contains only {classes[0]!r}."
            )
        hidden = self._hidden_layer_sizes()
        module = self._fitted_module(
            {"n_features": X.shape[1], "classes": tuple(classes), "hidden": hidden}
        )
        if module is None:
            self._mean = X.mean(axis=0)
            scale = X.std(axis=0)
            self._scale = np.where(scale > 0, scale, 1.0)
        self.classes_ = classes
        context = self._torch_context(size=X.size, min_size=1e7)
        self._sizes = (X.shape[1], *hidden, len(classes))
        net = (
            module
            if module is not None
            else init_parameters(self._build_module(), context.generator)
        )
        net = net.to(device=context.device, dtype=context.dtype).train()
        inputs = self._module_inputs(X, device=context.device, dtype=context.dtype)
        target = torch.as_tensor(y_enc, dtype=torch.long, device=context.device)
        weights = check_sample_weight(sample_weight, X, normalize=False)
        w = self._sample_weight(weights, X, context)
        ce = torch.nn.CrossEntropyLoss(reduction="none")

        def batch_loss(idx):
            return weighted_mean(
                ce(net(inputs[idx]), target[idx]), None if w is None else w[idx]
            )

        optimizer = adam(
            net.parameters(), lr=self.learning_rate_init, weight_decay=self.alpha
        )
        self._train({"module_": net}, batch_loss, X.shape[0], context, optimizer)
        return self

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        torch = import_torch()

        def forward(net, rows):
            return torch.softmax(net(rows), dim=1)

        return self._predict_batches(
            forward, (X - self._mean) / self._scale, batch_size=4096
        )

    @classmethod
    def _gpu_check_params(cls):
        params = {"hidden_layer_sizes": (512, 512), "batch_size": 1024}
        return {**params, "max_iter": 5, "tol": 0.0}, 50_000

    @classmethod
    def _get_test_params(cls):
        return {"hidden_layer_sizes": (8,), "max_iter": 20, "device": "cpu"}

    def predict(self, X):
        """Most probable class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted classes.
        """
        check_is_fitted(self)
        return self.classes_[self.predict_proba(X).argmax(axis=1)]
