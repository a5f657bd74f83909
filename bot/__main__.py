"""`python -m bot` is the same as the `gpunode` command."""

from bot.cli import main

raise SystemExit(main())
