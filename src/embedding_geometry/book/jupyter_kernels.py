"""Chapter kernels forked from a warm parent: a fresh process per chapter, the imports paid once.

Every chapter runs in its own kernel process, started for it and stopped after it, so no state
passes from one chapter to the next and each can be rerun alone. What the kernels would all do
first — import torch, transformers and its encoder classes, ipykernel and this package, about
5 s of a 2-core machine's time — is done once per build by a *server* that imports
:data:`PRELOAD`, runs nothing, and forks one kernel per chapter::

    build ─ papermill ─ launcher (``python -m embedding_geometry.book.jupyter_kernels launch -f conn.json``)
                           │ Unix socket: argv, working folder, environment, stdin/stdout/stderr
                         server (imports only) ── fork ──▶ kernel (ipykernel, its own process)

The launcher stands in for the kernel towards jupyter_client: it relays signals (interrupt,
terminate) to the kernel and exits when the kernel exits; when the launcher is killed, the
server kills the kernel. Without a server (or when it cannot fork) the launcher execs a plain
``ipykernel_launcher``, so a chapter always runs. A forked kernel's clock
(:mod:`core.clock <embedding_geometry.core.clock>`) starts at the fork.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import json
import os
import pkgutil
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path
import embedding_geometry

ADDRESS = "EMBEDDING_GEOMETRY_KERNEL_SERVER"
_server: dict = {}  # this process's server: its package version, process and folder
PRELOAD = ("torch", "transformers", "transformers.modeling_utils", "transformers.models.bert.modeling_bert",
           "transformers.models.mpnet.modeling_mpnet", "transformers.models.bert.tokenization_bert",
           "transformers.models.mpnet.tokenization_mpnet", "transformers.models.auto.tokenization_auto",
           "transformers.models.bert.tokenization_bert_fast", "sentence_transformers", "ipykernel.kernelapp",
           "myst_nb", "papermill", "pandas")
"""What chapter kernels import before their first model call, besides every module of this package
(the embedded models' classes; imports that fail are left to the kernel)."""


@functools.cache
def kernel_manager() -> type:
    """papermill's kernel manager (jupyter_client's), launching the kernel through :func:`launch`."""
    from jupyter_client.manager import AsyncKernelManager

    class ForkedKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            # Unix sockets of its own, not TCP ports: ports are chosen free by one process and bound
            # later by the kernel, so two builds starting kernels at once could pick the same one (a
            # chapter then failed with "Kernel died before replying to kernel_info")
            own = os.path.join(tempfile.gettempdir(), f"eg-kernel-{uuid.uuid4().hex}")
            super().__init__(**{"transport": "ipc", "ip": own, **kwargs})

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            command = super().format_kernel_cmd(extra_arguments)
            return [sys.executable, "-m", __name__, "launch", *command[command.index("-f"):]]

    return ForkedKernelManager


def start_server(version: str = "") -> None:
    """Have a kernel server running for this process's ``version`` of the package (its code's
    hash): started on first use, restarted when the code changed since (its imports are stale),
    stopped when this process exits, and by itself when this process is killed. Its address goes
    to the kernels' environment (:data:`ADDRESS`)."""
    if _server.get("version") == version:
        return
    if _server:
        _stop(_server["process"], _server["folder"])
    else:
        atexit.register(lambda: _server and _stop(_server["process"], _server["folder"]))
    folder = tempfile.mkdtemp(prefix="eg-kernels-")
    os.environ[ADDRESS] = address = str(Path(folder) / "server.sock")
    process = subprocess.Popen([sys.executable, "-m", __name__, "serve", address], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _server.update(version=version, process=process, folder=folder)
    deadline = time.monotonic() + 60
    while not os.path.exists(address) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)  # listening comes first: from then on launchers wait in its queue


def _stop(process: subprocess.Popen, folder: str) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
    shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- the server

def serve(address: str) -> None:
    """Listen at ``address``, import :data:`PRELOAD`, then fork a kernel for each launcher that
    connects (launchers that come early wait in the queue), until the build that started this
    server ends (SIGTERM, or this process is orphaned)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address + ".new")
    listener.listen()
    os.replace(address + ".new", address)  # the address appears once it accepts connections
    _preload()
    if threading.active_count() > 1:  # forking a threaded process is unsafe: launchers fall back
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    parent, kernels = os.getppid(), {}  # connection → its kernel's pid
    events = selectors.DefaultSelector()
    events.register(listener, selectors.EVENT_READ)
    try:
        while os.getppid() == parent:
            for key, _ in events.select(timeout=0.1):
                if key.fileobj is listener:
                    connection, _ = listener.accept()
                    if (pid := _fork_kernel(connection, [listener, *kernels])) is None:
                        connection.close()  # the launcher left before saying what to run
                        continue
                    kernels[connection] = pid
                    events.register(connection, selectors.EVENT_READ)
                else:  # the launcher is gone: so goes its kernel
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(kernels[key.fileobj], signal.SIGKILL)
            for connection, pid in list(kernels.items()):
                if os.waitpid(pid, os.WNOHANG)[0]:  # exited: tell its launcher
                    with contextlib.suppress(OSError):
                        connection.sendall(b"0\n")
                    events.unregister(connection)
                    connection.close()
                    del kernels[connection]
    finally:
        for pid in kernels.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _preload() -> None:
    """Import :data:`PRELOAD` and every module of this package (what the chapters import)."""
    package = [m.name for m in pkgutil.walk_packages(embedding_geometry.__path__, "embedding_geometry.")
               if not m.name.endswith("__main__")]
    for module in (*PRELOAD, *package):
        with contextlib.suppress(Exception):
            importlib.import_module(module)


def _fork_kernel(connection: socket.socket, others: list[socket.socket]) -> int | None:
    """Fork a kernel with the launcher's argv, folder, environment and standard streams (None:
    the request was incomplete). The kernel keeps none of the server's sockets (``others``)."""
    message, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while message and not message.endswith(b"\n"):  # the rest of a long request (or b"": cut short)
        more = connection.recv(1 << 16)
        message = message + more if more else b""
    if not message or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None
    request = json.loads(message)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):
            connection.sendall(f"{pid}\n".encode())
        return pid
    try:
        for sock in (connection, *others):
            sock.close()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # ipykernel read its parent's pid from the environment when the server imported it
        argv = [*request["argv"], f"--IPKernelApp.parent_handle={os.environ.get('JPY_PARENT_PID') or os.getppid()}"]
        sys.argv, sys.path[0] = ["ipykernel_launcher", *argv], request["cwd"]
        from ipykernel.kernelapp import IPKernelApp

        IPKernelApp.launch_instance(argv=argv)
    except SystemExit as stop:
        os._exit(stop.code if isinstance(stop.code, int) else 0)
    except BaseException:  # into the launcher's stderr (the chapter's log): os._exit prints nothing
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    os._exit(0)


# --------------------------------------------------------------------------- the launcher

def launch(argv: list[str]) -> int:
    """Have the server fork a kernel with ``argv`` and stand in for it (see the module docstring);
    exec a plain ipykernel when there is no server, or it cannot fork."""
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(os.environ[ADDRESS])
        request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}) + "\n"
        socket.send_fds(connection, [request.encode()], [0, 1, 2])
        reply = connection.makefile()
        pid = int(reply.readline())
    except (KeyError, OSError, ValueError) as error:
        if ADDRESS in os.environ:  # a server was started but did not fork: say so in the chapter's log
            print(f"kernel server unavailable ({type(error).__name__}: {error}); starting a plain kernel",
                  file=sys.stderr, flush=True)
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])
    for relayed in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(relayed, lambda number, _: os.kill(pid, number))
    reply.readline()  # the server writes a line when the kernel has exited (or closes on its death)
    return 0


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "serve":
        serve(*rest)
    else:
        sys.exit(launch(rest))
