"""A command that does not parse is answered in the asker's language: the grammar raises a
``UsageError`` with a key and raw parameters, the catalog words it, and an English reader
reads exactly the error's own text. Each malformed command below is parsed by the grammar
itself; what the reader is shown is rendered as the Slack presenter renders it."""

from __future__ import annotations

import json

import pytest

from bot.core.governance.commands import parse, parse_in_thread
from bot.core.model.clusters import NodeRef
from bot.core.model.durations import parse_duration
from bot.errors import UsageError
from bot.render.errors import error_text
from tests.render.test_catalogs import english_words
from tests.render.told import render_notice

#: malformed commands, each met by a different check of the grammar
MALFORMED = [
    "diagnose",
    "prevent",
    "resolve",
    "diagnose gpu-node-01 gpu-node-02",
    "status prod-eu/gpu-node-01 extra",
    "diagnose " + "n" * 254,
    "diagnose GPU-Node-01",
    "diagnose gpu_node!",
    "diagnose Prod-EU/gpu-node-01",
    "diagnose prod.eu/gpu-node-01",
    "diagnose /gpu-node-01",
    "diagnose " + "c" * 64 + "/n1",
    "diagnose prod-eu/",
    "diagnose prod-ap/gpu-node-01",
    "timeline zero",
    "diagnoes gpu-node-01",
    "frobnicate",
    "help diagnoes",
    "help xyzzy",
]


def _raised(text: str) -> UsageError:
    with pytest.raises(UsageError) as caught:
        parse(text, clusters=("prod-eu", "prod-us"))
    return caught.value


@pytest.mark.parametrize("text", MALFORMED)
def test_a_malformed_command_reads_as_its_own_text_in_english_and_without_english_in_chinese(
    text: str,
) -> None:
    err = _raised(text)
    assert err.key, f"{text!r}: the usage error has no key"
    assert error_text(err.key, err.params, "«no words»", "en") == err.message
    zh = error_text(err.key, err.params, "«no words»", "zh-CN")
    assert zh != err.message
    assert english_words(zh) == [], zh
    assert english_words(error_text(err.key, err.params, "«no words»", "en-XA")) == []


@pytest.mark.parametrize("text", ["frobnicate", "diagnose", "help xyzzy"])
def test_the_usage_error_a_zh_cn_reader_is_shown_has_no_english_sentence(text: str) -> None:
    err = _raised(text)
    shown, blocks = render_notice(
        "usage_error",
        "zh-CN",
        message=err.message,
        usage=err.usage,
        error_key=err.key,
        error_params=err.params,
    )
    assert english_words(shown + json.dumps(blocks, ensure_ascii=False)) == []
    assert err.usage.splitlines()[0].startswith("/gpunode")  # the usage lines, shown back


def test_a_mention_that_does_not_parse_carries_the_same_key() -> None:
    at = NodeRef(cluster="prod-eu", node="gpu-node-01")
    with pytest.raises(UsageError) as caught:
        parse_in_thread("<@U0BOT> resolve", at=at, incident="INC-0001")
    assert caught.value.key == "needs_incident"


@pytest.mark.parametrize("text", ["soon", "0m", "999999w"])
def test_a_bad_duration_is_worded_in_each_language(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_duration(text)
    err = caught.value
    assert error_text(err.key, err.params, "", "en") == err.message
    zh = error_text(err.key, err.params, "", "zh-CN")
    assert zh and english_words(zh) == []
