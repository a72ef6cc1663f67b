"""Transfer of what one model learned to another model."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.transfer._graph import FunctionalModel
from sklearn_ext.transfer._models import task_vector
from sklearn_ext.transfer._theseus import TaskVectorTransporter

__all__ = ["FunctionalModel", "TaskVectorTransporter", "task_vector"]
