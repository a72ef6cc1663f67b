"""Build ``sklearn_ext/datasets/data/lcdb_curves.npz`` from the lcdb 0.1.0 sdist.

The Learning Curve Database (LCDB 1.0; Mohr, Viering, Loog and van Rijn, 2022)
is carried on PyPI by the source distribution ``lcdb-0.1.0.tar.gz`` (MIT
licence), whose ``lcdb/database-accuracy.csv`` holds 1,953,371 rows: the
accuracy of 20 scikit-learn classifiers on 248 OpenML data sets at training
sizes (anchors) 16 * sqrt(2)^k and at the full training size, for 125 pairs
of outer and inner seeds, with the training time of each fit.

Usage, from the repository root::

    python tools/convert_lcdb.py                # fetches the sdist with pip
    python tools/convert_lcdb.py --source PATH  # the .tar.gz or unpacked folder

What it does:

1. Check the CSV's SHA-256 against the value below.
2. Average over the seed pairs, per (data set, learner, training size): the
   validation error (1 - mean ``score_valid``), the test error (1 - mean
   ``score_test``) and the median training time in seconds.
3. Keep the geometric anchors (16, 23, 32, 45, 64, 91, 128, ...) in a 3-D
   array (data sets x learners x anchors, NaN where LCDB has no run), and the
   largest training size of each (data set, learner) pair separately (the
   full training set, whose size differs per data set).
4. Store everything as float32 in one compressed npz (about 0.7 MB).
"""

import argparse
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

SHA256 = "5bf9f9388d37da47ce5e0edaf67dacfbd12a05ba50b76b5b3f4bf2dce02d85ac"
MEMBER = "lcdb-0.1.0/lcdb/database-accuracy.csv"
OUT = Path(__file__).resolve().parents[1] / "sklearn_ext/datasets/data/lcdb_curves.npz"


def _csv(source, scratch):
    if source is None:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "lcdb==0.1.0",
             "-d", str(scratch)],
            check=True,
        )  # fmt: skip
        source = scratch / "lcdb-0.1.0.tar.gz"
    source = Path(source)
    if source.is_dir():
        return source / "lcdb" / "database-accuracy.csv"
    with tarfile.open(source) as archive:
        archive.extract(MEMBER, scratch, filter="data")
    return scratch / MEMBER


def main():
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = _csv(args.source, Path(tmp))
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != SHA256:
            sys.exit(f"unexpected SHA-256 {digest} of {path}")
        cols = ["openmlid", "learner", "size_train", "traintime"]
        df = pd.read_csv(path, usecols=[*cols, "score_valid", "score_test"])
    g = (
        df.groupby(["openmlid", "learner", "size_train"])
        .agg(
            error=("score_valid", "mean"),
            test_error=("score_test", "mean"),
            time=("traintime", "median"),
        )
        .reset_index()
    )
    g["error"] = 1 - g["error"]
    g["test_error"] = 1 - g["test_error"]
    grid = {int(np.round(16 * 2 ** (k / 2))) for k in range(60)}
    datasets = np.sort(g.openmlid.unique())
    learners = sorted(g.learner.unique())
    anchors = np.array(sorted(set(g.size_train) & grid))
    di = {d: i for i, d in enumerate(datasets)}
    li = {v: i for i, v in enumerate(learners)}
    ai = {a: i for i, a in enumerate(anchors)}
    shape = (len(datasets), len(learners), len(anchors))
    curves = {k: np.full(shape, np.nan, np.float32) for k in ("error", "test", "time")}
    for r in g[g.size_train.isin(grid)].itertuples():
        at = (di[r.openmlid], li[r.learner], ai[r.size_train])
        curves["error"][at], curves["test"][at] = r.error, r.test_error
        curves["time"][at] = r.time
    final = {k: np.full(shape[:2], np.nan, np.float32) for k in ("n", "e", "t", "x")}
    last = g.sort_values("size_train").groupby(["openmlid", "learner"]).tail(1)
    for r in last.itertuples():
        at = (di[r.openmlid], li[r.learner])
        final["n"][at], final["e"][at] = r.size_train, r.error
        final["t"][at], final["x"][at] = r.time, r.test_error
    np.savez_compressed(
        OUT,
        openmlid=datasets.astype(np.int32),
        learners=np.array(learners),
        anchors=anchors.astype(np.int32),
        error=curves["error"],
        test_error=curves["test"],
        fit_time=curves["time"],
        final_size=final["n"],
        final_error=final["e"],
        final_test_error=final["x"],
        final_fit_time=final["t"],
    )
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.2f} MB), shape {shape}")


if __name__ == "__main__":
    main()
