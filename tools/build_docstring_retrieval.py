"""Freeze the numpy/scipy docstring retrieval set shipped as
``sklearn_ext/datasets/data/docstring_retrieval.json.gz``.

Run once, by hand, in an environment with numpy and scipy installed; the
loader never imports this file. Each public function or class of numpy and
the main scipy subpackages whose docstring has a one-line summary and a body
gives one pair: the query is the summary line, the document is the rest of the
docstring (its first 900 characters, whitespace collapsed). Docstrings whose
summary repeats another's, or whose body is shorter than 40 words, are left
out. numpy and scipy are BSD-3-Clause licensed.
"""

import gzip
import importlib
import inspect
import json
import re
import sys
from pathlib import Path

import numpy
import scipy

MODULES = [
    "numpy",
    "numpy.linalg",
    "numpy.fft",
    "numpy.random",
    "numpy.polynomial",
    "scipy.linalg",
    "scipy.sparse",
    "scipy.sparse.linalg",
    "scipy.sparse.csgraph",
    "scipy.optimize",
    "scipy.stats",
    "scipy.interpolate",
    "scipy.integrate",
    "scipy.spatial",
    "scipy.cluster.hierarchy",
    "scipy.cluster.vq",
    "scipy.fft",
    "scipy.io",
    "scipy.odr",
    "scipy.differentiate",
]
MAX_CHARS = 900
MIN_WORDS = 40


def _split(doc):
    lines = inspect.cleandoc(doc).splitlines()
    # numpy ufunc docstrings start with the call signature: skip it
    while lines and re.match(r"^[\w.]+\(.*\)\s*$", lines[0]):
        lines = lines[1:]
    while lines and not lines[0].strip():
        lines = lines[1:]
    if not lines:
        return None
    summary = []
    while lines and lines[0].strip():
        summary.append(lines.pop(0).strip())
    summary = " ".join(summary)
    body = " ".join(" ".join(lines).split())
    return summary, body[:MAX_CHARS]


def main(out):
    pairs, seen_obj, seen_summary = [], set(), set()
    for modname in MODULES:
        mod = importlib.import_module(modname)
        names = getattr(mod, "__all__", None) or [
            n for n in dir(mod) if not n.startswith("_")
        ]
        for name in sorted(names):
            obj = getattr(mod, name, None)
            if obj is None or inspect.ismodule(obj) or not callable(obj):
                continue
            if id(obj) in seen_obj:
                continue
            seen_obj.add(id(obj))
            doc = getattr(obj, "__doc__", None)
            if not isinstance(doc, str):
                continue
            split = _split(doc)
            if split is None:
                continue
            summary, body = split
            key = summary.lower()
            if len(summary.split()) < 3 or key in seen_summary:
                continue
            if len(body.split()) < MIN_WORDS:
                continue
            seen_summary.add(key)
            pairs.append(
                {"name": f"{modname}.{name}", "query": summary, "document": body}
            )
    payload = {
        "numpy_version": numpy.__version__,
        "scipy_version": scipy.__version__,
        "pairs": pairs,
    }
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(payload, f, ensure_ascii=False, separators=(",", ":"))
    print(len(pairs), "pairs written to", out)


if __name__ == "__main__":
    main(
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).parents[1]
        / "sklearn_ext"
        / "datasets"
        / "data"
        / "docstring_retrieval.json.gz"
    )
