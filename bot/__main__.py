"""`python -m bot` is the same as the `gpunode` command.

The diagnostic Job runs this file by its path, ``python -I -S /opt/gpunode/bot/__main__.py
collect ...``, not ``-m``: ``-m`` imports runpy (and through it importlib.util, contextlib,
collections and functools) and ``site`` reads site-packages' .pth files, ~7 ms of CPU of a run
that reads a 2,000-process node in ~45 (issue #25). Run that way, ``-I`` keeps this file's own
folder off ``sys.path``, so the folder that holds the ``bot`` package (``/opt/gpunode`` in the
collector image, which also holds NVML's bindings) goes first, and nothing else is added.

The Job's own run (this file, ``collect``) also does without the two things a short process
that builds no reference cycles pays for nothing (issue #25: ~11% of its instructions on a
2,000-process node, counted with callgrind): the cyclic garbage collector, which walks the
young objects every 700 allocations while the process table is read, and the interpreter's
teardown (a last collection, every module emptied), which only frees memory the kernel takes
back at exit anyway. The output is flushed first; when that fails, the ordinary teardown
runs, which reports it and exits 120. Its modules come from the code pack when one was built
(``bot.collectors.codepack``: one file instead of an import per module, ~0.5 ms; issue #25).
"""

import sys
from posix import _exit, getcwd  # os's own: ``import os`` is ~6M instructions of the Job's run

JOB_RUN = not __package__ and sys.argv[1:2] == ["collect"]  # the file, not ``-m``: the Job

if JOB_RUN:
    import gc

    gc.disable()

if not __package__:  # run as a file, not as ``python -m bot``
    here = __file__ if __file__.startswith("/") else f"{getcwd()}/{__file__}"  # absolute
    home = here.rsplit("/", 2)[0]  # the folder that holds bot/
    sys.path.insert(0, home)

status: int | None = None
if JOB_RUN:  # collect's own runner: neither bot.cli.main nor all of bot.errors (issue #25)
    from bot.collectors.codepack import install

    install(home)  # its modules from one file, when a pack was built
    from bot.collectors.cli import run_job

    status = run_job(sys.argv[2:])
if status is None:  # not the Job, or words only argparse can judge (help, a usage error)
    from bot.cli import main

    status = main()
if not JOB_RUN:
    raise SystemExit(status)
try:
    sys.stdout.flush()
    sys.stderr.flush()
except OSError:  # the output is not written: Python's teardown says why and exits 120
    raise SystemExit(status) from None
_exit(status)
