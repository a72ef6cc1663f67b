"""The multi-view column parser and the observed-view mask."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ext.utils import check_views, observed_views


def test_none_is_one_view():
    (view,) = check_views(None, 4)
    np.testing.assert_array_equal(view, np.arange(4))


def test_sizes_give_consecutive_blocks():
    views = check_views([2, 3, 1], 6)
    assert [v.tolist() for v in views] == [[0, 1], [2, 3, 4], [5]]


@pytest.mark.parametrize(
    "views, n_features, error, match",
    [
        ([2, 2], 5, ValueError, r"add up to 4 columns, but X has 5 features"),
        ([2, 0, 3], 5, ValueError, r"view 1 has size 0"),
        ([], 5, ValueError, r"at least one view"),
        ([[0, 1], [1, 2]], 3, ValueError, r"column 1 is in view 0 and in view 1"),
        ([[0, 1], [5]], 3, ValueError, r"views\[1\]=5 is out of range for X with 3"),
        ([[0], [-4, 1, 2]], 3, ValueError, r"views\[1\]=-4 is out of range"),
        ([[0], [-1, 1, 2]], 3, ValueError, r"view 1 lists column 2 more than once"),
        ([[0, 1]], 3, ValueError, r"column\(s\) 2 belong to no view"),
        ([[0, 0, 1], [2]], 3, ValueError, r"view 0 lists column 0 more than once"),
        ([[0, 1], []], 2, ValueError, r"view 1 must be a non-empty"),
        ([2, [2]], 3, TypeError, r"all sizes \(ints\) or all column index lists"),
        ("abc", 3, TypeError, r"views must be None"),
        ([[0.5, 1], [2]], 3, TypeError, r"views\[0\] must hold column positions"),
        ([[True, 1], [2]], 3, TypeError, r"got True of type bool"),
        ([["a", 1], [2]], 3, ValueError, r"names the column 'a', but X has no column"),
    ],
)
def test_bad_views_are_named(views, n_features, error, match):
    with pytest.raises(error, match=match):
        check_views(views, n_features)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6), st.randoms())
def test_index_lists_and_sizes_agree_on_random_layouts(sizes, rnd):
    """Any partition of the columns, shuffled, parses back to itself."""
    n = sum(sizes)
    perm = list(range(n))
    rnd.shuffle(perm)
    edges = np.cumsum([0, *sizes])
    index_views = [perm[a:b] for a, b in zip(edges[:-1], edges[1:])]
    parsed = check_views(index_views, n)
    assert [v.tolist() for v in parsed] == index_views
    blocks = check_views(sizes, n)
    assert np.array_equal(np.sort(np.concatenate(blocks)), np.arange(n))
    assert [len(b) for b in blocks] == sizes


def test_negative_positions_count_from_the_end():
    views = check_views([[-1, 0], [1]], 3)
    assert [v.tolist() for v in views] == [[2, 0], [1]]


NAMES = ["age", "height", "income", "weight"]


def test_column_names_and_positions_follow_one_rule():
    views = check_views([["income", "age"], [1, "weight"]], 4, feature_names=NAMES)
    assert [v.tolist() for v in views] == [[2, 0], [1, 3]]
    # The sizes form does not need names, and ignores them.
    assert [v.tolist() for v in check_views([3, 1], 4, NAMES)] == [[0, 1, 2], [3]]


@pytest.mark.parametrize(
    "views, match",
    [
        (
            [["age", "salary"], ["height", "income", "weight"]],
            r"views\[0\] names "
            r"the column 'salary', which X does not have \(its columns: 'age'",
        ),
        ([["age", "height"], ["height", 2, 3]], r"column 'height' is in view 0 and"),
        ([["age", 0], [1, 2, 3]], r"view 0 lists column 'age' more than once"),
        ([["age"], ["height"]], r"column\(s\) 'income', 'weight' belong to no view"),
    ],
)
def test_bad_column_names_are_named(views, match):
    with pytest.raises(ValueError, match=match):
        check_views(views, 4, feature_names=NAMES)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=5), st.randoms())
def test_names_positions_and_negative_positions_agree(sizes, rnd):
    """A random partition written with names, positions or both parses the same."""
    n = sum(sizes)
    names = [f"col{j}" for j in range(n)]
    perm = list(range(n))
    rnd.shuffle(perm)
    edges = np.cumsum([0, *sizes])
    index_views = [perm[a:b] for a, b in zip(edges[:-1], edges[1:])]

    def spell(j):
        return rnd.choice([j, j - n, names[j]])

    mixed = [[spell(j) for j in view] for view in index_views]
    parsed = check_views(mixed, n, feature_names=np.array(names, dtype=object))
    assert [v.tolist() for v in parsed] == index_views


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.integers(1, 12),
    st.randoms(),
)
def test_observed_mask_matches_planted_missing_blocks(sizes, n_samples, rnd):
    views = check_views(sizes, sum(sizes))
    mask = np.array(
        [[rnd.random() < 0.6 for _ in sizes] for _ in range(n_samples)], dtype=bool
    )
    mask[:, 0] |= ~mask.any(axis=1)  # every sample keeps a view
    X = np.ones((n_samples, sum(sizes)))
    for v, cols in enumerate(views):
        X[np.ix_(~mask[:, v], cols)] = np.nan
    np.testing.assert_array_equal(observed_views(X, views), mask)


def test_partly_missing_view_names_sample_and_view():
    views = check_views([2, 2], 4)
    X = np.ones((3, 4))
    X[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"sample\(s\) 1 have view 1 only partly"):
        observed_views(X, views)


def test_sample_without_views_is_named():
    views = check_views([1, 1], 2)
    X = np.ones((4, 2))
    X[2] = np.nan
    with pytest.raises(ValueError, match=r"sample\(s\) 2 have no observed view"):
        observed_views(X, views)
    assert not observed_views(X, views, require_one=False)[2].any()


def test_multiview_mixin_parses_views_once_and_allows_nan():
    from sklearn.base import BaseEstimator
    from sklearn.utils import get_tags

    from sklearn_ext.base import MultiViewMixin

    class Probe(MultiViewMixin, BaseEstimator):
        def __init__(self, views=None):
            self.views = views

    est = Probe(views=[1, 2])
    assert get_tags(est).input_tags.allow_nan
    X = np.array([[1.0, np.nan, np.nan], [np.nan, 2.0, 3.0]])
    mask = est._validate_views(X, reset=True)
    np.testing.assert_array_equal(mask, [[True, False], [False, True]])
    assert [v.tolist() for v in est.views_] == [[0], [1, 2]]
    with pytest.raises(ValueError, match="add up to 3 columns, but X has 4"):
        Probe(views=[1, 2])._validate_views(np.ones((2, 4)), reset=True)
