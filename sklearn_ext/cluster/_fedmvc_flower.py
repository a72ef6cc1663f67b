"""FederatedMultiViewClustering as a real Flower federation on loopback.

The server runs in the calling process (``flwr.server.start_server`` with a
strategy that wraps :class:`~sklearn_ext.cluster._fedmvc_protocol.Server`);
each client is a separate process (``flwr.client.start_client`` with a
``NumPyClient`` that wraps
:class:`~sklearn_ext.cluster._fedmvc_protocol.Client`). Messages travel as
Flower parameters (lists of float32 NumPy arrays), through the same
:func:`~sklearn_ext.cluster._fedmvc_protocol.transmit`. Flower round ``t``
carries protocol round ``t - 1``; the evaluation step of the last round
carries the final broadcast, after which each client process hands its own
networks and labels back to its user (this process) through its standard
output, not through the server.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import collections
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

from sklearn_ext.cluster import _fedmvc_protocol as protocol

__all__ = ["run_flower"]

_CLIENT_TIMEOUT = 600.0


def _import_flwr():
    try:
        import flwr  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise ImportError(
            "backend='flower' needs Flower; install it with "
            "`pip install sklearn_ext[federated]`."
        ) from exc


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_server(address, timeout=_CLIENT_TIMEOUT):
    """Block until the server accepts connections (the legacy Flower client
    gives up at once on a refused connection)."""
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _drain(stream, sink):
    """Keep the last lines a client process writes to stderr (for errors)."""
    for line in iter(stream.readline, b""):
        sink.append(line.decode(errors="replace"))
    stream.close()


def _pack(message, fields):
    return [np.asarray(message[f], dtype=np.float32) for f in fields]


def _unpack(arrays, fields):
    return dict(zip(fields, arrays))


def _client_main(address):
    """One client process: the protocol's Client behind a Flower NumPyClient.

    Its spec arrives pickled on stdin; its state leaves pickled on stdout
    (Flower's own output is sent to stderr).
    """
    result = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    spec = pickle.load(sys.stdin.buffer)
    import torch

    # The thread count of the fit that launched it: float reductions, and so
    # the result, then match the simulation's exactly.
    torch.set_num_threads(int(spec["n_threads"]))
    logging.getLogger("flwr").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    from flwr.client import NumPyClient, start_client

    client = protocol.Client(spec)
    final = {}
    _wait_for_server(address)

    class _FlowerClient(NumPyClient):
        def fit(self, parameters, config):
            round_ = int(config["round"])
            received = _unpack(parameters, protocol.SERVER_FIELDS) if round_ else None
            sent, _ = protocol.transmit(client.step(round_, received))
            return (
                _pack(sent, protocol.CLIENT_FIELDS),
                client.n_samples,
                {"client": int(spec["client"])},
            )

        def evaluate(self, parameters, config):
            client.finish(_unpack(parameters, protocol.SERVER_FIELDS))
            final["state"] = client.state()
            return 0.0, client.n_samples, {}

    start_client(
        server_address=address,
        client=_FlowerClient().to_client(),
        insecure=True,
        max_retries=100,
        max_wait_time=_CLIENT_TIMEOUT,
    )
    pickle.dump(final["state"], result)
    result.close()


def _strategy(server, n_clients):
    from flwr.common import (
        EvaluateIns,
        FitIns,
        ndarrays_to_parameters,
        parameters_to_ndarrays,
    )
    from flwr.server.strategy import Strategy

    class _PrototypeStrategy(Strategy):
        """Broadcasts the global prototypes; pools the clients' statistics."""

        def __init__(self):
            super().__init__()
            self.broadcast = None
            self.traffic = []
            self.failures = []

        def initialize_parameters(self, client_manager):
            return ndarrays_to_parameters([])

        def _clients(self, client_manager):
            client_manager.wait_for(n_clients, timeout=_CLIENT_TIMEOUT)
            return client_manager.sample(n_clients, n_clients)

        def configure_fit(self, server_round, parameters, client_manager):
            round_ = server_round - 1
            arrays = []
            if self.broadcast is not None:
                arrays = _pack(self.broadcast, protocol.SERVER_FIELDS)
            ins = FitIns(ndarrays_to_parameters(arrays), {"round": round_})
            return [(c, ins) for c in self._clients(client_manager)]

        def aggregate_fit(self, server_round, results, failures):
            if failures:
                self.failures.extend(failures)
                raise RuntimeError(f"{len(failures)} Flower client(s) failed.")
            ordered = sorted(results, key=lambda r: int(r[1].metrics["client"]))
            messages = [
                _unpack(parameters_to_ndarrays(r.parameters), protocol.CLIENT_FIELDS)
                for _, r in ordered
            ]
            up = sum(a.nbytes for m in messages for a in m.values())
            down = 0
            if self.broadcast is not None:
                down = n_clients * sum(
                    a.nbytes for a in _pack(self.broadcast, protocol.SERVER_FIELDS)
                )
            self.broadcast = server.aggregate(server_round - 1, messages)
            self.traffic.append((up, down))
            return None, {}

        def configure_evaluate(self, server_round, parameters, client_manager):
            if server_round != self.n_rounds:
                return []
            arrays = _pack(self.broadcast, protocol.SERVER_FIELDS)
            self.traffic.append((0, n_clients * sum(a.nbytes for a in arrays)))
            ins = EvaluateIns(ndarrays_to_parameters(arrays), {})
            return [(c, ins) for c in self._clients(client_manager)]

        def aggregate_evaluate(self, server_round, results, failures):
            if failures:
                raise RuntimeError(f"{len(failures)} Flower client(s) failed.")
            return None, {}

        def evaluate(self, server_round, parameters):
            return None

    return _PrototypeStrategy()


def run_flower(specs, server, rounds):
    """Run the protocol over Flower; return (client states, broadcast, traffic)."""
    _import_flwr()
    import flwr.server as fs
    import torch

    specs = [{**spec, "n_threads": torch.get_num_threads()} for spec in specs]

    logging.getLogger("flwr").setLevel(logging.ERROR)
    address = f"127.0.0.1:{_free_port()}"
    strategy = _strategy(server, len(specs))
    strategy.n_rounds = rounds + 1
    procs, logs = [], []
    try:
        for spec in specs:
            proc = subprocess.Popen(
                [sys.executable, "-m", __name__, address],
                # Idle OpenMP threads sleep instead of spinning: the clients
                # share the cores.
                env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            procs.append(proc)
            logs.append(collections.deque(maxlen=20))
            threading.Thread(
                target=_drain, args=(proc.stderr, logs[-1]), daemon=True
            ).start()
            proc.stdin.write(pickle.dumps(spec))
            proc.stdin.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fs.start_server(
                server_address=address,
                config=fs.ServerConfig(num_rounds=rounds + 1),
                strategy=strategy,
            )
        states = []
        for i, proc in enumerate(procs):
            out = proc.stdout.read()
            proc.wait(timeout=_CLIENT_TIMEOUT)
            if proc.returncode != 0 or not out:
                tail = "".join(logs[i]).strip().splitlines()[-5:]
                raise RuntimeError(
                    f"Flower client {i} exited with code {proc.returncode}; "
                    "the end of its error output:\n" + "\n".join(tail)
                )
            states.append(pickle.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
    broadcast = {"means": server.means, "stds": server.stds}
    return states, broadcast, strategy.traffic


if __name__ == "__main__":
    _client_main(sys.argv[1])
