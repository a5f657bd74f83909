"""The diagnostic Job's code in one file: every ``bot`` module ``gpunode collect`` imports,
compiled, in a single marshalled pack that its run loads at once.

Why: the Job's run imports about fifteen ``bot`` modules, and each ordinary import is the
path finder's work in Python (a spec, the ``__pycache__`` name, a ``stat``, an open and a read
of the ``.pyc``, its header checked) before the module's code runs: ~1 ms of a run that reads a
2,000-process node in ~35 ms (issue #25). From the pack, an import is a dictionary look-up, one
``stat`` and the module's code.

The pack is a cache, checked as ``.pyc`` files are, and never needed:

- ``build(home)`` writes it (``python -m bot.collectors.codepack HOME``): the collector image
  runs that after byte-compiling its code, and bench/collect.py before timing. What it holds is
  measured, not listed: the ``bot`` modules a fresh interpreter imports for
  ``bot.collectors.cli`` (the Job's runner), each compiled from its source as it is on disk.
- ``install(home)`` (``bot/__main__.py``, the Job's run only) puts a finder for the pack first
  on ``sys.meta_path``. It serves a module only when the pack was built by this interpreter's
  bytecode version (its magic number) for this very ``home``, and the module's source has the
  size and modification time (in whole seconds) it had when it was compiled (``.pyc``'s own
  rule): a changed source, a module added since, a moved tree or a pack that is missing,
  truncated or foreign are all imported the ordinary way. So a stale pack costs time, never
  correctness.
"""

from __future__ import annotations

import sys
from _frozen_importlib import ModuleSpec  # importlib.machinery's, without importing importlib
from _frozen_importlib_external import MAGIC_NUMBER  # this interpreter's bytecode version
from marshal import loads
from posix import stat

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    from types import CodeType, ModuleType

    #: module name -> (source path, is a package, source mtime in whole seconds, size, code)
    Entries = dict[str, tuple[str, bool, int, int, CodeType]]

#: the modules the pack holds: those this one imports (the Job's runner), and nothing else
ROOT_MODULE = "bot.collectors.cli"
#: a source's modification time is compared in whole seconds, as a ``.pyc`` file's is: an
#: image layer's archive need not keep the nanoseconds the build saw
_NS = 1_000_000_000


def pack_path(home: str) -> str | None:
    """Where the pack of the ``bot`` package in ``home`` lives: beside its ``.pyc`` files,
    named for this interpreter's cache tag (``cpython-311``). None when the interpreter has
    no cache tag (it then writes no ``.pyc`` either)."""
    tag = sys.implementation.cache_tag
    return None if tag is None else f"{home}/bot/__pycache__/collect.{tag}.pack"


class PackFinder:
    """A ``sys.meta_path`` finder and loader for the modules of one pack."""

    def __init__(self, entries: Entries) -> None:
        self.entries = entries

    def find_spec(
        self, name: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """The module's spec when the pack holds it and its source is unchanged, else None
        (the next finder, the ordinary one, imports it)."""
        entry = self.entries.get(name)
        if entry is None:
            return None
        origin, is_package, mtime_s, size, _code = entry
        try:
            st = stat(origin)
        except (OSError, ValueError):
            return None
        if st.st_mtime_ns // _NS != mtime_s or st.st_size != size:
            return None  # changed since the pack was built
        # a loader as importlib's protocol has it (create_module, exec_module), not by class
        spec = ModuleSpec(name, self, origin=origin, is_package=is_package)  # type: ignore[arg-type]
        spec.has_location = True  # __file__ is the source, as an ordinary import sets it
        if is_package:
            spec.submodule_search_locations = [origin.rpartition("/")[0]]
        return spec

    def create_module(self, spec: ModuleSpec) -> None:
        """The default module object."""
        return None

    def exec_module(self, module: ModuleType) -> None:
        """Runs the module's packed code in its namespace."""
        exec(self.entries[module.__name__][4], module.__dict__)  # noqa: S102 (our own code)


def read_pack(home: str) -> Entries | None:
    """The pack's entries for ``home``, or None when there is none usable: missing,
    unreadable, truncated, of another bytecode version or built for another folder."""
    path = pack_path(home)
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        if data[:4] != MAGIC_NUMBER:
            return None
        # our own compiled code, beside (and as trusted as) the .pyc files the import reads
        built_for, entries = loads(memoryview(data)[4:])  # noqa: S302
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if built_for != home or not isinstance(entries, dict):
        return None
    return entries


def install(home: str) -> bool:
    """Puts the pack's finder first on ``sys.meta_path`` when ``home`` has a usable pack;
    whether it did."""
    entries = read_pack(home)
    if not entries:
        return False
    sys.meta_path.insert(0, PackFinder(entries))
    return True


def imported_modules(home: str, *, python: str = sys.executable) -> list[tuple[str, str]]:
    """(name, source path) of every ``bot`` module under ``home`` that ``import
    ROOT_MODULE`` brings in, measured in a fresh ``python -I -S`` (as the Job starts), in the
    order they were first imported."""
    import subprocess

    probe = (
        "import sys\n"
        f"sys.path.insert(0, {home!r})\n"
        f"import {ROOT_MODULE}\n"
        "for name, module in list(sys.modules.items()):\n"
        "    origin = getattr(module.__spec__, 'origin', None)\n"
        "    if (name == 'bot' or name.startswith('bot.')) and origin:\n"
        "        print(name, origin)\n"
    )
    out = subprocess.run(
        [python, "-I", "-S", "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    bot_dir = f"{home}/bot/"
    found = [tuple(line.split(" ", 1)) for line in out.splitlines()]
    # Python sources only: a C module (``_statm``, when built) is imported the ordinary way
    return [(n, o) for n, o in found if o.startswith(bot_dir) and o.endswith(".py")]


def build(home: str, *, python: str = sys.executable) -> str:
    """Writes the pack of the ``bot`` package in ``home`` (an absolute path) and returns its
    path: the modules ``imported_modules`` finds, each compiled from its source as
    ``py_compile`` does. The file is replaced whole (a reader sees the old pack or the new)."""
    import marshal
    import os

    path = pack_path(home)
    if path is None:
        raise RuntimeError("this interpreter has no cache tag: it writes no compiled code")
    if not home.startswith("/"):
        raise ValueError(f"the pack's home must be an absolute path, not {home!r}")
    entries: dict[str, tuple[str, bool, int, int, object]] = {}
    for name, origin in imported_modules(home, python=python):
        st = os.stat(origin)  # before the read: a later change makes the entry stale, not wrong
        with open(origin, "rb") as fh:
            source = fh.read()
        code = compile(source, origin, "exec", dont_inherit=True)
        is_package = origin.endswith("/__init__.py")
        entries[name] = (origin, is_package, st.st_mtime_ns // _NS, st.st_size, code)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "wb") as fh:
        fh.write(MAGIC_NUMBER + marshal.dumps((home, entries)))
    os.replace(temporary, path)
    return path


if __name__ == "__main__":  # python -m bot.collectors.codepack HOME
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m bot.collectors.codepack HOME (the folder of bot/)")
    print(build(sys.argv[1]))
