"""Builds the collector's optional C module, ``bot.collectors._statm`` (``_statm.c``), in place.

``python -m bot.collectors.native [FOLDER]`` compiles ``_statm.c`` beside this file into
FOLDER (default: this folder) as ``_statm`` plus this interpreter's extension suffix
(``_statm.cpython-311-x86_64-linux-gnu.so``), for this interpreter's headers. ``make setup``
runs it, and so does the collector image's ``native`` stage (Dockerfile: the slim images have
no compiler).

The module is a speed-up, never a requirement: ``procfs.rank_by_statm`` reads the same files
the same way in Python when it is absent, when it fails to import, or when ``GPUNODE_NATIVE=0``
is set. So a machine without a compiler or without Python's headers builds nothing and says
why (exit 0); a compiler that fails on a machine that has both is an error (exit 1). An
up-to-date module (newer than its source) is left as it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_statm.c"
MODULE = "_statm"


def target(folder: Path = HERE) -> Path:
    """Where the module for this interpreter goes."""
    return folder / f"{MODULE}{sysconfig.get_config_var('EXT_SUFFIX')}"


def missing() -> str | None:
    """Why this machine cannot build the module, or None when it can."""
    if shutil.which(compiler()) is None:
        return f"no C compiler ({compiler()!r} not found; set CC)"
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        return f"no Python headers ({include}/Python.h; install the python3-dev package)"
    return None


def compiler() -> str:
    return os.environ.get("CC") or "cc"


def command(out: Path) -> list[str]:
    """The compiler's arguments: no shell, nothing from outside but CC."""
    return [
        compiler(),
        "-O2",
        "-fPIC",
        "-shared",
        "-Wall",
        "-Wextra",
        f"-I{sysconfig.get_paths()['include']}",
        str(SOURCE),
        "-o",
        str(out),
    ]


def build(folder: Path = HERE, *, force: bool = False) -> Path:
    """Compiles the module into ``folder`` (replaced whole) and returns its path. Raises
    ``RuntimeError`` with the reason when this machine cannot build it, and
    ``subprocess.CalledProcessError`` when the compiler fails."""
    why = missing()
    if why is not None:
        raise RuntimeError(why)
    out = target(folder)
    if not force and out.exists() and out.stat().st_mtime >= SOURCE.stat().st_mtime:
        return out
    folder.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    try:
        subprocess.run(command(temporary), check=True, timeout=300)
        os.replace(temporary, out)
    finally:
        temporary.unlink(missing_ok=True)
    return out


def main(argv: list[str]) -> int:
    usage = "usage: python -m bot.collectors.native [FOLDER]"
    if argv[:1] in (["-h"], ["--help"]):
        print(f"{usage}\n\n{__doc__}")
        return 0
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(usage, file=sys.stderr)
        return 2
    folder = Path(argv[0]) if argv else HERE
    try:
        print(build(folder))
    except RuntimeError as exc:
        print(f"bot.collectors._statm not built: {exc}; the collector reads statm in Python")
        return 0
    except subprocess.CalledProcessError as exc:
        print(f"bot.collectors._statm: the compiler failed ({exc.returncode})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
