"""Network building blocks shared by the torch estimators of every family.

torch is imported at the top of this module: only the ``*_nn.py`` modules of
the families import it, and those are imported lazily by their estimators, so
that importing a family stays cheap.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

from torch import nn

__all__ = ["mlp"]


def mlp(sizes):
    """Linear layers of the given widths with ReLU between them.

    Parameters
    ----------
    sizes : sequence of int
        Widths ``[in, hidden..., out]``, at least two; no activation follows
        the last layer.

    Returns
    -------
    torch.nn.Sequential
    """
    bad = [s for s in sizes if not isinstance(s, Integral) or isinstance(s, bool)]
    if bad:
        raise TypeError(f"mlp widths must be integers, got {bad!r} in {list(sizes)}.")
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2:
        raise ValueError(f"mlp needs at least two widths, got {sizes}.")
    layers = []
    for a, b in zip(sizes[:-2], sizes[1:-1]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(sizes[-2], sizes[-1]))
    return nn.Sequential(*layers)
