"""Test configuration: one thread per worker, and the ``gpu`` marker."""

import os

# pytest-xdist runs two workers on two cores: one thread each. These must be set
# before numpy's or torch's thread pools start.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402


def pytest_configure(config):
    import torch

    torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
