"""numpydoc validation of the public API's docstrings.

The public API is found, not listed: every name in the ``__all__`` of every
public module of the package (the subpackages of ``sklearn_ext._submodules`` and
the public modules below them, such as ``sklearn_ext.utils.discovery``), and
the public methods of those classes and of every registered estimator,
inherited ones included when the package defines them.
"""

import importlib
import inspect
import pkgutil
import re

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

import sklearn_ext  # noqa: E402
from sklearn_ext.utils.discovery import all_estimators  # noqa: E402

# Checks left out, as scikit-learn leaves them out of its own docstring test:
# GL01/GL02 (where the text starts), RT02 (return-name style), and the sections
# that are optional here (extended summary, See Also).
IGNORED = {"GL01", "GL02", "RT02", "ES01", "SA01", "EX01", "GL08"}
_GENERATED = re.compile(r"^set_\w+_request$")


def _resolve(name):
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _public_modules():
    """Every public module: each subpackage, then its public modules, recursively."""
    modules = []
    for name in sklearn_ext._submodules:
        module = importlib.import_module(f"sklearn_ext.{name}")
        modules.append(module)
        if hasattr(module, "__path__"):
            for info in pkgutil.walk_packages(
                module.__path__, prefix=f"{module.__name__}."
            ):
                parts = info.name.split(".")
                if any(p.startswith("_") for p in parts[1:]) or "tests" in parts:
                    continue
                modules.append(importlib.import_module(info.name))
    return modules


def _public_functions_and_classes():
    """``module.name`` for every name of every public module's ``__all__``."""
    objects = []
    for module in _public_modules():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                objects.append(f"{module.__name__}.{name}")
    return objects


def _public_methods(classes):
    """``module.Class.method`` for the public methods of ``classes``.

    Inherited methods count when the package defines them (a private base class
    of a family, a mixin of ``sklearn_ext.base``), each validated once, under the
    first public class that has it. The ``set_*_request`` methods that
    scikit-learn's metadata routing generates are scikit-learn's.
    """
    objects, seen = [], set()
    for cls in classes:
        for meth in sorted(dir(cls)):
            if meth.startswith("_") or _GENERATED.match(meth):
                continue
            owner = next(k for k in cls.__mro__ if meth in vars(k))
            if not owner.__module__.startswith("sklearn_ext."):
                continue
            if not inspect.isfunction(getattr(owner, meth)):
                continue
            if (owner, meth) not in seen:
                seen.add((owner, meth))
                objects.append(f"{cls.__module__}.{cls.__name__}.{meth}")
    return objects


PUBLIC = _public_functions_and_classes()
_CLASSES = [obj for obj in map(_resolve, PUBLIC) if inspect.isclass(obj)]
METHODS = _public_methods(
    [*_CLASSES, *(c for _, c in all_estimators() if c not in _CLASSES)]
)


def test_discovery_finds_every_subpackage_and_function():
    """The automatic discovery reaches every family and the helper functions."""
    families = {name.split(".")[1] for name in PUBLIC}
    assert set(sklearn_ext._submodules) <= families
    for expected in (
        "sklearn_ext.multilabel.learn_label_graph",
        "sklearn_ext.multilabel.nash_bargaining_weights",
        "sklearn_ext.network.tensor_to_dyads",
        "sklearn_ext.network.dyads_to_tensor",
        "sklearn_ext.utils.discovery.all_estimators",
        "sklearn_ext.base.is_torch_estimator",
    ):
        assert expected in PUBLIC


@pytest.mark.parametrize("name", PUBLIC + METHODS)
def test_docstring(name):
    result = numpydoc_validate.validate(name)
    errors = [(code, msg) for code, msg in result["errors"] if code not in IGNORED]
    assert not errors, f"{name}: {errors}"
