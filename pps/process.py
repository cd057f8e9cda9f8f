"""Run `pps serve` as a child process: used by tests and benchmarks, which talk to a
real server over real HTTP, and can kill it the hard way."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A `pps serve` child on 127.0.0.1 with its own data dir: `data_dir=None` runs it
    without --data-dir, as a user types it (then name `log`, and pass `env` with the
    user's HOME and the `cwd` it runs in)."""

    def __init__(
        self,
        data_dir: Path | None,
        port: int | None = None,
        env: dict[str, str] | None = None,
        *,
        cwd: Path | None = None,
        log: Path | None = None,
        replace_env: bool = False,
    ):
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.port = port or free_port()
        self.env = dict(env or {}) if replace_env else {**os.environ, **(env or {})}
        self.cwd = cwd
        self.proc: subprocess.Popen | None = None
        if log is None:
            assert self.data_dir is not None, "name the log of a server without --data-dir"
            log = self.data_dir.parent / f"serve-{self.port}.log"
        self.log = Path(log)
        self.log.parent.mkdir(parents=True, exist_ok=True)

    def _data_dir_args(self) -> list[str]:
        return ["--data-dir", str(self.data_dir)] if self.data_dir is not None else []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def pps(self, *args: str) -> str:
        """Run a `pps` command against this server's data dir; return its stdout."""
        done = subprocess.run(
            [sys.executable, "-m", "pps.cli", *args, *self._data_dir_args()],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def start(self, timeout: float = 120, *, loaded: bool = True) -> ServerProcess:
        """Start it; return once /health answers and, with `loaded`, no longer says
        `starting` (its models and graph have loaded, or failed to and said why)."""
        command = [sys.executable, "-m", "pps.cli", "serve"]
        command += [*self._data_dir_args(), "--port", str(self.port)]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                command, env=self.env, stdout=log, stderr=log, cwd=self.cwd
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pps serve exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                health = httpx.get(f"{self.url}/health", timeout=1)
                if health.status_code == 200 and not (
                    loaded and health.json().get("status") == "starting"
                ):
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"pps serve did not become healthy in {timeout}s:\n{self.logs()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown handlers, no flushing; what was committed must survive."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def logs(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def __enter__(self) -> ServerProcess:
        """Start it, unless `with server.start(...)` already did (a second start would
        find the first healthy on the port and leave it running after the block)."""
        return self if self.proc is not None and self.proc.poll() is None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
