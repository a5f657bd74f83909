"""A real PostgreSQL server for the tests (session scope), and a fresh database per test.

Which server, first that works:
1. ``$GPUNODE_TEST_PG_DSN`` (a DSN to a database the tests may create databases from);
2. a server already listening on loopback (``127.0.0.1:5432``, user ``$PGUSER`` or
   ``postgres``, no password: trust or peer-like local setups);
3. a throwaway cluster: ``initdb`` into a temp folder and ``pg_ctl start`` on a free
   loopback port, as the current user, or as the ``postgres`` user (``runuser``) when the
   tests run as root (PostgreSQL refuses to run as root); stopped and removed after.
Skips, saying so, only when no PostgreSQL binaries are installed (``make system-deps``
installs Debian's ``postgresql``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_port

ENV_DSN = "GPUNODE_TEST_PG_DSN"
BIN_DIRS = ("/usr/local/bin", *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True))


def _binaries() -> tuple[str, str] | None:
    for folder in (None, *BIN_DIRS):
        initdb = shutil.which("initdb", path=folder)
        pg_ctl = shutil.which("pg_ctl", path=folder)
        if initdb and pg_ctl:
            return initdb, pg_ctl
    return None


def _reachable(dsn: str) -> bool:
    import psycopg

    try:
        psycopg.connect(dsn, connect_timeout=2).close()
    except psycopg.Error:
        return False
    return True


#: tries to start the server on a port found free (see throwaway_cluster)
BIND_ATTEMPTS = 3


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[str]:
    found = _binaries()
    if found is None:
        pytest.skip(
            "no PostgreSQL binaries (initdb, pg_ctl) on PATH or under /usr/lib/postgresql; "
            "`make system-deps` installs Debian's postgresql"
        )
    initdb, pg_ctl = found
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses root: run it as an unprivileged user
        user = "postgres"
        try:
            pwd.getpwnam(user)
        except KeyError:
            user = "nobody"
        as_user = ["runuser", "-u", user, "--"]
    base = Path(tempfile.mkdtemp(prefix="gpunode-pg-"))
    data = base / "data"
    port = free_port()
    if as_user:
        shutil.chown(base, user=as_user[2])
    run = [*as_user]
    subprocess.run(
        [
            *run,
            initdb,
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        ],
        check=True,
        capture_output=True,
    )
    for attempt in range(BIND_ATTEMPTS):
        # a port found free can be taken (another process's client port) before the server
        # binds it: then the server says so in its log, and another port is tried
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={base} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        started = subprocess.run(
            [
                *run,
                pg_ctl,
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(base / "server.log"),
                "-w",
                "-t",
                "60",
                "start",
            ],
            check=False,
            capture_output=True,
        )
        if started.returncode == 0:
            break
        said = (base / "server.log").read_text(errors="replace")
        if "Address already in use" not in said or attempt == BIND_ATTEMPTS - 1:
            raise RuntimeError(f"pg_ctl start failed: {started.stderr!r}\n{said[-2000:]}")
        port = free_port()
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A DSN to a database on a running server, with the right to create databases."""
    if os.environ.get(ENV_DSN):
        yield os.environ[ENV_DSN]
        return
    loopback = f"postgresql://{os.environ.get('PGUSER', 'postgres')}@127.0.0.1:5432/postgres"
    if _reachable(loopback):
        yield loopback
        return
    with throwaway_cluster() as dsn:
        yield dsn


def _with_database(dsn: str, name: str) -> str:
    head, _, _tail = dsn.rpartition("/")
    query = ""
    if "?" in _tail:
        query = "?" + _tail.split("?", 1)[1]
    return f"{head}/{name}{query}"


@contextlib.contextmanager
def fresh_database(server_dsn: str) -> Iterator[str]:
    """A new, empty database on the server, dropped after."""
    import psycopg

    name = f"gpunode_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield _with_database(server_dsn, name)
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_dsn(pg_server: str) -> Iterator[str]:
    """A DSN to a fresh, empty PostgreSQL database for one test."""
    with fresh_database(pg_server) as dsn:
        yield dsn
