"""The LCDB learning curves shipped for meta-learned model selection."""

import numpy as np

from sklearn_ext.datasets import load_lcdb_curves


def test_lcdb_curves_shapes_and_ranges():
    lcdb = load_lcdb_curves()
    assert lcdb.error.shape == lcdb.fit_time.shape == (248, 20, 35)
    assert len(lcdb.learners) == 20 and len(set(lcdb.openmlid)) == 248
    # geometric anchors: 16 times powers of sqrt(2), rounded
    np.testing.assert_array_equal(
        lcdb.anchors, np.round(16 * 2 ** (np.arange(35) / 2)).astype(int)
    )
    for name in ("error", "test_error", "final_error"):
        values = lcdb[name][~np.isnan(lcdb[name])]
        assert values.min() >= 0 and values.max() <= 1
    assert np.nanmin(lcdb.fit_time) >= 0
    assert "MIT" in lcdb.DESCR and "Mohr" in lcdb.DESCR


def test_lcdb_final_size_is_beyond_every_anchor_with_a_run():
    lcdb = load_lcdb_curves()
    observed = ~np.isnan(lcdb.error)
    largest = np.where(observed, lcdb.anchors, 0).max(axis=2)
    has = observed.any(axis=2)
    assert np.all(lcdb.final_size[has] >= largest[has])


def test_lcdb_errors_fall_with_more_data_on_average():
    """Learning curves: the error at 256 rows is below the error at 16 rows
    for most (data set, learner) pairs."""
    lcdb = load_lcdb_curves()
    small, large = lcdb.error[:, :, 0], lcdb.error[:, :, 8]
    both = ~np.isnan(small) & ~np.isnan(large)
    assert np.mean(large[both] < small[both]) > 0.8
    # and training takes longer on more data, in the median
    t_small, t_large = lcdb.fit_time[:, :, 0], lcdb.fit_time[:, :, 8]
    ok = ~np.isnan(t_small) & ~np.isnan(t_large)
    assert np.median(t_large[ok] / np.maximum(t_small[ok], 1e-4)) > 1
