"""numpydoc validation of the public API's docstrings."""

import inspect

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

import sklearn_ext.base  # noqa: E402
import sklearn_ext.datasets  # noqa: E402
import sklearn_ext.robust_optimization  # noqa: E402
import sklearn_ext.utils  # noqa: E402
from sklearn_ext.utils.discovery import all_estimators  # noqa: E402

# Checks left out, as scikit-learn leaves them out of its own docstring test:
# GL01/GL02 (where the text starts), RT02 (return-name style), and the sections
# that are optional here (extended summary, See Also).
IGNORED = {"GL01", "GL02", "RT02", "ES01", "SA01", "EX01", "GL08"}


def _public_objects():
    objects = []
    for module in (
        sklearn_ext.datasets,
        sklearn_ext.robust_optimization,
        sklearn_ext.utils,
    ):
        objects += [f"{module.__name__}.{name}" for name in module.__all__]
    objects.append("sklearn_ext.utils.discovery.all_estimators")
    objects.append("sklearn_ext.base.is_torch_estimator")
    objects.append("sklearn_ext.base.supports_gpu")
    for name, cls in all_estimators():
        objects.append(f"{cls.__module__}.{name}")
        for meth, _ in inspect.getmembers(cls, inspect.isfunction):
            if not meth.startswith("_") and meth in vars(cls):
                objects.append(f"{cls.__module__}.{name}.{meth}")
    return objects


@pytest.mark.parametrize("name", _public_objects())
def test_docstring(name):
    result = numpydoc_validate.validate(name)
    errors = [(code, msg) for code, msg in result["errors"] if code not in IGNORED]
    assert not errors, f"{name}: {errors}"
