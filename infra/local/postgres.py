"""A private PostgreSQL cluster started from the machine's binaries (as the `postgres` account when root).

Used by `make dev` (a cluster kept under .local/ between runs) and by the tests (a throwaway cluster).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pg8000.native

DATABASE = "leadcrm"


def pg_bin_dir() -> Path:
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    if found:
        return Path(found[-1])
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError("No PostgreSQL binaries found: install postgresql or set PG_BIN or DATABASE_URL.")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalPostgres:
    def __init__(self, data_dir: Path, port: int | None = None, *, durable: bool = True) -> None:
        self.root = data_dir.resolve()
        self.data = self.root / "data"
        self.port_file = self.root / "port"
        self.log = self.root / "postgres.log"
        self.durable = durable
        self._port = port

    @property
    def port(self) -> int:
        if self._port is None:
            self._port = int(self.port_file.read_text()) if self.port_file.exists() else free_port()
        return self._port

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def start(self) -> str:
        """Initialise on first use, start unless running, make sure the database exists; return its URL."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not (self.data / "PG_VERSION").exists():
            self._initdb()
        if not self._running():
            self.port_file.write_text(str(self.port))
            options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=200"
            if not self.durable:  # throwaway test clusters: speed over crash safety
                # (synchronous_commit stays on: with fsync off a commit costs a write, not a flush; off, a
                # VACUUM soon after a commit leaves its pages not all-visible until the WAL writer caught up,
                # and the plans the tests read then change with the machine's load)
                options += " -c fsync=off -c full_page_writes=off"
            self._run(["pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start"])
        self._create_database()
        return self.url

    def stop(self) -> None:
        if self._running():
            self._run(["pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop"])

    def _initdb(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        self._chown(self.root)
        self._chown(self.data)
        self._run(["initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"])

    def _running(self) -> bool:
        if not (self.data / "postmaster.pid").exists():
            return False
        result = subprocess.run(
            self._as_postgres([str(pg_bin_dir() / "pg_ctl"), "-D", str(self.data), "status"]), capture_output=True
        )
        return result.returncode == 0

    def _create_database(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = pg8000.native.Connection("postgres", host="127.0.0.1", port=self.port, database="postgres")
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        try:
            if not conn.run("SELECT 1 FROM pg_database WHERE datname = :d", d=DATABASE):
                conn.run(f'CREATE DATABASE "{DATABASE}"')
        finally:
            conn.close()

    def _run(self, argv: list[str]) -> None:
        argv = [str(pg_bin_dir() / argv[0]), *argv[1:]]
        result = subprocess.run(self._as_postgres(argv), capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{result.stdout}\n{result.stderr}")

    @staticmethod
    def _as_postgres(argv: list[str]) -> list[str]:
        # PostgreSQL refuses to run as root; root runs it through the postgres account.
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *argv]
        return argv

    @staticmethod
    def _chown(path: Path) -> None:
        if os.geteuid() == 0:
            shutil.chown(path, "postgres", "postgres")
            path.chmod(0o700)
