"""One log line per record, whatever a user put in the values it logs.

Slack texts, alert labels, node and pod names reach log messages. A newline in one of them
would start a line that reads like a record of its own (a forged ``CRITICAL``); an escape
sequence could rewrite the terminal. ``OneLineFormatter`` escapes every control character in
the message (``\\n`` becomes the two characters ``\\`` ``n``) and indents each line of a
traceback, so a line that starts at column 0 is always the start of a real record.
``configure_logging`` installs it on the root logger; ``gpunode serve`` calls it once.
"""

from __future__ import annotations

import logging
import re
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# C0 and C1 controls, DEL, and the Unicode line and paragraph separators
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
TRACE_INDENT = "    "


def escape_controls(text: str) -> str:
    """``text`` with each control character written as its Python escape (``\\n``, ``\\x1b``)."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class OneLineFormatter(logging.Formatter):
    """The message on one line; traceback and stack lines indented under it."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = escape_controls(record.getMessage())
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        head = escape_controls(self.formatMessage(record))
        extra = []
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            extra.append(record.exc_text)
        if record.stack_info:
            extra.append(self.formatStack(record.stack_info))
        lines = "\n".join(extra).splitlines()
        return head + "".join(f"\n{TRACE_INDENT}{escape_controls(line)}" for line in lines)


def configure_logging(level: str) -> logging.Handler:
    """Log to stderr through ``OneLineFormatter``; replaces the root logger's handlers."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
