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
#: use: an ordinary command line never needs them (``maybe_secret``), and compiling them costs
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


#: how every secret word of the patterns above ends (``api-key`` in ``key``, ``credentials?``
#: in ``credential`` or ``credentials``), and ``bearer``: the case-insensitive patterns that
#: name a secret need one of these right before an ``=`` or a space (``\\s``)
SECRET_ENDINGS = (
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "key",
    "credential",
    "credentials",
    "bearer",
)
#: what the case-sensitive patterns need, as written: AWS key ids, Slack and GitHub tokens
TOKEN_PREFIXES = ("AKIA", "ASIA", "xox", "ghp_", "gho_", "ghu_", "ghs_", "ghr_")


def maybe_secret(text: str) -> bool:
    """Whether a pattern of ``TABLE`` could match ``text``: false only when none can, so an
    ordinary command line is judged by a few substring searches instead of eight regular
    expressions (and the collector never imports ``re``, ~7 ms of its start-up, issue #25).

    What each pattern needs: a URL with a user (``://`` and ``@``); a secret word ending
    (``SECRET_ENDINGS``) right before ``=``, or before a space in a flag (a word that starts
    with ``-``) or as ``bearer``; or a token prefix (``TOKEN_PREFIXES``, case-sensitive as its
    pattern is). Words merely holding a secret word (``--password-store=basic``,
    ``--tls-private-key-file=PATH``, ``--token-file PATH``, ``/pki/kubelet.key``) need no
    pattern. Text that is not ASCII always goes to the patterns: case-insensitive matching
    of other characters is not ``str.lower``'s (``ſ`` matches ``s``, ``\\s`` matches
    ``\\xa0``)."""
    if not text.isascii():
        return True
    low = text.lower()
    if "://" in low and "@" in low:
        return True
    for ending in SECRET_ENDINGS:
        at = low.find(ending)
        while at >= 0:
            after = low[at + len(ending) : at + len(ending) + 1]
            if after == "=":
                return True
            # before a space (re's \s, for ASCII: str.isspace): a flag's value, or a bearer's
            if after.isspace() and (ending == "bearer" or _in_a_flag(low, at)):
                return True
            at = low.find(ending, at + 1)
    for prefix in TOKEN_PREFIXES:  # noqa: SIM110 - any() over a generator is 1.5x slower
        if prefix in text:
            return True
    return False


#: what a flag-space pattern allows between a flag's first ``-`` and its secret word
_FLAG_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_.-"


def _in_a_flag(low: str, at: int) -> bool:
    """Whether the word (between spaces) of lower-case ``low`` that holds ``low[at]`` is a
    flag up to there: ``-`` first, then only ``_FLAG_CHARS`` (``--db-password``, not
    ``--key-file=/etc/x.key``)."""
    start = at
    while start and not low[start - 1].isspace():
        start -= 1
    head = low[start:at]
    return head.startswith("-") and not head.strip(_FLAG_CHARS)


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
    """Every pattern of the table applied, without the ``maybe_secret`` shortcut."""
    for _name, pattern, replacement in patterns():
        text = pattern.sub(replacement, text)
    return text
