"""Bundled data sets and generators of synthetic data."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.datasets._bibtex import load_bibtex
from sklearn_ext.datasets._brain_cohort import make_brain_cohort
from sklearn_ext.datasets._described_digits import load_described_digits
from sklearn_ext.datasets._docstring_retrieval import (
    encode_texts,
    encode_tokens,
    load_docstring_retrieval,
)
from sklearn_ext.datasets._graph_multitask import make_graph_multitask
from sklearn_ext.datasets._lcdb import load_lcdb_curves
from sklearn_ext.datasets._longtail_multilabel import make_longtail_multilabel
from sklearn_ext.datasets._mazes import make_mazes
from sklearn_ext.datasets._mfeat import load_mfeat
from sklearn_ext.datasets._mice import load_mice_connectomes
from sklearn_ext.datasets._multibehavior import make_multibehavior
from sklearn_ext.datasets._multigranular import make_multigranular
from sklearn_ext.datasets._multilayer_network import make_multilayer_network
from sklearn_ext.datasets._multiview import make_multiview_blobs, mask_views
from sklearn_ext.datasets._remote_sensing import make_remote_sensing_scene
from sklearn_ext.datasets._shortest_path import make_shortest_path
from sklearn_ext.datasets._sudoku import make_sudoku

__all__ = [
    "encode_texts",
    "encode_tokens",
    "load_bibtex",
    "load_described_digits",
    "load_docstring_retrieval",
    "load_lcdb_curves",
    "load_mfeat",
    "load_mice_connectomes",
    "make_brain_cohort",
    "make_graph_multitask",
    "make_longtail_multilabel",
    "make_mazes",
    "make_multibehavior",
    "make_multigranular",
    "make_multilayer_network",
    "make_multiview_blobs",
    "make_remote_sensing_scene",
    "make_shortest_path",
    "make_sudoku",
    "mask_views",
]
