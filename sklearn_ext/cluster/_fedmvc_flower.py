"""FederatedMultiViewClustering over Flower: one ServerApp, one ClientApp.

The protocol's driver (:func:`~sklearn_ext.cluster._fedmvc_protocol.run_protocol`)
runs inside a Flower ``ServerApp``: its transport (:class:`GridTransport`)
sends every client its copy of the broadcast in a Flower ``Message`` through
the ``Grid`` and returns the clients' replies ordered by client index. A
Flower ``ClientApp`` wraps :class:`~sklearn_ext.cluster._fedmvc_protocol.Client`:
on a ``train`` message it runs
:func:`~sklearn_ext.cluster._fedmvc_protocol.client_reply` for the message's
protocol round, on an ``evaluate`` message it runs the client's ``finish``.
Arrays travel as they leave
:func:`~sklearn_ext.cluster._fedmvc_protocol.transmit` (float32), one Flower
``Array`` per message field, whatever the fields of the round are.

Two runtimes run these same two apps (:func:`run_flower`):

* Flower's Deployment Runtime on loopback: a SuperLink, one SuperNode per
  client and the run submitted with ``flwr run`` are separate processes on
  127.0.0.1 (insecure mode, free ports); the SuperLink starts the ServerApp
  process, every SuperNode starts a ClientApp process per message.
* Flower's Simulation Runtime (``flwr.simulation.run_simulation``, Ray
  backend) in one child process: the ServerApp in a thread, the ClientApps in
  Ray actors.

What goes where. The user's process writes, in a private temporary folder,
one folder per client holding that client's spec (its raw samples included)
and the thread settings of the fit, and one folder for the server holding the
pickled :class:`~sklearn_ext.cluster._fedmvc_protocol.Server` (no data). A
client's process is told only its own folder (its SuperNode's node config, or
its simulated node's partition id); the server's only its own. A ClientApp
keeps its client object between messages in its own folder (pickled; Flower
starts a new ClientApp process per message), and at the end writes its final
state (networks, column scaling, labels) there, where the user's process
reads it: it never passes through the server. The server writes its final
state, the traffic and the protocol messages it received to its folder. The
Simulation Runtime's process, which runs the ServerApp, reads no client's
folder either (the Ray actors do). A ClientApp that fails writes why to its
folder, and the user's process reports that client by index with the end of
its output. The folder is removed afterwards and every process is stopped,
also on errors.

Results equal the in-process simulation's: every process runs the same
protocol code with the thread counts of the fit that launched it (torch's,
OpenMP's and BLAS's), because floating-point reductions, and so the whole
run, depend on them.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import collections
import contextlib
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

import sklearn_ext.cluster._fedmvc_protocol as protocol

# ``server_app`` and ``client_app``, the components a deployed run loads, are
# built on access (module ``__getattr__``, so that importing this module needs
# no Flower); ``flwr run`` checks statically that they exist, here.
__all__ = ["GridTransport", "client_app", "run_flower", "server_app"]  # noqa: F822

# Node-config key of a deployed client's folder (a simulated client finds its
# folder by its partition id).
_CLIENT_FOLDER_KEY = "fedmvc-client-folder"
# Run-config key of the server's folder.
_SERVER_FOLDER_KEY = "fedmvc-server-folder"
# Record names inside a Flower message.
_ARRAYS = "protocol"
_META = "fedmvc"
# The SuperLink connection named in the run's private Flower configuration.
_CONNECTION = "fedmvc-loopback"
# Seconds the ServerApp waits for all SuperNodes to connect.
_CONNECT_TIMEOUT = 300.0
# Seconds between two polls of the Grid for replies.
_POLL = 0.1
# Lines of a failed process's output quoted in the error.
_TAIL = 15


def _import_flwr(simulation):
    """Fail early, without importing Flower here, when the extra is missing."""
    from importlib.util import find_spec

    if find_spec("flwr") is None:  # pragma: no cover - depends on the extra
        raise ImportError(
            "The Flower backends of FederatedMultiViewClustering need Flower; "
            "install it with `pip install sklearn_ext[federated]`."
        )
    if simulation and find_spec("ray") is None:  # pragma: no cover
        raise ImportError(
            "backend='flower-simulation' runs Flower's Simulation Runtime, "
            "which needs Ray; install it with `pip install sklearn_ext[federated]`."
        )


# --- files --------------------------------------------------------------------


def _dump(obj, path):
    """Pickle ``obj`` to ``path`` atomically (readers never see half a file)."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as f:
        pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(partial, path)


def _load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


class _Layout:
    """The run's private folder: one sub-folder per client and one for the server.

    ``client-<i>/job.pkl``: client ``i``'s spec and the fit's thread settings
    (written by the user's process, read by that client only);
    ``client-<i>/client.pkl``: the client object between two messages;
    ``client-<i>/state.pkl``: its final state, for the user;
    ``client-<i>/error.pkl``: why it failed, when it did;
    ``server/job.pkl``: the server object, the number of clients and rounds,
    the thread settings; ``server/result.pkl``: the server after the run, the
    traffic and every message it received (or the error); ``simulation.pkl``:
    the Simulation Runtime's client resources; ``logs/``: every process's
    output.
    """

    def __init__(self, root, n_clients):
        self.root = Path(root)
        self.n_clients = n_clients
        self.server = self.root / "server"
        self.logs = self.root / "logs"
        self.clients = [self.root / f"client-{i}" for i in range(n_clients)]

    def write(self, specs, server, n_rounds, threads, resources):
        for folder in [self.server, self.logs, *self.clients]:
            folder.mkdir()
        _dump(resources, self.root / "simulation.pkl")
        for folder, spec in zip(self.clients, specs):
            _dump({"spec": spec, "threads": threads}, folder / "job.pkl")
        job = {
            "server": server,
            "n_clients": self.n_clients,
            "n_rounds": n_rounds,
            "threads": threads,
        }
        _dump(job, self.server / "job.pkl")

    def collect(self, log_of_client):
        """(client states, server, traffic), or a clear error."""
        # A client's own account of its failure comes first: the server only
        # sees that a reply is missing or is an error.
        for i, folder in enumerate(self.clients):
            if (folder / "error.pkl").exists():
                raise RuntimeError(
                    f"Flower client {i} failed: {_load(folder / 'error.pkl')}\n"
                    "The end of its output:\n" + _tail(log_of_client(i))
                )
        result_path = self.server / "result.pkl"
        if not result_path.exists():
            raise RuntimeError(
                "The Flower ServerApp ended without a result; the end of the "
                "run's output:\n" + _tail(log_of_client(None))
            )
        result = _load(result_path)
        if "error" in result:
            client = result.get("client")
            if client is None:
                who, whose = "The Flower ServerApp", "the run's"
            else:
                who, whose = f"Flower client {client}", "its"
            raise RuntimeError(
                f"{who} failed: {result['error']}\nThe end of {whose} output:\n"
                + _tail(log_of_client(client))
            )
        states = []
        for i, folder in enumerate(self.clients):
            path = folder / "state.pkl"
            if not path.exists():
                raise RuntimeError(
                    f"Flower client {i} returned no final state; the end of its "
                    "output:\n" + _tail(log_of_client(i))
                )
            states.append(_load(path))
        return states, result["server"], result["traffic"]


def _tail(path, n=_TAIL):
    if path is None or not Path(path).exists():
        return "(no output)"
    lines = collections.deque(maxlen=n)
    with open(path, errors="replace") as f:
        for line in f:
            lines.append(line.rstrip())
    return "\n".join(lines) or "(no output)"


# --- thread settings ----------------------------------------------------------


def _thread_settings():
    """The thread counts in force here: torch's and every loaded thread pool's."""
    from threadpoolctl import threadpool_info

    torch = sys.modules.get("torch")
    return {
        "torch": None if torch is None else torch.get_num_threads(),
        "pools": {info["filepath"]: info["num_threads"] for info in threadpool_info()},
    }


@contextlib.contextmanager
def _same_threads(settings):
    """Run a block with the thread counts of the fit (restored on exit).

    Float reductions (torch's, k-means' OpenMP loops, BLAS) split their sums
    by thread, so the result of a fit depends on these counts; a worker
    process (a ClientApp process, a Ray actor with its own OMP_NUM_THREADS)
    starts with its own. Libraries loaded after entering keep theirs.
    """
    from threadpoolctl import ThreadpoolController

    torch = sys.modules.get("torch")
    controller = ThreadpoolController()
    before = None if torch is None else torch.get_num_threads()
    with contextlib.ExitStack() as stack:
        for path, n in settings["pools"].items():
            selected = controller.select(filepath=path)
            if selected.lib_controllers:
                stack.enter_context(selected.limit(limits=n))
        if torch is not None and settings["torch"] is not None:
            torch.set_num_threads(settings["torch"])
        try:
            yield
        finally:
            if before is not None:
                torch.set_num_threads(before)


# --- messages -----------------------------------------------------------------


def _pack(message):
    """A protocol message (float32 arrays, as transmit returns it) as a record."""
    from flwr.app import Array, ArrayRecord

    return ArrayRecord(
        {key: Array(np.ascontiguousarray(value)) for key, value in message.items()}
    )


def _unpack(record):
    return {key: np.array(array.numpy()) for key, array in record.items()}


def _content(meta, message=None):
    from flwr.app import ConfigRecord, RecordDict

    records = {_META: ConfigRecord(meta)}
    if message is not None:
        records[_ARRAYS] = _pack(message)
    return RecordDict(records)


# --- the ServerApp ------------------------------------------------------------


class _ClientFailed(RuntimeError):
    def __init__(self, client, reason):
        super().__init__(reason)
        self.client = client


class GridTransport:
    """The protocol's transport over a Flower ``Grid`` (the ServerApp's side).

    Client ``i`` is the SuperNode whose ClientApp answered with client index
    ``i``; learnt from the first exchange (round 0 carries no broadcast), or
    by a query when the first exchange already carries messages.
    """

    def __init__(self, grid, n_clients, connect_timeout=_CONNECT_TIMEOUT):
        self.grid = grid
        self.n_clients = n_clients
        self.nodes = self._wait_for_nodes(connect_timeout)
        self.node_of_client = None
        # Every protocol message that reached the server, by round.
        self.received = []

    def _wait_for_nodes(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            nodes = sorted(self.grid.get_node_ids())
            if len(nodes) >= self.n_clients:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"Only {len(nodes)} of {self.n_clients} Flower SuperNodes "
                    f"connected within {timeout:.0f} s."
                )
            time.sleep(_POLL)
        if len(nodes) != self.n_clients:
            raise RuntimeError(
                f"{len(nodes)} Flower SuperNodes are connected, expected "
                f"{self.n_clients} (one per client)."
            )
        return nodes

    def _send(self, message_type, contents, nodes):
        """Send ``contents[j]`` to ``nodes[j]``; the replies by client index."""
        from flwr.app import Message

        messages = [
            Message(content, dst_node_id=node, message_type=message_type)
            for content, node in zip(contents, nodes)
        ]
        waiting = set(self.grid.push_messages(messages))
        replies = []
        while waiting:
            arrived = list(self.grid.pull_messages(list(waiting)))
            for reply in arrived:
                waiting.discard(reply.metadata.reply_to_message_id)
                replies.append(reply)
            if waiting:
                time.sleep(_POLL)
        return self._by_client(replies)

    def _by_client(self, replies):
        out = {}
        for reply in replies:
            node = reply.metadata.src_node_id
            if reply.has_error():
                client = None
                if self.node_of_client is not None:
                    client = self.node_of_client.index(node)
                raise _ClientFailed(client, reply.error.reason)
            client = int(reply.content[_META]["client"])
            if client in out or not 0 <= client < self.n_clients:
                raise RuntimeError(
                    f"Flower SuperNode {node} answered as client {client}: "
                    f"expected each of clients 0..{self.n_clients - 1} once."
                )
            out[client] = reply
        if self.node_of_client is None and len(out) == self.n_clients:
            self.node_of_client = [out[i].metadata.src_node_id for i in range(len(out))]
        return out

    def _identify(self):
        from flwr.app import MessageType

        self._send(MessageType.QUERY, [_content({})] * self.n_clients, self.nodes)

    def exchange(self, round_, received):
        from flwr.app import MessageType

        if self.node_of_client is None:
            if any(message is not None for message in received):
                self._identify()
            else:
                contents = [_content({"round": round_}) for _ in self.nodes]
                replies = self._send(MessageType.TRAIN, contents, self.nodes)
                return self._messages(replies)
        contents = [_content({"round": round_}, message) for message in received]
        replies = self._send(MessageType.TRAIN, contents, self.node_of_client)
        return self._messages(replies)

    def _messages(self, replies):
        messages = [_unpack(replies[i].content[_ARRAYS]) for i in range(self.n_clients)]
        self.received.append(messages)
        return messages

    def finish(self, received):
        from flwr.app import MessageType

        if self.node_of_client is None:
            self._identify()
        contents = [_content({}, message) for message in received]
        self._send(MessageType.EVALUATE, contents, self.node_of_client)


def _server_main(grid, context, folder=None):
    """The ServerApp's main: the protocol's driver over the Grid."""
    folder = Path(folder or context.run_config[_SERVER_FOLDER_KEY])
    job = _load(folder / "job.pkl")
    server = job["server"]
    transport = None
    try:
        with _same_threads(job["threads"]):
            transport = GridTransport(grid, job["n_clients"])
            _, traffic = protocol.run_protocol(server, transport, job["n_rounds"])
    except _ClientFailed as exc:
        _dump({"error": str(exc), "client": exc.client}, folder / "result.pkl")
        raise
    except Exception as exc:
        _dump({"error": _describe(exc), "client": None}, folder / "result.pkl")
        raise
    result = {"server": server, "traffic": traffic, "received": transport.received}
    _dump(result, folder / "result.pkl")


def _describe(exc):
    """``Type: message (in file, line n)``: what failed, where (last frame)."""
    what = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return what
    return f"{what} (in {frames[-1].filename}, line {frames[-1].lineno})"


def _make_server_app(folder=None):
    from flwr.serverapp import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid, context):
        _server_main(grid, context, folder)

    return app


# --- the ClientApp ------------------------------------------------------------


def _client_folder(context, folders):
    if folders is None:
        return Path(context.node_config[_CLIENT_FOLDER_KEY])
    return Path(folders[int(context.node_config["partition-id"])])


def _client_main(message, context, folders=None):
    """One message to a client: build or load it, run its part, keep it."""
    from flwr.app import Message, MessageType

    from sklearn_ext.utils._torch import import_torch

    folder = _client_folder(context, folders)
    job = _load(folder / "job.pkl")
    index = int(job["spec"]["client"])
    kind = message.metadata.message_type
    content = message.content
    received = None
    if _ARRAYS in content.array_records:
        received = _unpack(content[_ARRAYS])
    import_torch()
    try:
        with _same_threads(job["threads"]):
            sent = None
            if kind == MessageType.TRAIN:
                round_ = int(content[_META]["round"])
                if round_ == 0:
                    client = protocol.Client(job["spec"])
                else:
                    client = _load(folder / "client.pkl")
                sent = protocol.client_reply(client, round_, received)
                _dump(client, folder / "client.pkl")
            elif kind == MessageType.EVALUATE:
                client = _load(folder / "client.pkl")
                client.finish(received)
                _dump(client.state(), folder / "state.pkl")
    except Exception as exc:
        _dump(_describe(exc), folder / "error.pkl")
        raise RuntimeError(f"client {index}: {_describe(exc)}") from exc
    return Message(_content({"client": index}, sent), reply_to=message)


def _make_client_app(folders=None):
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train()
    def train(message, context):
        return _client_main(message, context, folders)

    @app.evaluate()
    def evaluate(message, context):
        return _client_main(message, context, folders)

    @app.query()
    def query(message, context):
        return _client_main(message, context, folders)

    return app


def __getattr__(name):
    # The components a deployed run loads (`flwr run`'s FAB names them):
    # built on access so that importing this module needs no Flower.
    if name == "server_app":
        return _make_server_app()
    if name == "client_app":
        return _make_client_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- the runtimes -------------------------------------------------------------


def _free_ports(n):
    """``n`` distinct free TCP ports on 127.0.0.1."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _executable(name):
    path = Path(sysconfig.get_path("scripts")) / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(
            f"Flower's `{name}` command was not found next to {sys.executable} "
            "nor on PATH; reinstall Flower (`pip install sklearn_ext[federated]`)."
        )
    return found


def _child_env(layout):
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, env.get("PYTHONPATH")) if p
    )
    env["PATH"] = os.pathsep.join(
        p for p in (sysconfig.get_path("scripts"), env.get("PATH")) if p
    )
    env["FLWR_HOME"] = str(layout.root / "flwr-home")
    env["FLWR_TELEMETRY_ENABLED"] = "0"
    env["FLWR_DISABLE_UPDATE_CHECK"] = "1"
    # Idle OpenMP threads sleep instead of spinning: the processes share cores.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


class _Processes:
    """Processes this run started, each in its own session, always stopped."""

    def __init__(self, layout):
        self.layout = layout
        self.env = _child_env(layout)
        self.procs = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def log(self, name):
        return self.layout.logs / f"{name}.log"

    def start(self, name, args):
        with open(self.log(name), "wb") as out:
            self.procs[name] = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.layout.root,
                start_new_session=True,
            )
        return self.procs[name]

    def wait(self, main, services=()):
        """Wait for ``main`` to exit; fail as soon as a service exits first."""
        while self.procs[main].poll() is None:
            for name in services:
                code = self.procs[name].poll()
                if code is not None:
                    raise RuntimeError(
                        f"Flower's {name} exited early (code {code}); the end "
                        f"of its output:\n{_tail(self.log(name))}"
                    )
            time.sleep(_POLL)
        return self.procs[main].returncode

    def stop(self, grace=3.0):
        # Each process leads its own process group: stopping the group also
        # stops what it started (SuperExec, ServerApp and ClientApp processes).
        # SIGTERM first, then SIGKILL to whatever is left of every group (a
        # group outlives its leader while a child of it runs).
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for proc in self.procs.values():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            deadline = time.monotonic() + grace
            for proc in self.procs.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))


def _write_app(layout, port):
    """The Flower App (its pyproject.toml) and the run's Flower configuration."""
    import tomli_w

    app = layout.root / "app"
    app.mkdir()
    pyproject = {
        "project": {
            "name": "sklearn-ext-fedmvc",
            "version": "1.0.0",
            "description": "FederatedMultiViewClustering's protocol",
            "license": "BSD-3-Clause",
            "dependencies": [],
        },
        "tool": {
            "flwr": {
                "app": {
                    "publisher": "sklearn-ext",
                    "components": {
                        "serverapp": f"{__name__}:server_app",
                        "clientapp": f"{__name__}:client_app",
                    },
                    "config": {_SERVER_FOLDER_KEY: str(layout.server)},
                }
            }
        },
    }
    (app / "pyproject.toml").write_text(tomli_w.dumps(pyproject))
    home = layout.root / "flwr-home"
    home.mkdir()
    config = {
        "superlink": {
            "default": _CONNECTION,
            _CONNECTION: {"address": f"127.0.0.1:{port}", "insecure": True},
        }
    }
    (home / "config.toml").write_text(tomli_w.dumps(config))
    return app


def _wait_listening(port, proc_ok, timeout=120.0):
    deadline = time.monotonic() + timeout
    while True:
        proc_ok()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"Flower's SuperLink did not listen on 127.0.0.1:{port} "
                    f"within {timeout:.0f} s."
                ) from None
            time.sleep(_POLL)


def _run_deployment(layout):
    """SuperLink, one SuperNode per client and ``flwr run``, on loopback."""
    import tomli_w

    link_port, *node_ports = _free_ports(1 + layout.n_clients)
    with _Processes(layout) as procs:
        procs.start(
            "superlink",
            [
                _executable("flower-superlink"),
                "--insecure",
                "--host",
                "127.0.0.1",
                "--port",
                str(link_port),
                "--disable-runtime-dependency-installation",
            ],
        )
        services = ["superlink"]
        for i, (folder, port) in enumerate(zip(layout.clients, node_ports)):
            # Only this SuperNode is told where its client's folder is.
            node_config = folder / "node.toml"
            node_config.write_text(tomli_w.dumps({_CLIENT_FOLDER_KEY: str(folder)}))
            procs.start(
                f"supernode-{i}",
                [
                    _executable("flower-supernode"),
                    "--insecure",
                    "--superlink",
                    f"127.0.0.1:{link_port}",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--node-config",
                    str(node_config),
                ],
            )
            services.append(f"supernode-{i}")
        app = _write_app(layout, link_port)

        def services_alive():
            for name in services:
                code = procs.procs[name].poll()
                if code is not None:
                    raise RuntimeError(
                        f"Flower's {name} exited early (code {code}); the end "
                        f"of its output:\n{_tail(procs.log(name))}"
                    )

        _wait_listening(link_port, services_alive)
        procs.start(
            "run", [_executable("flwr"), "run", str(app), _CONNECTION, "--stream"]
        )
        procs.wait("run", services)

        def log_of(client):
            return procs.log("run" if client is None else f"supernode-{client}")

        return layout.collect(log_of)


def _simulate(root, n_clients):
    """Flower's Simulation Runtime on the run's folder (in this process)."""
    from flwr.simulation import run_simulation

    layout = _Layout(root, n_clients)
    # No client's folder is read here: this process runs the ServerApp.
    resources = _load(layout.root / "simulation.pkl")
    run_simulation(
        server_app=_make_server_app(layout.server),
        client_app=_make_client_app([str(f) for f in layout.clients]),
        num_supernodes=n_clients,
        backend_config={
            "client_resources": resources,
            "init_args": {
                "logging_level": "ERROR",
                "log_to_driver": True,
                # Ray's session (its workers' logs included) lies in the run's
                # folder and goes with it, instead of staying in /tmp/ray.
                "_temp_dir": str(layout.root / "ray"),
            },
        },
    )


def _run_simulation(layout):
    """Flower's Simulation Runtime in one child process (and its Ray workers)."""
    with _Processes(layout) as procs:
        command = [
            sys.executable,
            "-m",
            __name__,
            str(layout.root),
            str(layout.n_clients),
        ]
        procs.start("simulation", command)
        procs.wait("simulation")
        return layout.collect(lambda client: procs.log("simulation"))


def _client_resources(specs, threads):
    """What the Simulation Runtime reserves for one ClientApp (Ray actor).

    As many CPUs as the fit's torch threads, within those this process may
    use (Ray never schedules an actor that asks for more than there are); a
    share of the GPU when the clients train on CUDA.
    """
    n_cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    n_cpus = n_cpus or os.cpu_count() or 1
    resources = {
        "num_cpus": max(1, min(threads["torch"] or 1, n_cpus)),
        "num_gpus": 0.0,
    }
    if any(str(spec["device"]).startswith("cuda") for spec in specs):
        resources["num_gpus"] = 1.0 / len(specs)
    return resources


def run_flower(specs, server, rounds, *, simulation=False):
    """Run the protocol over Flower; return (client states, server, traffic).

    ``simulation=False``: Flower's Deployment Runtime, every party its own
    process on loopback; True: Flower's Simulation Runtime. ``server`` is not
    modified: the returned one is the server process's after the run.
    """
    _import_flwr(simulation)
    n_rounds = protocol.protocol_rounds(server, rounds)
    threads = _thread_settings()
    resources = _client_resources(specs, threads)
    with tempfile.TemporaryDirectory(prefix="sklearn_ext_fedmvc_") as root:
        layout = _Layout(root, len(specs))
        layout.write(specs, server, n_rounds, threads, resources)
        if simulation:
            return _run_simulation(layout)
        return _run_deployment(layout)


if __name__ == "__main__":
    # The Simulation Runtime's process. Its apps come from the imported
    # module (not from __main__) so that Ray's workers can load them.
    from sklearn_ext.cluster._fedmvc_flower import _simulate

    _simulate(sys.argv[1], int(sys.argv[2]))
