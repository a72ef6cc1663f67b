"""Pareto fronts and exact hypervolumes, against brute force."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_ext.model_selection import hypervolume, pareto_mask


def _brute_mask(P):
    keep = []
    for i, p in enumerate(P):
        keep.append(
            not any(np.all(q <= p) and np.any(q < p) for j, q in enumerate(P) if j != i)
        )
    return np.array(keep)


def _grid_volume(P, ref):
    """Union of boxes by coordinate compression: exact, independent."""
    axes = [np.unique(np.append(P[:, d], ref[d])) for d in range(P.shape[1])]
    total = 0.0
    for cell in itertools.product(*[range(len(a) - 1) for a in axes]):
        low = np.array([axes[d][c] for d, c in enumerate(cell)])
        high = np.array([axes[d][c + 1] for d, c in enumerate(cell)])
        if np.any(np.all(P <= low, axis=1)):
            total += np.prod(high - low)
    return total


points = st.integers(1, 7).flatmap(
    lambda n: st.integers(2, 3).flatmap(
        lambda d: arrays(np.float64, (n, d), elements=st.integers(0, 9).map(float))
    )
)


@settings(max_examples=60, deadline=None)
@given(points)
def test_pareto_mask_matches_brute_force(P):
    np.testing.assert_array_equal(pareto_mask(P), _brute_mask(P))


@settings(max_examples=60, deadline=None)
@given(points)
def test_hypervolume_matches_the_union_of_boxes(P):
    ref = np.full(P.shape[1], 10.0)
    assert hypervolume(P, ref) == pytest.approx(_grid_volume(P, ref))


def test_hypervolume_ignores_dominated_and_out_of_range_points():
    front = [[1.0, 3.0], [3.0, 1.0]]
    assert hypervolume(front, [4, 4]) == 5.0
    assert hypervolume([*front, [3.0, 3.0], [5.0, 0.0]], [4, 4]) == 5.0
    assert hypervolume([[5.0, 5.0]], [4, 4]) == 0.0


def test_bad_points_and_references_are_named():
    with pytest.raises(ValueError, match="2-D array"):
        hypervolume([1.0, 2.0], [3, 3])
    with pytest.raises(ValueError, match="NaN"):
        pareto_mask([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="one per objective"):
        hypervolume([[1.0, 2.0]], [3.0])
