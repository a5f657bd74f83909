"""`python -m bot` is the same as the `gpunode` command.

The diagnostic Job runs this file by its path, ``python -I -S /opt/gpunode/bot/__main__.py
collect ...``, not ``-m``: ``-m`` imports runpy (and through it importlib.util, contextlib,
collections and functools) and ``site`` reads site-packages' .pth files, ~7 ms of CPU of a run
that reads a 2,000-process node in ~45 (issue #25). Run that way, ``-I`` keeps this file's own
folder off ``sys.path``, so the folder that holds the ``bot`` package (``/opt/gpunode`` in the
collector image, which also holds NVML's bindings) goes first, and nothing else is added.
"""

import os
import sys

if not __package__:  # run as a file, not as ``python -m bot``
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bot.cli import main  # after the path, when run as a file

raise SystemExit(main())
