"""Command lines lose their secrets, and keep everything a reader needs to name the process."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.collectors.procfs import parse_cmdline
from bot.core.model.evidence import ProcessMemory
from bot.core.model.redaction import (
    maybe_secret,
    patterns,
    redact_command_line,
    redact_every_pattern,
)


@pytest.mark.parametrize(
    ("raw", "redacted"),
    [
        (
            "python train.py --password=hunter2 --epochs 3",
            "python train.py --password=*** --epochs 3",
        ),
        ("psql --db-password hunter2 -c select", "psql --db-password *** -c select"),
        ("app --api-key=abc123 --client-secret=s3cr3t", "app --api-key=*** --client-secret=***"),
        (
            "curl https://x.example/v1?token=abc&page=2",
            "curl https://x.example/v1?token=***&page=2",
        ),
        (
            "env PGPASSWORD=hunter2 AWS_SECRET_ACCESS_KEY=wJalrXUt/K7MDENG pg_dump",
            "env PGPASSWORD=*** AWS_SECRET_ACCESS_KEY=*** pg_dump",
        ),
        (
            "worker postgresql://gpunode:hunter2@db.example:5432/gpunode",
            "worker postgresql://gpunode:***@db.example:5432/gpunode",
        ),
        (
            "git clone https://oauth2:glpat-abc@gitlab.example/x.git",
            "git clone https://oauth2:***@gitlab.example/x.git",
        ),
        (
            "aws s3 cp --profile AKIAIOSFODNN7EXAMPLE s3://b/k .",
            "aws s3 cp --profile *** s3://b/k .",
        ),
        (
            "curl -H Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.x",
            "curl -H Authorization: Bearer ***",
        ),
        ("bot xoxb-1234567890-abcdefghij", "bot ***"),
    ],
)
def test_a_secret_in_a_command_line_is_replaced_and_its_name_kept(raw: str, redacted: str) -> None:
    assert redact_command_line(raw) == redacted


@pytest.mark.parametrize(
    "innocent",
    [
        "python train.py --epochs 3 --lr=0.001",
        "vllm serve --max-tokens=4096 --max_tokens 8",
        "kubelet --token-file /var/run/secrets/token --config=/etc/kubernetes/kubelet.conf",
        "postgres -D /var/lib/postgresql/data",
        "nginx: worker process",
        "https://example.com/path?page=2",
    ],
)
def test_a_command_line_without_secrets_is_left_as_it_is(innocent: str) -> None:
    assert redact_command_line(innocent) == innocent


def test_every_pattern_in_the_table_is_exercised() -> None:
    # the rows above cover each pattern at least once (a new pattern needs a new row)
    rows = [
        "--password=a",
        "--password b",
        "token=c",
        "u://x:y@h",
        "Bearer abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "xoxb-1234567890-abcdef",
        "ghp_" + "a" * 36,
    ]
    for name, pattern, _ in patterns():
        assert any(pattern.search(row) for row in rows), name


def test_redaction_is_idempotent() -> None:
    once = redact_command_line("a --password=x postgresql://u:p@h token=t")
    assert redact_command_line(once) == once


def test_the_collector_redacts_as_it_reads_and_before_it_truncates() -> None:
    argv = b"python\0train.py\0--password=" + b"s" * 600 + b"\0"
    text = parse_cmdline(argv)
    assert text == "python train.py --password=***"
    assert "sss" not in text


def test_a_bundle_from_an_older_collector_is_redacted_when_parsed() -> None:
    proc = ProcessMemory(pid=1, command="psql", cmdline="psql --password=hunter2", rss_bytes=1)
    assert proc.cmdline == "psql --password=***"


def test_the_quick_check_lets_through_every_text_a_pattern_would_change() -> None:
    # maybe_secret only skips work: on texts built from every pattern's trigger, in every
    # case and place, the shortcut and the full table agree
    triggers = [
        "--password=a",
        "--Db-PassWD b",
        "-api_key=c",
        "access-key=d",
        "Private_Key=e",
        "credential=f",
        "x?session-key=g&h=1",
        "u://x:y@h",
        "HTTPS://u:p@host",
        "BEARER abcdefghijk",
        "AKIAIOSFODNN7EXAMPLE",
        "ASIAIOSFODNN7EXAMPL2",
        "xoxp-1234567890-abcdef",
        *(f"gh{kind}_" + "b" * 36 for kind in "pousr"),
    ]
    for trigger in triggers:
        for text in (trigger, f"prog {trigger} --n 3", f"a{trigger}", trigger.upper()):
            assert redact_command_line(text) == redact_every_pattern(text), text
            if redact_every_pattern(text) != text:
                assert maybe_secret(text), text
    assert not maybe_secret("python train.py --epochs 3 --lr=0.001")
    # words that merely hold "gh", as ML command lines often do
    assert not maybe_secret("python train.py --weights /ckpt/high.pt --throughput-log x")


#: pieces of what the patterns look for, near misses and characters whose case or space-ness
#: is not ASCII's (re matches ``ſ`` to ``s`` under IGNORECASE, and ``\s`` to ``\xa0``)
_PIECES = [
    *("password", "PassWD", "passphrase", "pwd", "Secret", "TOKEN", "key", "api_", "access-"),
    *("credential", "credentials", "session", "private", "Bearer", "-store", "-file"),
    *("=", " ", "\t", "\x1c", "\xa0", "-", "--", "://", "http", "@", ":", "/", "&", "?"),
    *("AKIA", "asia", "ASIA", "xoxb-", "xox", "ghp_", "gh", "abcdefgh", "0123456789ABCDEF"),
    *("ſ", "K", "İ", "ı", "é", "x", "_"),
]


@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=3), max_size=12).map("".join))
def test_the_quick_check_never_skips_a_text_a_pattern_would_change(text: str) -> None:
    assert redact_every_pattern(text) == text or maybe_secret(text)


@pytest.mark.parametrize(
    "ordinary",
    [
        # seen among a machine's largest processes: each made the collector import re
        "/usr/lib/chromium/chromium --password-store=basic --enable-features=KeyboardLock",
        "kubectl --server http://127.0.0.1:42725 auth can-i patch deployments.apps -A",
        "kubelet --tls-private-key-file=/var/lib/kubelet/pki/kubelet.key --token-file /t",
        "python -c import sys; from bot.collectors.gaps import GapLog  # secrets, tokens",
    ],
)
def test_a_command_line_that_merely_names_a_secret_word_needs_no_pattern(ordinary: str) -> None:
    assert not maybe_secret(ordinary)
    assert redact_every_pattern(ordinary) == ordinary
