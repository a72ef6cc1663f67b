"""Behavioural fingerprints of the methods the benchmarks measure.

``FINGERPRINTS[stem]()`` fits the method(s) that ``bench_<stem>.py`` measures,
at the configuration the benchmark runs (its defaults or its settings), on a
small problem with fixed seeds, and returns the outputs as an array of floats
(predictions, scores, fitted quantities). The claims ledger stores it with
every results file the benchmark writes; after a later change of the code the
results file measured, ``python -m sklearn_ext claims --revalidate`` recomputes
it, and only an unchanged fingerprint keeps the results file valid without a
rerun (``sklearn_ext/_claims.py``). It runs in a fresh process with one
thread, importing ``sklearn_ext`` from the tree under test (the working tree,
or an earlier commit's), so every function imports what it needs inside its
body and uses only the public API that the benchmark itself uses.

Each family keeps its functions in a module of this package with a
``FINGERPRINTS`` dict; this module gathers them. Each function takes a few
seconds: small data, few iterations, but the code paths of the benchmark's
main configuration (the estimator's training loop, its solver, its scoring).
"""

import importlib
import pkgutil

FINGERPRINTS = {}
for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        _found = importlib.import_module(f"{__name__}.{_module.name}").FINGERPRINTS
        _clash = set(_found) & set(FINGERPRINTS)
        if _clash:
            raise KeyError(f"fingerprints defined twice: {sorted(_clash)}")
        FINGERPRINTS.update(_found)
