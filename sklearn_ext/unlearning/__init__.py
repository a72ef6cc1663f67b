"""Machine unlearning: remove the influence of a forget set from a fitted model."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.unlearning._hamu_update import HAMUStep, hamu_step

__all__ = ["HAMUStep", "hamu_step"]
