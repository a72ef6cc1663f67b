"""scikit-learn's private MLP optimiser, for the IPBT driver: part of the compat layer.

:mod:`sklearn_ext.utils._sklearn_compat` holds the rest of what the package
needs from scikit-learn's private API. This part lives apart because only
:mod:`sklearn_ext.model_selection._incremental` uses it.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.utils._sklearn_compat import SKLEARN_VERSION

__all__ = ["sync_mlp_optimizer"]

# The attributes of scikit-learn's MLP optimisers (sklearn.neural_network.
# _stochastic_optimizers) that sync_mlp_optimizer sets, by optimiser class.
_MLP_OPTIMIZER_FIELDS = {
    "SGDOptimizer": (
        "learning_rate",
        "learning_rate_init",
        "lr_schedule",
        "momentum",
        "nesterov",
        "power_t",
    ),
    "AdamOptimizer": ("learning_rate_init", "beta_1", "beta_2", "epsilon"),
}


def sync_mlp_optimizer(mlp):
    """Hand a fitted scikit-learn MLP's running optimiser its current hyperparameters.

    ``MLPClassifier``/``MLPRegressor`` build their optimiser (the private
    ``_optimizer``) at the first ``partial_fit`` from ``learning_rate_init``,
    ``momentum``, ... and keep it, so a later ``set_params`` would not reach
    it. This sets them on the optimiser and keeps its state (velocities, Adam
    moments, step count): a new ``learning_rate_init`` rescales an adaptive
    SGD rate and restarts an inverse-scaling one at the current step.

    Returns
    -------
    synced : bool
        False when ``mlp`` has no optimiser yet (not trained, or trained by
        ``fit`` with ``solver="lbfgs"``).

    Raises
    ------
    RuntimeError
        If the optimiser lacks an attribute this function sets: the installed
        scikit-learn changed its MLP internals.
    """
    opt = vars(mlp).get("_optimizer")
    if opt is None:
        return False
    fields = _MLP_OPTIMIZER_FIELDS.get(type(opt).__name__)
    if fields is None:
        return False
    missing = [f for f in fields if not hasattr(opt, f)]
    if missing:
        raise RuntimeError(
            f"scikit-learn {SKLEARN_VERSION}'s {type(opt).__name__} has no "
            f"{missing}; sklearn_ext.utils._sklearn_compat_mlp.sync_mlp_optimizer "
            "needs updating for this version."
        )
    lr = float(mlp.learning_rate_init)
    if type(opt).__name__ == "SGDOptimizer":
        schedule = mlp.learning_rate
        if schedule == "adaptive" and opt.lr_schedule == "adaptive":
            opt.learning_rate *= lr / float(opt.learning_rate_init)
        elif schedule == "invscaling":
            opt.learning_rate = lr / (mlp.t_ + 1) ** mlp.power_t
        else:
            opt.learning_rate = lr
        opt.lr_schedule = schedule
        opt.learning_rate_init = lr
        opt.momentum = mlp.momentum
        opt.nesterov = mlp.nesterovs_momentum
        opt.power_t = mlp.power_t
    else:
        opt.learning_rate_init = lr
        opt.beta_1, opt.beta_2 = mlp.beta_1, mlp.beta_2
        opt.epsilon = mlp.epsilon
    return True
