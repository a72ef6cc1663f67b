"""Sheaf-ADMM image classifier: patch agents coordinated by unrolled ADMM."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets

from sklearn_ext.base import TorchMixin
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import (
    adam,
    import_torch,
    init_parameters,
    to_numpy,
    to_tensor,
    weighted_mean,
)
from sklearn_ext.utils._validation import check_sample_weight

__all__ = ["SheafADMMClassifier", "patch_grid"]


def _starts(length, size, stride):
    """Window starts covering ``range(length)``: by ``stride``, and the end."""
    starts = list(range(0, length - size + 1, stride))
    if starts[-1] != length - size:
        starts.append(length - size)
    return starts


def patch_grid(image_shape, patch_size, stride):
    """Cut an image into patches and link neighbouring patches.

    Parameters
    ----------
    image_shape : (int, int)
        Height and width; a height of 1 is a 1-D signal (patches ``1 x
        patch_size``).
    patch_size : int
        Side of a square patch (its width for a 1-D signal).
    stride : int
        Step between patch starts, at most ``patch_size``; the last patch of
        each row and column is aligned with the image's edge, so that every
        pixel is covered.

    Returns
    -------
    index : ndarray of shape (n_patches, patch_pixels)
        Flat (row-major) pixel indices of each patch.
    edges : ndarray of shape (n_edges, 2)
        Pairs of patches adjacent in the patch grid (right and down).
    """
    height, width = image_shape
    ph = 1 if height == 1 else patch_size
    if ph > height or patch_size > width:
        raise ValueError(
            f"patch_size={patch_size} is larger than the image of shape "
            f"{tuple(image_shape)}; pass patch_size <= "
            f"{width if height == 1 else min(height, width)}."
        )
    if stride > patch_size:
        raise ValueError(
            f"stride={stride} exceeds patch_size={patch_size}: pixels between "
            "patches would be left out."
        )
    rows, cols = _starts(height, ph, stride), _starts(width, patch_size, stride)
    r, c = np.meshgrid(np.arange(ph), np.arange(patch_size), indexing="ij")
    index = np.array(
        [((r0 + r) * width + (c0 + c)).ravel() for r0 in rows for c0 in cols]
    )
    grid = np.arange(len(rows) * len(cols)).reshape(len(rows), len(cols))
    right = np.column_stack([grid[:, :-1].ravel(), grid[:, 1:].ravel()])
    down = np.column_stack([grid[:-1, :].ravel(), grid[1:, :].ravel()])
    return index, np.vstack([right, down]).astype(np.int64)


class SheafADMMClassifier(ClassifierMixin, TorchMixin, BaseEstimator):
    """Image classifier whose patch agents coordinate through sheaf-ADMM.

    The image is cut into overlapping patches; each patch is an agent. A
    shared encoder turns an agent's patch into a convex quadratic objective
    over its state (a vector of ``stalk_dim`` numbers); agents joined by an
    edge (neighbouring patches) must agree on a learned projection of their
    states, of size ``edge_dim``: the restriction maps of a cellular sheaf.
    ``n_admm_iter`` unrolled ADMM iterations solve this constrained problem
    approximately and differentiably (the updates are written out in
    ``sklearn_ext/coordination/_sheaf_layer.py``). A shared linear readout
    turns each agent's final state into class scores, and every agent is
    trained to name the class; the decision is read from one agent, the
    central patch's (``readout="center"``), which sees a quarter of a digit
    and learns the rest only from what the coordination brings it: without
    the iterations (``n_admm_iter=1``) it is a single-patch classifier. At
    the constrained optimum what neighbours agree on is a curvature-weighted
    average of their preferences, so an agent that has learned to be unsure
    of a blank region (trained with ``patch_dropout``: regions of the image
    occluded) can be overruled by the others. Encoder, sheaf and readout
    train end to end through the iterations with the package's minibatch
    loop (Adam, cross-entropy).

    When to prefer a CNN: a CNN of equal size trained with the same
    occlusions is within two points on clean and noisy digits (a little
    ahead on clean digits, a little behind under noise), and more accurate
    under an occlusion that touches most patches (a band of rows) and under
    a shift (the agents are tied to their positions); see the benchmark
    table in the user guide. ``readout="agents"`` is a little more accurate
    than the central agent, but needs no coordination.

    Parameters
    ----------
    image_shape : (int, int), default=None
        Height and width of the images, whose pixels are the rows of X in
        row-major order. None takes a square image when the number of
        features is a perfect square at least ``patch_size**2`` (8 x 8 for
        scikit-learn's digits), else a 1-D signal of height 1; a square
        smaller than the patch is a ValueError (pass the shape).
    patch_size : int, default=4
        Side of the square patches.
    stride : int, default=2
        Step between patches, at most ``patch_size`` (every pixel is seen).
    stalk_dim : int, default=16
        Size of each agent's state.
    edge_dim : int, default=8
        Size of what two neighbouring agents must agree on.
    n_admm_iter : int, default=10
        Unrolled ADMM iterations.
    rho : float, default=1.0
        Initial ADMM step size (learned on a log scale).
    learn_sheaf : bool, default=True
        Learn the restriction maps; False keeps the constant sheaf (agree on
        the first ``edge_dim`` coordinates), an ablation.
    readout : {"center", "agents", "mean"}, default="center"
        Where the class is read. Every agent's state gives class scores
        (and each agent is trained on the label, except with ``"mean"``):
        ``"center"`` decides by the central agent's scores (the agent of
        index ``n_agents // 2``), a decision that needs the coordination;
        ``"agents"`` by the mean of all agents' log-probabilities (an
        ensemble of the agents, which independent agents already make
        well); ``"mean"`` averages the agents' scores and trains only
        that average (the readout of earlier versions).
    hidden : int, default=64
        Width of the patch encoder.
    alpha : float, default=1e-4
        Weight decay.
    patch_dropout : float, default=0.2
        During training, each patch's region of the image is blanked (set to
        0, the background) with this probability, in every agent that sees
        its pixels: occlusions that the agents learn to be unsure of and to
        make up for from the others. 0 trains on the images as given.
    batch_size : int or "auto", default="auto"
        Images per step; "auto" is ``min(200, n_samples)``.
    learning_rate_init : float, default=1e-2
        Adam's learning rate.
    max_iter : int, default=100
        Maximum number of epochs.
    tol : float, default=1e-4
        Training stops when the epoch loss has not improved by ``tol`` for
        ``n_iter_no_change`` epochs.
    n_iter_no_change : int, default=10
        Epochs without improvement before training stops.
    warm_start : bool, default=False
        Continue the previous fit's network and optimiser. The network's
        architecture must be the one fitted: a change of ``image_shape``,
        the classes, ``patch_size``, ``stride``, ``stalk_dim``,
        ``edge_dim``, ``hidden``, ``n_admm_iter``, ``rho``,
        ``learn_sheaf`` or ``readout`` since the last fit raises a
        ValueError naming it (rebuilding would silently throw the fitted
        weights away, and continuing would silently ignore the change); set
        ``warm_start=False`` to fit anew.
    random_state : int, RandomState instance or None, default=None
        Initialisation, patch dropout and minibatch order.
    device : str or torch.device, default="auto"
        "auto" uses CUDA when available and the problem is large enough.
    verbose : int, default=0
        ``>= 1`` shows a progress bar.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    image_shape_ : (int, int)
    patches_ : ndarray of shape (n_agents, patch_pixels)
        Flat pixel indices of each agent's patch.
    edges_ : ndarray of shape (n_edges, 2)
        Neighbouring agents.
    module_ : torch.nn.Module
        The fitted network (on the CPU).
    n_features_in_ : int
    loss_curve_ : list of float
    n_iter_ : int
    device_ : str

    References
    ----------
    .. [1] J. Seely, B. Cupiał and L. Jones, "Learning Multi-Agent
       Coordination via Sheaf-ADMM", ICML 2026, arXiv:2605.31005.
    .. [2] S. Boyd, N. Parikh, E. Chu, B. Peleato and J. Eckstein,
       "Distributed Optimization and Statistical Learning via the
       Alternating Direction Method of Multipliers", Foundations and Trends
       in Machine Learning 3(1), 2011.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_ext.coordination import SheafADMMClassifier
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = SheafADMMClassifier(max_iter=5, random_state=0).fit(X[:500], y[:500])
    >>> clf.image_shape_, clf.patches_.shape     # 3 x 3 patches of 4 x 4 pixels
    ((8, 8), (9, 16))
    >>> clf.predict(X[500:503]).shape
    (3,)
    """

    _parameter_constraints = {
        **TorchMixin._parameter_constraints,
        "image_shape": [tuple, list, None],
        "patch_size": [Interval(Integral, 1, None, closed="left")],
        "stride": [Interval(Integral, 1, None, closed="left")],
        "stalk_dim": [Interval(Integral, 1, None, closed="left")],
        "edge_dim": [Interval(Integral, 1, None, closed="left")],
        "n_admm_iter": [Interval(Integral, 1, None, closed="left")],
        "rho": [Interval(Real, 0, None, closed="neither")],
        "learn_sheaf": ["boolean"],
        "readout": [StrOptions({"agents", "center", "mean"})],
        "hidden": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "patch_dropout": [Interval(Real, 0, 1, closed="left")],
    }

    _paper = "Seely, Cupiał & Jones, ICML 2026 (arXiv:2605.31005)"
    _bench_name = "sheaf_admm"

    def __init__(
        self,
        *,
        image_shape=None,
        patch_size=4,
        stride=2,
        stalk_dim=16,
        edge_dim=8,
        n_admm_iter=10,
        rho=1.0,
        learn_sheaf=True,
        readout="center",
        hidden=64,
        alpha=1e-4,
        patch_dropout=0.2,
        batch_size="auto",
        learning_rate_init=1e-2,
        max_iter=100,
        tol=1e-4,
        n_iter_no_change=10,
        warm_start=False,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.image_shape = image_shape
        self.patch_size = patch_size
        self.stride = stride
        self.stalk_dim = stalk_dim
        self.edge_dim = edge_dim
        self.n_admm_iter = n_admm_iter
        self.rho = rho
        self.learn_sheaf = learn_sheaf
        self.readout = readout
        self.hidden = hidden
        self.alpha = alpha
        self.patch_dropout = patch_dropout
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _resolve_shape(self, n_features):
        if self.image_shape is None:
            side = math.isqrt(n_features)
            if side * side == n_features and side >= self.patch_size:
                return (side, side)
            if side * side == n_features and side > 1:
                # A square image smaller than the patch, or a 1-D signal?
                raise ValueError(
                    f"X has {n_features} features, a {side} x {side} image, "
                    f"smaller than patch_size={self.patch_size}: pass "
                    f"patch_size <= {side} (and stride <= patch_size), or "
                    f"image_shape=(1, {n_features}) to read each row as a 1-D "
                    "signal."
                )
            return (1, n_features)
        shape = tuple(self.image_shape)
        if len(shape) != 2 or not all(
            isinstance(s, Integral) and s >= 1 for s in shape
        ):
            raise ValueError(
                f"image_shape must be two positive integers; got {self.image_shape!r}."
            )
        if shape[0] * shape[1] != n_features:
            raise ValueError(
                f"image_shape={shape} has {shape[0] * shape[1]} pixels but X has "
                f"{n_features} features."
            )
        return shape

    def _build_module(self, attr="module_"):
        from sklearn_ext.coordination._sheaf_admm_nn import PatchAgentsNet

        return PatchAgentsNet(
            self.patches_.shape[1],
            len(self.patches_),
            self.edges_,
            self.stalk_dim,
            self.edge_dim,
            self.hidden,
            len(self.classes_),
            self.n_admm_iter,
            self.rho,
            self.learn_sheaf,
            self.readout,
        )

    def _patches(self, X, device, dtype):
        """Standardised pixels of each patch: (n, n_agents, patch_pixels)."""
        torch = import_torch()
        X = (X - self._pixel_mean) / self._pixel_std
        rows = to_tensor(X, dtype=dtype, device=device)
        index = torch.tensor(self.patches_, device=device)
        return rows[:, index]

    def _module_inputs(self, X, *, device, dtype):
        """``module_``'s input for raw rows ``X`` (the unlearning protocol)."""
        return self._patches(X, device, dtype)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the encoder, the sheaf and the readout end to end.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images as rows of pixels (row-major).
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples in the loss.

        Returns
        -------
        self : SheafADMMClassifier
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
                "SheafADMMClassifier needs samples of at least 2 classes in the "
                f"data, but the data contains only one class: {classes[0]!r}."
            )
        shape = self._resolve_shape(X.shape[1])
        index, edges = patch_grid(shape, self.patch_size, self.stride)
        module = self._fitted_module(
            {
                "image_shape": shape,
                "classes": tuple(classes.tolist()),
                "patch_size": self.patch_size,
                "stride": self.stride,
                "stalk_dim": self.stalk_dim,
                "edge_dim": self.edge_dim,
                "hidden": self.hidden,
                "n_admm_iter": self.n_admm_iter,
                "rho": self.rho,
                "learn_sheaf": self.learn_sheaf,
                "readout": self.readout,
            }
        )
        weights = check_sample_weight(sample_weight, X, normalize=False)
        if module is None:
            # One scale for all pixels: patches share their encoder.
            w = np.ones(X.shape[0]) if weights is None else weights
            mean = float(np.average(X.mean(axis=1), weights=w))
            std = float(np.sqrt(np.average(((X - mean) ** 2).mean(axis=1), weights=w)))
            self._pixel_mean, self._pixel_std = mean, std if std > 0 else 1.0
        self.classes_, self.image_shape_ = classes, shape
        self.patches_, self.edges_ = index, edges
        context = self._torch_context(
            size=X.shape[0] * len(index) * self.stalk_dim**2 * self.n_admm_iter,
            min_size=1e8,
        )
        if module is None:
            net = init_parameters(self._build_module(), context.generator)
        else:
            net = module
        net = net.to(device=context.device, dtype=context.dtype).train()
        patches = self._patches(X, context.device, context.dtype)
        target = torch.as_tensor(y_enc, dtype=torch.long, device=context.device)
        w = self._sample_weight(weights, X, context)
        ce = torch.nn.CrossEntropyLoss(reduction="none")

        blank = float((0.0 - self._pixel_mean) / self._pixel_std)
        # Pixels of each patch region, to occlude them in the image (every
        # agent that sees an occluded pixel sees it blank).
        region = torch.zeros(len(index), X.shape[1], device=context.device)
        region[torch.arange(len(index))[:, None], torch.as_tensor(index)] = 1.0
        index_t = torch.as_tensor(index, device=context.device)

        def batch_loss(idx):
            views = patches[idx]
            if self.patch_dropout > 0:
                drop = (
                    torch.rand((len(idx), len(index)), generator=context.generator)
                    < self.patch_dropout
                ).to(device=views.device, dtype=region.dtype)
                hidden = (drop @ region > 0)[:, index_t]
                views = torch.where(hidden, blank, views)
            if self.readout == "mean":
                loss = ce(net(views), target[idx])
            else:
                # Every agent answers: each must learn the class from what
                # the coordination brings it.
                # (The loss in float64: in float32 a row of weight 2 and a
                # repeated row round apart, beyond the sample-weight checks'
                # tolerance.)
                scores = net.agent_logits(views).double()
                n_agents = scores.shape[1]
                per_agent = ce(
                    scores.flatten(0, 1), target[idx].repeat_interleave(n_agents)
                )
                loss = per_agent.reshape(-1, n_agents).mean(dim=1)
            return weighted_mean(loss, None if w is None else w[idx].to(loss.dtype))

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
            Images as rows of pixels.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        torch = import_torch()
        X = (X - self._pixel_mean) / self._pixel_std
        index = self.patches_

        def forward(net, rows):
            idx = torch.tensor(index, device=rows.device)
            return torch.softmax(net(rows[:, idx]), dim=1)

        return self._predict_batches(forward, X, batch_size=512)

    def predict(self, X):
        """Class of each image.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images as rows of pixels.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted classes.
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def admm_states(self, X):
        """Primal, consensus and dual trajectories of the ADMM iterations.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images as rows of pixels.

        Returns
        -------
        states : dict of ndarray
            ``"primal"`` (n_admm_iter, n_samples, n_agents, stalk_dim),
            ``"consensus"`` (n_admm_iter, n_samples, n_edges, edge_dim),
            ``"dual"`` (n_admm_iter, n_samples, n_edges, 2, edge_dim), and
            per iteration and sample ``"primal_residual"`` (distance of the
            restricted states to the consensus), ``"disagreement"`` (of
            neighbours across each edge) and ``"dual_norm"``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        torch = import_torch()
        net = copy.deepcopy(self.module_).to(dtype=torch.float64).eval()
        rows = torch.as_tensor((X - self._pixel_mean) / self._pixel_std)
        with torch.no_grad():
            _, st = net(rows[:, torch.tensor(self.patches_)], return_states=True)
        return {
            "primal": to_numpy(torch.stack(st.primal)),
            "consensus": to_numpy(torch.stack(st.consensus)),
            "dual": to_numpy(torch.stack(st.dual)),
            "primal_residual": to_numpy(st.primal_residual),
            "disagreement": to_numpy(st.disagreement),
            "dual_norm": to_numpy(st.dual_norm),
        }

    @classmethod
    def _gpu_check_params(cls):
        # 15 agents per 32-pixel signal, 10 ADMM iterations, batches of 1024.
        return {"batch_size": 1024, "max_iter": 3, "tol": 0.0}, 20_000

    @classmethod
    def _get_test_params(cls):
        return {
            "patch_size": 1,
            "stride": 1,
            "stalk_dim": 4,
            "edge_dim": 2,
            "n_admm_iter": 3,
            "hidden": 8,
            # Random occlusions draw differently for a repeated row and a row
            # of weight 2; without them the weights act as repetitions (the
            # sample-weight checks).
            "patch_dropout": 0.0,
            "max_iter": 20,
            "device": "cpu",
        }
