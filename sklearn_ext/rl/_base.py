"""What the reinforcement-learning family shares: tags, the optional gymnasium.

Objects of this family are scikit-learn estimators (parameters, ``clone``,
pickling, parameter validation) whose ``fit`` takes something other than a
feature table: episode returns bounded by a known range, a gymnasium
environment (or a list of them, one per task), or a transition table. They set
scikit-learn's ``_skip_test`` tag, and ``tests/test_rl_contract.py`` runs the
parts of the estimator contract that apply to them.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

__all__ = ["NOT_A_DATA_ESTIMATOR", "require_gymnasium", "rl_tags"]

NOT_A_DATA_ESTIMATOR = (
    "fit takes episode returns in a known range, a gymnasium environment or a "
    "transition table, not arbitrary (X, y): scikit-learn's data checks do not "
    "apply; tests/test_rl_contract.py checks clone, pickling, parameter "
    "validation and bad input"
)


def rl_tags(tags, *, allow_nan=False):
    """Tags of a family member: outside scikit-learn's data checks."""
    tags._skip_test = True
    tags.input_tags.allow_nan = allow_nan
    return tags


def require_gymnasium(what):
    """Import gymnasium, or say which extra to install."""
    try:
        import gymnasium
    except ImportError as exc:
        raise ImportError(
            f"{what} needs gymnasium, which is in sklearn_ext's optional extra "
            "'rl': pip install 'sklearn-ext[rl]'."
        ) from exc
    return gymnasium
