"""Secrets out of process command lines, before anything stores or shows them.

A command line is evidence (which process holds the memory) but it can carry credentials:
``--password=…``, ``token=…`` in a query string, ``postgresql://user:pass@host``, an AWS
access key id. The collector redacts each command line as it reads it (so the Job's log, the
store and every message only ever see the redacted form), and the evidence model redacts again
on parse, so a bundle from an older collector is cleaned too. Redaction keeps the shape (the
flag or key stays, its value becomes ``***``) so a reader still sees what the process is.

Pure: the table of patterns below is the whole policy; tests/core/test_redaction.py has a row
per pattern and per near miss.
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    import re

MASK = "***"

#: words that name a secret when a flag or a key ends with them (``--db-password``,
#: ``AWS_SECRET_ACCESS_KEY``); ``--token-file PATH`` and ``max_tokens=8`` are not secrets
_SECRET_WORD = (
    r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key|session[_-]?key)"
)

#: (name, pattern, replacement), applied in order; ``patterns()`` compiles them, once, on first
#: use: an ordinary command line never needs them (``MAYBE_SECRET``), and compiling them costs
#: ~1.5 ms of every ``gpunode collect`` run
TABLE: tuple[tuple[str, str, str], ...] = (
    # scheme://user:password@host -> scheme://user:***@host (DSNs, proxies, git remotes)
    (
        "url-credentials",
        r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@]*):([^\s/@]+)@",
        rf"\1:{MASK}@",
    ),
    # --password=VALUE, -password=VALUE, --db-token=VALUE
    (
        "flag-equals",
        rf"(?i)(?<!\S)(--?[a-z0-9_.-]*{_SECRET_WORD})=(\S+)",
        rf"\1={MASK}",
    ),
    # --password VALUE (the value is the next word, unless it is another flag)
    (
        "flag-space",
        rf"(?i)(?<!\S)(--?[a-z0-9_.-]*{_SECRET_WORD})\s+(?!-)(\S+)",
        rf"\1 {MASK}",
    ),
    # token=VALUE, PGPASSWORD=VALUE, AWS_SECRET_ACCESS_KEY=VALUE, ?api_key=VALUE&…
    (
        "key-equals",
        rf"(?i)(?<![\w-])([a-z0-9_.]*{_SECRET_WORD})=([^\s&;]+)",
        rf"\1={MASK}",
    ),
    # Authorization: Bearer VALUE
    ("bearer", r"(?i)\b(bearer)\s+[a-z0-9._~+/=-]{8,}", rf"\1 {MASK}"),
    # AWS access key ids (long-term AKIA…, temporary ASIA…)
    ("aws-access-key-id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", MASK),
    # Slack and GitHub tokens, wherever they appear
    ("slack-token", r"\bxox[abposr]-[0-9A-Za-z-]{10,}", MASK),
    ("github-token", r"\bgh[pousr]_[0-9A-Za-z]{36,}\b", MASK),
)


#: what every pattern above needs somewhere in the text, lower-cased (a superset: each
#: secret word holds one of these, and so do URLs with a user, bearer tokens, AWS key ids,
#: Slack and GitHub tokens): an ordinary command line holds none, and checking so is a few
#: substring scans instead of eight regular expressions (a 5,000-process bundle parses in a
#: fraction of the time, issue #25)
MAYBE_SECRET = (
    "://",
    "passw",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "key",
    "credential",
    "bearer",
    "akia",
    "asia",
    "xox",
    # GitHub tokens start gh[pousr]_: a bare "gh" is in "weights", "high", "throughput", so
    # a training job's command line would compile the table (and import re) for nothing
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
)


def maybe_secret(text: str) -> bool:
    """Whether ``text`` holds one of ``MAYBE_SECRET`` (any case). A loop of ``in``: as fast as
    one regular expression of the words (~3 us a command line either way), and it spares the
    collector importing ``re`` (~7 ms of its start-up)."""
    low = text.lower()
    for word in MAYBE_SECRET:  # noqa: SIM110 - any() over a generator is 1.5x slower
        if word in low:
            return True
    return False


def redact_command_line(text: str) -> str:
    """``text`` with every secret the table recognises replaced by ``***`` (idempotent)."""
    if not maybe_secret(text):
        return text
    return redact_every_pattern(text)


Compiled = tuple[tuple[str, "re.Pattern[str]", str], ...]
_COMPILED: list[Compiled] = []  # a cache by hand: ``functools`` costs ~1 ms of start-up


def patterns() -> Compiled:
    """``TABLE`` with each pattern compiled (once, on first use)."""
    if not _COMPILED:
        import re

        _COMPILED.append(tuple((name, re.compile(p), repl) for name, p, repl in TABLE))
    return _COMPILED[0]


def redact_every_pattern(text: str) -> str:
    """Every pattern of the table applied, without the ``MAYBE_SECRET`` shortcut."""
    for _name, pattern, replacement in patterns():
        text = pattern.sub(replacement, text)
    return text
