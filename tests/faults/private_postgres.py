"""A PostgreSQL server of the fault suite's own: made, started, stopped and killed at will.

The suite stops the server and terminates its backends, which it must never do
to the machine's shared server. So it makes a cluster in a temporary folder
(``initdb``, trust authentication on loopback, no fsync: these tests are about
connections, not crashes) and runs it on a free port with ``pg_ctl``. The
server binaries are found on ``PATH`` or under ``/usr/lib/postgresql/*/bin``;
PostgreSQL refuses to run as root, so as root the server runs as the
``postgres`` user. Where none of that is possible the tests skip with the
reason.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from contextlib import suppress
from pathlib import Path

import psycopg
import pytest

from tests.loopback import free_port

__all__ = ["PrivatePostgres", "server_binaries"]


def server_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (the newest version), or None."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).parent
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return candidates[-1].parent if candidates else None


class PrivatePostgres:
    """One private cluster: ``start``, ``stop``, ``terminate`` backends, fresh databases."""

    def __init__(self) -> None:
        bin_dir = server_binaries()
        if bin_dir is None:
            pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) on this machine")
        self.bin = bin_dir
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("running as root, and there is no 'postgres' user to run a server as")
            if shutil.which("runuser") is None:
                pytest.skip("running as root, and runuser is missing to start a server as postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
            self._uid, self._gid = user.pw_uid, user.pw_gid
        self.home = Path(tempfile.mkdtemp(prefix="amv-faults-pg-"))
        self.data = self.home / "data"
        self.port = free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        if self.as_user:
            os.chown(self.home, self._uid, self._gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [*self.as_user, str(self.bin / tool), *args], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stdout}\n{done.stderr}")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = (
            f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        log = str(self.home / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        """Stop the server at once (every backend ends; clients see their connections die)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def database(self) -> str:
        """A DSN for a new, empty database of this server."""
        name = f"f_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def terminate(self, dsn: str) -> int:
        """``pg_terminate_backend`` on every client connection to ``dsn``'s database; how many."""
        name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                "datname = %s AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
                (name,),
            ).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        """Stop the server (if it runs) and remove its folder."""
        with suppress(RuntimeError):  # stopped already
            self.stop()
        shutil.rmtree(self.home, ignore_errors=True)
