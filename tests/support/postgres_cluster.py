"""A throwaway PostgreSQL cluster for the tests: initdb into a temporary folder, listening on
loopback only (a free port) and a private socket folder, trust authentication, stopped and
removed at the end. Run as the `postgres` user when the tests run as root (postgres refuses
root)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


def _binary(name: str) -> str | None:
    for directory in BIN_DIRS:
        if (directory / name).is_file():
            return str(directory / name)
    return shutil.which(name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """One running cluster; `database()` makes an empty database and returns its URL."""

    def __init__(self) -> None:
        initdb, self.pg_ctl = _binary("initdb"), _binary("pg_ctl")
        if not (initdb and self.pg_ctl):
            # CI installs the Debian postgresql package (.ci/run), so it never gets here.
            pytest.skip("PostgreSQL binaries (initdb, pg_ctl) are not installed: apt-get install postgresql")
        self.root = Path(tempfile.mkdtemp(prefix="harness-pg-"))
        self.data, self.sockets = self.root / "data", self.root / "sockets"
        self.sockets.mkdir()
        self.user = None
        if os.geteuid() == 0:
            self.user = pwd.getpwnam("postgres")
            os.chmod(self.root, 0o755)
            for path in (self.root, self.sockets):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        self.port = _free_port()
        self._as_owner([initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} -c fsync=off -c max_connections=100"
        self._as_owner([self.pg_ctl, "-D", str(self.data), "-l", str(self.root / "log"), "-o", options, "-w", "start"])
        self._count = 0

    def _as_owner(self, command: list[str]) -> None:
        if self.user is not None:
            command = ["runuser", "-u", "postgres", "--", *command]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.root, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {proc.stderr or proc.stdout}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        import psycopg

        self._count += 1
        name = f"harness_test_{self._count}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        try:
            self._as_owner([self.pg_ctl, "-D", str(self.data), "-m", "immediate", "stop"])
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
