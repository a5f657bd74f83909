"""The few ``os`` functions the collectors use, without importing ``os``.

``import os`` is ~6M instructions, ~1.5 ms, of the diagnostic Job's run (issue #25: os.py
builds ``os.environ`` and imports ``_collections_abc``'s ABCs and ``os.path``), and the
interpreter that runs ``bot/__main__.py -I -S`` has not imported it. The system calls are
``posix``'s, which ``os`` re-exports; the rest are ``os``'s own definitions in a few lines:
``fsencode``/``fsdecode`` (the file system encoding and its error handler), ``exists`` and
``isdir`` (``os.path``'s: false on any ``OSError`` or ``ValueError``), and ``getenv``
(``os.environ`` once something has imported ``os`` and may have changed it, else the
environment the process started with). ``read_file`` reads a whole file by these calls alone:
a built-in ``open()`` creates three io objects per file and makes five more system calls
(``fstat`` twice, an ``ioctl`` and two ``lseek``), ~10 us of each of the many small files a
node's collection reads.
"""

from __future__ import annotations

import sys
from posix import (
    O_NONBLOCK,
    O_RDONLY,
    close,
    listdir,
    open,
    read,
    scandir,
    stat,
    sysconf,
    uname,
)
from posix import environ as _environ_at_start

__all__ = [
    "O_NONBLOCK",
    "O_RDONLY",
    "close",
    "exists",
    "fsdecode",
    "fsencode",
    "getenv",
    "isdir",
    "listdir",
    "open",
    "read",
    "read_file",
    "scandir",
    "stat",
    "sysconf",
    "uname",
]

_S_IFMT, _S_IFDIR = 0o170000, 0o040000  # stat.S_ISDIR's test


def fsencode(filename: str) -> bytes:
    """``os.fsencode`` of a str."""
    return filename.encode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def fsdecode(filename: bytes) -> str:
    """``os.fsdecode`` of bytes."""
    return filename.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def exists(path: str) -> bool:
    """``os.path.exists``."""
    try:
        stat(path)
    except (OSError, ValueError):
        return False
    return True


def isdir(path: str) -> bool:
    """``os.path.isdir``."""
    try:
        st = stat(path)
    except (OSError, ValueError):
        return False
    return st.st_mode & _S_IFMT == _S_IFDIR


def read_file(path: str) -> bytes:
    """The whole file's bytes (``OSError`` as ``open`` raises it, or ``read`` for a folder)."""
    fd = open(path, O_RDONLY)
    try:
        chunks = []
        while chunk := read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        close(fd)


def getenv(name: str) -> str | None:
    """``os.environ.get(name)``."""
    os = sys.modules.get("os")
    if os is not None:  # os.environ: what the process has set since it started
        value: str | None = os.environ.get(name)
        return value
    raw = _environ_at_start.get(fsencode(name))
    return None if raw is None else fsdecode(raw)
