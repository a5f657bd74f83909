"""Where the store's calls run: a runner per engine, chosen by the store's target.

``postgresql://...`` (or ``postgres://``) selects PostgreSQL; anything else is SQLite (a
path, ``sqlite:///path`` or ``:memory:``). A runner hands a row function a ``Db`` on a
worker thread and returns its result to the event loop; driver errors arrive as
``DbError`` and leave as ``StoreError`` (in ``storing``).

SQLite: one writer connection on one thread (writes in submission order) and one reader
connection on another (WAL readers never wait behind a writer). PostgreSQL: a pool of
``PG_POOL_SIZE`` connections used by as many threads, so concurrent requests are concurrent
transactions and the server arbitrates them.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bot.errors import StoreError
from bot.store import sqlite
from bot.store.db import Db, EngineName

T = TypeVar("T")
#: connections (and threads) per replica: claims and appends hold one for milliseconds, so a
#: handful serve 100 concurrent clicks; 2 replicas x 8 stays far below max_connections=100
PG_POOL_SIZE = 8


class Runner(Protocol):
    engine: EngineName
    #: what to name in messages: the SQLite path, or the DSN without its password
    where: str

    async def write(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T: ...

    async def read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T: ...

    async def close(self) -> None: ...


def _call(db: Db, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    return fn(db, *args, **kwargs)


class SqliteRunner:
    engine: EngineName = "sqlite"

    def __init__(
        self,
        where: str,
        writer: tuple[ThreadPoolExecutor, Db],
        reader: tuple[ThreadPoolExecutor, Db] | None,
    ) -> None:
        self.where = where
        self._writer = writer
        self._reader = reader

    @classmethod
    async def open(cls, path: str) -> SqliteRunner:
        path = sqlite.path_of(path)
        loop = asyncio.get_running_loop()
        writes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpunode-store")
        try:
            wconn = await loop.run_in_executor(writes, partial(sqlite.connect, path))
        except BaseException:
            writes.shutdown(wait=False)
            raise
        if path == sqlite.MEMORY:  # one database per connection: the reader is the writer
            return cls(path, (writes, wconn), None)
        reads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpunode-store-read")
        try:
            rconn = await loop.run_in_executor(reads, partial(sqlite.connect, path, migrate=False))
        except BaseException:
            reads.shutdown(wait=False)
            await loop.run_in_executor(writes, wconn.close)
            writes.shutdown(wait=False)
            raise
        return cls(path, (writes, wconn), (reads, rconn))

    async def write(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        executor, db = self._writer
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, partial(_call, db, fn, args, kwargs))

    async def read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        if self._reader is None:
            return await self.write(fn, *args, **kwargs)
        executor, db = self._reader
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, partial(_call, db, fn, args, kwargs))

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        for executor, db in [r for r in (self._reader, self._writer) if r is not None]:
            await loop.run_in_executor(executor, db.close)
            executor.shutdown(wait=True)


class PostgresRunner:
    engine: EngineName = "postgres"

    def __init__(self, where: str, pool: Any, executor: ThreadPoolExecutor) -> None:
        self.where = where
        self._pool = pool
        self._executor = executor

    @classmethod
    async def open(cls, dsn: str) -> PostgresRunner:
        from bot.store import postgres  # psycopg is imported only when PostgreSQL is chosen

        executor = ThreadPoolExecutor(max_workers=PG_POOL_SIZE, thread_name_prefix="gpunode-pg")
        loop = asyncio.get_running_loop()
        try:
            pool = await loop.run_in_executor(
                executor, partial(postgres.open_pool, dsn, size=PG_POOL_SIZE)
            )
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(postgres.redact(dsn), pool, executor)

    def _pooled(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        from bot.store import postgres

        with postgres.pooled(self._pool) as db:
            return fn(db, *args, **kwargs)

    async def write(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(self._pooled, fn, args, kwargs))

    async def read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return await self.write(fn, *args, **kwargs)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._pool.close)
        self._executor.shutdown(wait=True)


def is_postgres(target: str) -> bool:
    """``postgresql://`` / ``postgres://`` DSNs select PostgreSQL; anything else is SQLite."""
    return target.startswith(("postgresql://", "postgres://"))


async def open_runner(target: str) -> Runner:
    if is_postgres(target):
        return await PostgresRunner.open(target)
    return await SqliteRunner.open(target)


def connect(target: str, *, migrate: bool = True) -> Db:
    """One synchronous connection to ``target`` (tools, tests, child processes)."""
    if is_postgres(target):
        from bot.store import postgres

        return postgres.connect(target, migrate=migrate)
    return sqlite.connect(target, migrate=migrate)


def demo_store_path() -> Path:
    """Where ``gpunode demo`` keeps its store, a well-known path (not a temporary directory)
    so ``gpunode status|audit|timeline`` find it while the demo runs and after it stops:
    ``$XDG_STATE_HOME/gpunode/demo.db`` (``~/.local/state`` when unset)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "gpunode" / "demo.db"


def demo_settings_path() -> Path:
    """The settings file ``gpunode demo`` writes beside its store (the store, the stand-ins'
    URLs and tokens) for the CLI to read the demo with (``bot.cli.common.cli_settings``)."""
    return demo_store_path().with_name("demo.yaml")


def require_existing(target: str) -> str:
    """``target``, or a ``StoreError`` when it names a SQLite file that does not exist (the
    CLI reads the bot's store; it must not create an empty one by mistake), or a path that
    is not a file."""
    if is_postgres(target):
        return target
    path = sqlite.path_of(target)
    # not a file: missing, a folder, or an empty setting (which names the working folder)
    if path != sqlite.MEMORY and not Path(path).expanduser().is_file():
        raise StoreError(
            f"no incident store at {path}; set store.path (GPUNODE_STORE__PATH) to the bot's "
            "database file, or store.dsn (GPUNODE_STORE__DSN) to its PostgreSQL DSN",
            key="store_missing",
            params={"path": str(path)},
        )
    return target
