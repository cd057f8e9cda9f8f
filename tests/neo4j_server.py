"""A real Neo4j 5 without Docker, for tests, benchmarks and local use: the launcher in
tests/neo4j (Neo4j 5.26 community embedded in a Java process of its own), built by Maven
once. Needs java and mvn on PATH."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

NEO4J_LAUNCHER = Path(__file__).parent / "neo4j"
NEO4J_PASSWORD = "pps-test-password"
_BUILD_TIMEOUT_S = 1200  # a first build downloads Neo4j (~130 MB) from Maven Central
_START_TIMEOUT_S = 180


class Neo4jServer:
    """The launcher (a Neo4j 5.26 community, embedded in a Java process of its own) on a
    folder of the test's. `kill()` is a SIGKILL; `start()` again serves the same folder
    on the same port, as a service manager restarting it would; `stop()` is SIGTERM."""

    user = "neo4j"
    password = NEO4J_PASSWORD

    def __init__(self, folder: Path):
        self.folder = folder
        self.port = 0
        self.uri = ""
        self._process: subprocess.Popen | None = None

    def settings(self) -> dict[str, Any]:
        """The pps settings that point at it (what compose gives the pps service)."""
        return {
            "graph_backend": "neo4j",
            "graph_url": self.uri,
            "neo4j_user": self.user,
            "neo4j_password": self.password,
        }

    def start(self) -> Neo4jServer:
        java = [
            "java",
            "-XX:+UseSerialGC",
            "-Xmx1g",
            "-cp",
            neo4j_classpath(),
            "pps.neo4j.Launcher",
        ]
        log = self.folder / "launcher.log"
        with log.open("a") as stderr:
            process = self._process = subprocess.Popen(
                [*java, str(self.folder / "data"), self.password, str(self.port)],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        uris: list[str] = []
        printed = threading.Event()

        def read() -> None:  # the URI line, then drain stdout so that the pipe never fills
            for line in process.stdout:
                if line.startswith("bolt://") and not uris:
                    uris.append(line.strip())
                    printed.set()
            printed.set()  # the launcher exited

        threading.Thread(target=read, name="neo4j-stdout", daemon=True).start()
        if not printed.wait(_START_TIMEOUT_S):
            self.kill()
            raise RuntimeError(f"Neo4j printed no Bolt URI within {_START_TIMEOUT_S}s")
        if not uris:
            raise RuntimeError(
                f"the Neo4j launcher exited {process.wait()}:\n{log.read_text()[-4000:]}"
            )
        self.uri = uris[0]
        self.port = int(self.uri.rsplit(":", 1)[1])
        return self

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def kill(self) -> None:
        self._process.kill()
        self._process.wait()

    def stop(self) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(60)
        except subprocess.TimeoutExpired:
            self.kill()

    def wipe(self, indexes: bool = False) -> None:
        """Delete everything in the database (tests that reuse entity names start here);
        with `indexes`, every index and constraint too, as in a new Neo4j."""
        import neo4j

        with neo4j.GraphDatabase.driver(self.uri, auth=(self.user, self.password)) as driver:
            driver.execute_query("MATCH (n) DETACH DELETE n")
            if not indexes:
                return
            for show, drop in (("CONSTRAINTS", "CONSTRAINT"), ("INDEXES", "INDEX")):
                found = driver.execute_query(f"SHOW {show} YIELD name, type RETURN name, type")
                for record in found.records:
                    if record["type"] != "LOOKUP":  # Neo4j's own, in every database
                        driver.execute_query(f"DROP {drop} `{record['name']}`")


def neo4j_classpath() -> str:
    """The launcher's classpath; `mvn package` first where the build is missing or older
    than its sources (target/.built marks a finished build)."""
    target = NEO4J_LAUNCHER / "target"
    built = target / ".built"
    sources = [NEO4J_LAUNCHER / "pom.xml", *NEO4J_LAUNCHER.glob("src/**/*.java")]
    if not built.exists() or max(s.stat().st_mtime for s in sources) > built.stat().st_mtime:
        result = subprocess.run(
            ["mvn", "-q", "-B", "package"],
            cwd=NEO4J_LAUNCHER,
            capture_output=True,
            text=True,
            timeout=_BUILD_TIMEOUT_S,
        )
        if result.returncode != 0:
            raise RuntimeError(f"mvn package in {NEO4J_LAUNCHER} failed:\n{result.stdout[-4000:]}")
        built.touch()
    return f"{target / 'classes'}{os.pathsep}{(target / 'classpath.txt').read_text().strip()}"
