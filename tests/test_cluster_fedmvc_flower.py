"""FederatedMultiViewClustering over Flower: both runtimes against the simulation.

``backend="flower"`` (Flower's Deployment Runtime: SuperLink, SuperNodes,
ServerApp and ClientApp processes on loopback) and
``backend="flower-simulation"`` (Flower's Simulation Runtime on Ray) run the
same protocol code as ``backend="simulation"``, so for the same seed they give
the same fit. Every run here is small (two clients, one clustering round):
Flower starts a ClientApp process per message, which dominates the time.
"""

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from sklearn_ext.cluster import FederatedMultiViewClustering, _fedmvc_flower
from sklearn_ext.datasets import make_multiview_blobs

pytest.importorskip("flwr")

TINY = {
    "n_clusters": 3,
    "rounds": 1,
    "local_epochs": 1,
    "pretrain_iter": 20,
    "latent_dim": 4,
    "hidden_layer_sizes": (16,),
    "learning_rate_init": 1e-2,
    "device": "cpu",
    "random_state": 0,
}


@pytest.fixture(scope="module")
def data():
    X, _, views = make_multiview_blobs(
        90, view_sizes=(4, 4), n_clusters=3, separation=4.0, random_state=0
    )
    site = np.arange(X.shape[0]) % 2
    return np.column_stack([X, site]), views


def _model(views, backend, **params):
    # The default epsilon: the private protocol, noise and accounting included.
    return FederatedMultiViewClustering(
        views=views, client_column=-1, backend=backend, **{**TINY, **params}
    )


@pytest.fixture(scope="module")
def simulated(data):
    Xc, views = data
    return _model(views, "simulation").fit(Xc)


@pytest.fixture
def run_folder(monkeypatch):
    """Snapshot of the run's private folder, taken just before it is removed."""
    seen = {}
    collect = _fedmvc_flower._Layout.collect

    def snapshot(layout, log_of_client):
        seen["root"] = layout.root
        seen["n_clients"] = layout.n_clients
        seen["files"] = {
            path.relative_to(layout.root): path.read_bytes()
            for path in layout.root.rglob("*")
            if path.is_file()
        }
        return collect(layout, log_of_client)

    monkeypatch.setattr(_fedmvc_flower._Layout, "collect", snapshot)
    return seen


def _processes_of(root):
    """Ids of live processes started for the run in ``root`` (by FLWR_HOME)."""
    marker = f"FLWR_HOME={Path(root) / 'flwr-home'}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ and state != "Z":
            found.append(int(entry.name))
    return found


def _assert_same_fit(reference, other, Xc):
    np.testing.assert_array_equal(reference.labels_, other.labels_)
    np.testing.assert_allclose(reference.prototypes_, other.prototypes_, atol=1e-6)
    np.testing.assert_allclose(
        reference.prototype_stds_, other.prototype_stds_, atol=1e-6
    )
    assert reference.communication_per_round_ == other.communication_per_round_
    np.testing.assert_allclose(reference.client_epsilon_, other.client_epsilon_)
    np.testing.assert_array_equal(reference.predict(Xc), other.predict(Xc))


def _client_rows(Xc):
    """Every client's raw rows as bytes, by encoding (float64, float32)."""
    X, site = Xc[:, :-1], Xc[:, -1]
    return {
        int(i): {
            dtype: [row.astype(dtype).tobytes() for row in X[site == i]]
            for dtype in ("<f8", "<f4")
        }
        for i in np.unique(site)
    }


def _client_side(path):
    """A client's folder, or the output of a SuperNode (a client's process)."""
    top = path.parts[0]
    return top.startswith("client-") or (
        top == "logs" and path.name.startswith("supernode-")
    )


@pytest.mark.parametrize("backend", ["flower", "flower-simulation"])
def test_flower_backends_equal_the_simulation_and_server_never_sees_x(
    backend, data, simulated, run_folder
):
    if backend == "flower-simulation":
        pytest.importorskip("ray")
    Xc, views = data
    model = _model(views, backend).fit(Xc)
    _assert_same_fit(simulated, model, Xc)
    assert np.isfinite(model.epsilon_)

    # What the server's process had: its folder (job and result, with every
    # protocol message it received), the Flower app and its home, the
    # SuperLink's and the run's output. None holds a byte of a client's rows.
    files = run_folder["files"]
    rows = _client_rows(Xc)
    server_side = {path: blob for path, blob in files.items() if not _client_side(path)}
    assert Path("server", "result.pkl") in server_side
    for path, blob in server_side.items():
        for encodings in rows.values():
            for encoded in encodings.values():
                assert not any(row in blob for row in encoded), path
    # Each client's spec (its samples) lies in its own folder only, and it is
    # what the check above looks for.
    jobs = sorted(path for path in files if path.name == "job.pkl")
    assert jobs == sorted(
        [Path("server", "job.pkl")]
        + [Path(f"client-{i}", "job.pkl") for i in range(run_folder["n_clients"])]
    )
    for i, encodings in rows.items():
        own = files[Path(f"client-{i}", "job.pkl")]
        assert all(row in own for row in encodings["<f8"])
        for j in rows:
            if j != i:
                other = files[Path(f"client-{j}", "job.pkl")]
                assert not any(row in other for row in encodings["<f8"])
    # The server received one message per client and protocol round.
    result = pickle.loads(files[Path("server", "result.pkl")])
    assert len(result["received"]) == len(model.communication_per_round_) - 1
    assert all(len(messages) == 2 for messages in result["received"])
    assert _processes_of(run_folder["root"]) == []


def test_a_failing_client_process_is_a_clear_error(data, run_folder, monkeypatch):
    # Deployment Runtime: client 1's ClientApp process fails in round 0, before
    # the server knows which SuperNode holds which client.
    Xc, views = data
    specs = FederatedMultiViewClustering._client_specs

    def broken(self, *args):
        out = specs(self, *args)
        out[1]["latent_dim"] = "four"  # client 1's process fails building its nets
        return out

    monkeypatch.setattr(FederatedMultiViewClustering, "_client_specs", broken)
    with pytest.raises(
        RuntimeError, match=r"Flower client 1 failed: TypeError: "
    ) as err:
        _model(views, "flower", epsilon=None).fit(Xc)
    assert "The end of its output" in str(err.value)
    assert not Path(run_folder["root"]).exists()
    assert _processes_of(run_folder["root"]) == []
