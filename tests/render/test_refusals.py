"""Every refusal a use case can give has its words in every language, and its parameters
are escaped: the use cases speak codes, the presenter words them."""

from __future__ import annotations

import pytest

from bot.core.governance.policy import DENIALS
from bot.core.reporting.outcomes import REFUSALS, Refused
from bot.render import environment
from bot.render.environment import LOCALES
from bot.render.notices import told_mrkdwn
from tests.render.told import REFUSAL_SAMPLES


def test_every_refusal_code_has_a_sample_to_render() -> None:
    assert set(REFUSAL_SAMPLES) == set(REFUSALS) | set(DENIALS)


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("code", sorted(REFUSAL_SAMPLES))
def test_every_refusal_code_has_its_own_words_in_every_language(code: str, locale: str) -> None:
    t = environment.macros("slack", "refusals.j2", locale=locale)
    assert getattr(t, code, None) is not None, f"refusals.j2 ({locale}) has no macro {code}"
    body = told_mrkdwn(Refused(code=code, params=REFUSAL_SAMPLES[code]), locale)
    assert f"`{code}`" not in body  # the unknown-code fallback names the code
    assert "<!here>" not in body and "<!channel>" not in body


def test_a_zh_cn_refusal_is_in_chinese() -> None:
    body = told_mrkdwn(Refused(code="only_requester_cancels"), "zh-CN")
    assert body == ":no_entry: 只有申请人可以取消"


def test_an_unknown_code_still_reads_with_its_message() -> None:
    body = told_mrkdwn(Refused(code="cluster_refused", params={"message": "no <@U1>"}), "en")
    assert body == ":no_entry: no &lt;@U1&gt; (`cluster_refused`)"
