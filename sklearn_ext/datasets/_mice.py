"""Loader of the mouse diffusion MRI connectomes shipped with the package."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_mice_connectomes"]


def load_mice_connectomes(*, return_X_y=False):
    """Load 32 mouse brain connectomes from four genotypes (graph classification).

    Weighted, undirected structural connectomes estimated from diffusion MRI of
    eight mice (four male, four female) of each of four inbred strains, all on
    the same 332 brain regions (166 per hemisphere). Each matrix is symmetric,
    has a zero diagonal and non-negative whole-number weights. The data ship
    inside the package; nothing is downloaded.

    =================  ====
    Classes               4
    Graphs per class      8
    Graphs total         32
    Nodes               332
    =================  ====

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(graphs, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes below.

        graphs : ndarray of shape (32, 332, 332), float64
            Weighted adjacency matrices, one per mouse.
        target : ndarray of shape (32,), str
            Genotype of each mouse: ``"B6"`` (C57BL/6J), ``"BTBR"``
            (BTBR T+ Itpr3tf/J), ``"CAST"`` (CAST/EiJ) or ``"DBA2"`` (DBA/2J).
        target_names : ndarray of shape (4,), str
            The four genotype labels, sorted.
        subject : ndarray of shape (32,), str
            Subject ids (``"sub-54776"``, ...), in increasing order.
        sex : ndarray of shape (32,), str
            ``"male"`` or ``"female"``.
        node_names : ndarray of shape (332,), str
            Atlas structure name of each node (the same 166 names in each
            hemisphere; one name is shared by two regions).
        abbreviations : ndarray of shape (332,), str
            Atlas abbreviation of each node, unique within a hemisphere.
        roi : ndarray of shape (332,), int
            Atlas region id (1 to 166) of each node.
        hemisphere : ndarray of shape (332,), str
            ``"L"`` for nodes 0 to 165, ``"R"`` for nodes 166 to 331.
        blocks : ndarray of shape (332,), str
            Anatomical block of each node (seven per hemisphere, such as
            ``"isocortex"`` or ``"white_matter"``).
        atlas_levels : ndarray of shape (332, 4), str
            The atlas's four-level anatomical hierarchy for each node.
        DESCR : str
            Description of the data, their source, citation and licence.

    (graphs, target) : tuple if ``return_X_y`` is True
        The ``graphs`` and ``target`` arrays described above.

    Notes
    -----
    The files were converted from those that the graspologic 3.4.4 wheel
    (MIT License) redistributes; graspologic is not needed. The node order is
    graspologic's: node ``k`` is atlas region ``k % 166 + 1``, left hemisphere
    first. The wheel states no licence of its own for these data; cite the
    paper below. ``DESCR`` gives the details.

    References
    ----------
    .. [1] N. Wang, R. J. Anderson, D. G. Ashbrook, V. Gopalakrishnan, Y. Park,
       C. E. Priebe, ... and G. A. Johnson, "Variability and heritability of
       mouse brain structure: Microscopic MRI atlases and connectomes for
       diverse strains", NeuroImage 222:117274, 2020,
       https://doi.org/10.1016/j.neuroimage.2020.117274.

    Examples
    --------
    >>> from sklearn_ext.datasets import load_mice_connectomes
    >>> mice = load_mice_connectomes()
    >>> mice.graphs.shape, mice.target.shape, mice.blocks.shape
    ((32, 332, 332), (32,), (332,))
    >>> mice.target_names.tolist()
    ['B6', 'BTBR', 'CAST', 'DBA2']
    """
    files = resources.files("sklearn_ext.datasets") / "data"
    with (files / "mice_connectomes.npz").open("rb") as f, np.load(f) as archive:
        n_nodes = int(archive["n_nodes"])
        upper = archive["graphs_triu"].astype(np.float64)
        fields = {
            name: archive[name]
            for name in (
                "genotype",
                "subject",
                "sex",
                "node_names",
                "abbreviations",
                "roi",
                "hemisphere",
                "blocks",
                "atlas_levels",
            )
        }
    rows, cols = np.triu_indices(n_nodes, k=1)
    graphs = np.zeros((upper.shape[0], n_nodes, n_nodes))
    graphs[:, rows, cols] = upper
    graphs[:, cols, rows] = upper
    target = fields.pop("genotype")
    if return_X_y:
        return graphs, target
    fields["roi"] = fields["roi"].astype(np.int64)
    return Bunch(
        graphs=graphs,
        target=target,
        target_names=np.unique(target),
        **fields,
        DESCR=(files / "mice_connectomes.rst").read_text(encoding="utf-8"),
    )
