"""MLP baselines of bench_nbcg: one network, three losses (BCE, focal, balanced).

The network is NBCG's trunk without coalitions: the same hidden layers (ReLU), a
linear layer to the labels, the same optimiser, minibatches, early stopping and
seeding, all through the package's torch backend, so that the comparison with
:class:`~sklearn_ext.multilabel.NBCGClassifier` changes only the objective and
the coalition structure.

Losses, per label ``l`` and sample:

- ``"bce"``: binary cross-entropy, averaged over labels;
- ``"focal"``: ``(1 - p_t) ** gamma * BCE`` with ``gamma = 2`` (Lin et al., 2017);
- ``"cb"``: class-balanced BCE (Cui et al., 2019): label ``l``'s term is weighted
  by ``(1 - beta) / (1 - beta ** n_l)``, ``n_l`` its number of positives and
  ``beta = 0.999``, with the weights normalised to mean 1.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin

from sklearn_ext.base import TorchMixin
from sklearn_ext.utils._sklearn_compat import StrOptions, check_is_fitted, validate_data
from sklearn_ext.utils._torch import adam, import_torch, init_parameters, to_tensor


class MLPLossClassifier(ClassifierMixin, MultiOutputMixin, TorchMixin, BaseEstimator):
    _parameter_constraints = {
        **TorchMixin._parameter_constraints,
        "loss": [StrOptions({"bce", "focal", "cb"})],
        "hidden_layer_sizes": [tuple, list],
        "alpha": [float],
    }

    def __init__(
        self,
        loss="bce",
        *,
        hidden_layer_sizes=(256,),
        alpha=1e-4,
        batch_size=256,
        learning_rate_init=1e-3,
        max_iter=100,
        tol=1e-4,
        n_iter_no_change=10,
        warm_start=False,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.loss = loss
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

    def _build_module(self, attr):
        torch = import_torch()
        layers, d = [], self.n_features_in_
        for h in self._hidden_layer_sizes():
            layers += [torch.nn.Linear(d, h), torch.nn.ReLU()]
            d = h
        layers.append(torch.nn.Linear(d, self.n_labels_))
        return torch.nn.Sequential(*layers)

    def fit(self, X, y):
        torch = import_torch()
        F = torch.nn.functional
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        Y = np.asarray(y.toarray() if sp.issparse(y) else y, dtype=np.float64)
        self.n_labels_ = Y.shape[1]
        ctx = self._torch_context()
        module = init_parameters(self._build_module("module_"), ctx.generator)
        p = np.clip(Y.mean(0), 1e-4, 1 - 1e-4)
        with torch.no_grad():
            module[-1].bias.copy_(torch.as_tensor(np.log(p / (1 - p))))
        module = module.to(ctx.device)
        dense = not sp.issparse(X)
        X_dev = to_tensor(X, device=ctx.device) if dense else X
        Y_dev = to_tensor(Y, device=ctx.device)
        beta = 0.999
        w = (1 - beta) / (1 - beta ** np.maximum(Y.sum(0), 1))
        w_dev = to_tensor(w / w.mean(), device=ctx.device)

        def batch_loss(idx):
            if dense:
                xb = X_dev[idx]
            else:
                xb = to_tensor(X[idx.cpu().numpy()].toarray(), device=ctx.device)
            yb = Y_dev[idx]
            logits = module(xb)
            bce = F.binary_cross_entropy_with_logits(logits, yb, reduction="none")
            if self.loss == "focal":
                p_t = torch.exp(-bce)
                bce = (1 - p_t) ** 2 * bce
            elif self.loss == "cb":
                bce = bce * w_dev
            return bce.mean()

        optimizer = adam(
            module.parameters(), lr=self.learning_rate_init, weight_decay=self.alpha
        )
        self._train({"module_": module}, batch_loss, X.shape[0], ctx, optimizer)
        return self

    def predict_proba(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        logits = self._predict_batches(lambda m, xb: m(xb), X)
        return 1.0 / (1.0 + np.exp(-logits))

    def predict(self, X):
        return (self.predict_proba(X) >= 0.5).astype(np.int64)
