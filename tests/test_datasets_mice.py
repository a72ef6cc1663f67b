"""Tests of the bundled mouse connectome data set (load_mice_connectomes)."""

import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sklearn_ext.datasets._mice import load_mice_connectomes

N_SUBJECTS, N_NODES, N_HALF = 32, 332, 166
WHEEL = Path("/tmp/gr/graspologic-3.4.4-py3-none-any.whl")
EDGELIST = "graspologic/datasets/mice/edgelists/{}_ses-1_dti.edgelist"
BLOCK_SIZES = [
    ("isocortex", 41),
    ("pallium", 20),
    ("subpallium", 7),
    ("diencephalon", 11),
    ("midbrain", 9),
    ("hindbrain", 28),
    ("white_matter", 50),
]


@pytest.fixture(scope="module")
def mice():
    return load_mice_connectomes()


def test_shapes_and_dtypes(mice):
    assert mice.graphs.shape == (N_SUBJECTS, N_NODES, N_NODES)
    assert mice.graphs.dtype == np.float64
    for name in ("target", "subject", "sex"):
        assert isinstance(mice[name], np.ndarray) and mice[name].dtype.kind == "U"
        assert mice[name].shape == (N_SUBJECTS,)
    for name in ("node_names", "abbreviations", "hemisphere", "blocks"):
        assert mice[name].dtype.kind == "U" and mice[name].shape == (N_NODES,)
    assert mice.roi.shape == (N_NODES,) and mice.roi.dtype.kind == "i"
    assert mice.atlas_levels.shape == (N_NODES, 4)
    assert list(mice.subject) == sorted(mice.subject)
    assert len(set(mice.subject)) == N_SUBJECTS


def test_graphs_symmetric_loopless_nonnegative_integer(mice):
    G = mice.graphs
    np.testing.assert_array_equal(G, G.transpose(0, 2, 1))
    assert not np.diagonal(G, axis1=1, axis2=2).any()
    assert G.min() == 0 and np.all(G == np.round(G))
    assert G.max() == 161176
    n_edges = np.count_nonzero(G, axis=(1, 2)) // 2
    assert n_edges.min() == 26802 and n_edges.max() == 40095
    # Every node has an edge in every graph.
    assert (G.sum(axis=2) > 0).all()


def test_genotypes_and_sex(mice):
    assert Counter(mice.target) == {"B6": 8, "BTBR": 8, "CAST": 8, "DBA2": 8}
    assert mice.target_names.tolist() == ["B6", "BTBR", "CAST", "DBA2"]
    assert Counter(zip(mice.target, mice.sex)) == {
        (g, s): 4 for g in mice.target_names for s in ("male", "female")
    }
    assert mice.subject[0] == "sub-54776" and mice.target[0] == "DBA2"
    assert mice.subject[-1] == "sub-54890" and mice.target[-1] == "CAST"


def test_node_metadata_and_blocks_cover_every_node(mice):
    assert (mice.hemisphere[:N_HALF] == "L").all()
    assert (mice.hemisphere[N_HALF:] == "R").all()
    np.testing.assert_array_equal(mice.roi, np.arange(N_NODES) % N_HALF + 1)
    for name in ("node_names", "abbreviations", "blocks", "atlas_levels"):
        np.testing.assert_array_equal(mice[name][:N_HALF], mice[name][N_HALF:])
    assert len(set(mice.abbreviations[:N_HALF])) == N_HALF
    assert mice.node_names[0] == "Cingulate_Cortex_Area_24a"
    # Contiguous blocks, in the same order in each hemisphere, covering all nodes.
    expected = np.repeat([b for b, _ in BLOCK_SIZES], [s for _, s in BLOCK_SIZES])
    np.testing.assert_array_equal(mice.blocks, np.concatenate([expected] * 2))
    assert all(b for b in mice.blocks)


def test_return_X_y(mice):
    graphs, target = load_mice_connectomes(return_X_y=True)
    np.testing.assert_array_equal(graphs, mice.graphs)
    np.testing.assert_array_equal(target, mice.target)


def test_descr_cites_source_and_licence(mice):
    descr = mice.DESCR
    assert "10.1016/j.neuroimage.2020.117274" in descr
    assert "Variability and heritability" in descr
    assert "MIT License" in descr and "graspologic-3.4.4" in descr
    assert "no separate" in descr and "licence" in descr


@pytest.mark.parametrize(
    "subject, i, j, weight",
    [  # values copied from the source edge lists
        ("sub-54776", 0, 1, 3735.0),
        ("sub-54776", 56, 192, 1428.0),
        ("sub-54776", 279, 116, 13.0),
        ("sub-54890", 0, 1, 6778.0),
        ("sub-54890", 61, 275, 70.0),
        ("sub-54890", 214, 223, 84.0),
    ],
)
def test_known_edge_weights(mice, subject, i, j, weight):
    s = list(mice.subject).index(subject)
    assert mice.graphs[s, i, j] == mice.graphs[s, j, i] == weight


def test_against_raw_edgelists_in_wheel(mice):
    if not WHEEL.exists():
        pytest.skip(f"{WHEEL} not present")
    with zipfile.ZipFile(WHEEL) as zf:
        for subject in ("sub-54779", "sub-54868"):
            lines = zf.read(EDGELIST.format(subject)).decode().split("\n")
            edges = [line.split() for line in lines if line.strip()]
            s = list(mice.subject).index(subject)
            G = mice.graphs[s]
            assert np.count_nonzero(G) == 2 * len(edges)
            for a, b, w in (edges[0], edges[len(edges) // 2], edges[-1]):
                i, j = int(a), int(b)
                assert G[i, j] == G[j, i] == float(w)
            listed = np.zeros((N_NODES, N_NODES), dtype=bool)
            for a, b, _ in edges:
                listed[int(a), int(b)] = listed[int(b), int(a)] = True
            np.fill_diagonal(listed, True)
            assert not G[~listed].any()
