"""The benchmarks' memory measurement sees what a solver really allocates."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import measure, peak_memory  # noqa: E402


def _solve_over(n_mb, make):
    values = make(int(n_mb * 2**20 / 8))
    return float(values.sum())


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_peak_memory_of_an_80_mb_solve_is_about_80_mb(library):
    if library == "torch":
        torch = pytest.importorskip("torch")

        def make(n):
            return torch.ones(n, dtype=torch.float64)

    else:

        def make(n):
            return np.ones(n)

    # A warm-up of the same size first: freed memory must not hide the next peak.
    _solve_over(80, make)
    peak, _ = peak_memory(lambda: _solve_over(80, make))
    assert 75 <= peak <= 100, peak
    stats, _ = measure(lambda: _solve_over(80, make), repeat=2)
    assert 75 <= stats["peak_mb"] <= 100, stats


def test_peak_memory_of_a_small_call_is_small():
    peak, _ = peak_memory(lambda: _solve_over(0.1, np.ones))
    assert peak < 5, peak
