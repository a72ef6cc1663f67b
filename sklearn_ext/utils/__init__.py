"""Utilities: estimator discovery and the multi-view column parser."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.utils._views import check_views, observed_views

__all__ = ["check_views", "observed_views"]
