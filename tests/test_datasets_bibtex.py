"""Tests of the bundled bibtex multi-label text data set (load_bibtex)."""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from sklearn_ext.datasets import load_bibtex

N_TRAIN, N_TEST, N_FEATURES, N_LABELS = 4880, 2515, 1836, 159
CONVERTER = Path(__file__).resolve().parents[1] / "tools" / "convert_bibtex.py"
# The unpacked scikit-multilearn 0.0.1 sdist, where a checkout has one.
SOURCE = Path(os.environ.get("BIBTEX_SOURCE", "/tmp/skmultilearn-0.0.1"))
CONTENT_SHA256 = "ca886a05848f60db23d5a1f329b44cde2ea076261d042fc09ded492038be7a8d"


@pytest.fixture(scope="module")
def subsets():
    return {s: load_bibtex(subset=s) for s in ("train", "test", "all")}


def _converter():
    if not CONVERTER.exists():
        pytest.skip(f"{CONVERTER} not present")
    spec = importlib.util.spec_from_file_location("convert_bibtex", CONVERTER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "subset, n_samples", [("train", N_TRAIN), ("test", N_TEST), ("all", 7395)]
)
def test_shapes_and_types(subsets, subset, n_samples):
    bunch = subsets[subset]
    assert sp.issparse(bunch.data) and bunch.data.format == "csr"
    assert bunch.data.shape == (n_samples, N_FEATURES)
    assert bunch.data.dtype == np.float64
    assert isinstance(bunch.target, np.ndarray)
    assert bunch.target.shape == (n_samples, N_LABELS)
    assert bunch.target.dtype == np.int64
    assert set(np.unique(bunch.target)) == {0, 1}


def test_default_subset_is_train(subsets):
    default = load_bibtex()
    assert (default.data != subsets["train"].data).nnz == 0
    np.testing.assert_array_equal(default.target, subsets["train"].target)


def test_word_indicators_are_binary_and_no_entry_is_empty(subsets):
    for subset, nnz in (("train", 334250), ("test", 173496)):
        X = subsets[subset].data
        assert X.nnz == nnz
        np.testing.assert_array_equal(X.data, 1.0)
        assert X.has_sorted_indices
        assert (X.getnnz(axis=1) > 0).all()
    # Every word occurs in at least 22 entries.
    assert subsets["all"].data.getnnz(axis=0).min() == 22


def test_split_partitions_all_without_overlap(subsets):
    train, test, full = subsets["train"], subsets["test"], subsets["all"]
    assert train.data.shape[0] + test.data.shape[0] == full.data.shape[0]
    assert (sp.vstack([train.data, test.data]) != full.data).nnz == 0
    np.testing.assert_array_equal(np.vstack([train.target, test.target]), full.target)
    # The two parts hold different entries: only the 9 test entries that the
    # source itself duplicates (same words and tags) match a training entry.
    seen = {
        (tuple(x.indices), tuple(y))
        for x, y in zip(train.data, train.target.astype(np.int8))
    }
    repeated = sum(
        (tuple(x.indices), tuple(y)) in seen
        for x, y in zip(test.data, test.target.astype(np.int8))
    )
    assert repeated == 9


def test_every_label_has_training_positives(subsets):
    counts = subsets["train"].target.sum(axis=0)
    assert counts.min() == 28 and counts.max() == 691
    test_counts = subsets["test"].target.sum(axis=0)
    assert test_counts.min() == 11 and test_counts.max() == 351
    per_entry = subsets["all"].target.sum(axis=1)
    assert per_entry.min() == 1 and per_entry.max() == 28
    assert round(per_entry.mean(), 3) == 2.402


def test_label_frequencies_are_long_tailed(subsets):
    counts = np.sort(subsets["train"].target.sum(axis=0))[::-1]
    assert counts[0] / counts[-1] > 20
    assert counts[0] > 2 * counts[1]  # one dominant head tag
    assert np.median(counts) == 54 < counts.mean()
    # The 16 most frequent tags (10%) hold 29% of the positives ...
    head = counts[:16].sum() / counts.sum()
    assert 0.28 < head < 0.30
    # ... and the Gini coefficient of the frequencies is about 0.34.
    ascending = counts[::-1]
    n = len(ascending)
    gini = (2 * np.arange(1, n + 1) - n - 1) @ ascending / (n * ascending.sum())
    assert 0.33 < gini < 0.35


def test_names(subsets):
    bunch = subsets["train"]
    assert len(bunch.target_names) == bunch.target.shape[1] == N_LABELS
    assert len(set(bunch.target_names)) == N_LABELS
    assert bunch.target_names[0] == "tag_000" and bunch.target_names[-1] == "tag_158"
    assert len(bunch.feature_names) == bunch.data.shape[1] == N_FEATURES
    assert bunch.feature_names[-1] == "word_1835"


@pytest.mark.parametrize("subset", ["train", "test", "all"])
def test_return_X_y(subsets, subset):
    X, Y = load_bibtex(subset=subset, return_X_y=True)
    assert (X != subsets[subset].data).nnz == 0
    np.testing.assert_array_equal(Y, subsets[subset].target)


@pytest.mark.parametrize("subset", ["validation", "Train", "", None, 0, ["train"]])
def test_bad_subset_raises(subset):
    with pytest.raises(ValueError, match="subset must be one of 'train', 'test'"):
        load_bibtex(subset=subset)


def test_words_predict_tags(subsets):
    """Features and labels are aligned: words predict the frequent tags."""
    train, test = subsets["train"], subsets["test"]
    top = np.argsort(train.target.sum(axis=0))[::-1][:5]
    for j in top:
        clf = LogisticRegression(C=1.0, max_iter=1000)
        clf.fit(train.data, train.target[:, j])
        auc = roc_auc_score(test.target[:, j], clf.decision_function(test.data))
        assert auc > 0.8, (j, auc)


def test_descr_cites_source_and_licence(subsets):
    descr = subsets["train"].DESCR
    assert "Katakis" in descr and "Multilabel Text" in descr
    assert "scikit-multilearn-0.0.1.tar.gz" in descr and "BSD" in descr
    assert ":Licence:" in descr and "none is stated" in descr
    assert "tools/convert_bibtex.py" in descr and CONTENT_SHA256 in descr


def test_shipped_arrays_match_documented_digest():
    converter = _converter()
    from importlib import resources

    path = resources.files("sklearn_ext.datasets") / "data" / "bibtex.npz"
    with path.open("rb") as f, np.load(f) as archive:
        arrays = {key: archive[key] for key in archive.files}
    assert converter.content_digest(arrays) == CONTENT_SHA256


def test_against_source_sdist(subsets):
    if not SOURCE.exists():
        pytest.skip(f"{SOURCE} not present")
    parts = _converter().read_source(SOURCE)
    for subset, (X, Y) in parts.items():
        np.testing.assert_array_equal(subsets[subset].data.toarray(), X)
        np.testing.assert_array_equal(subsets[subset].target, Y)
