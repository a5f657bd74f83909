"""The collector writes its JSON and its timestamps without ``json`` or ``datetime``, and the
text is exactly what those modules write."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from bot.collectors import jsontext
from bot.collectors.bundle import collect_document, iso_utc

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and the infinities included: json writes NaN, Infinity, -Infinity
    st.text(),  # every code point, lone surrogates included
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
    ),
    max_leaves=30,
)


@given(_DOCUMENTS)
def test_a_document_is_written_as_json_writes_it_compact(doc: object) -> None:
    assert jsontext.dumps(doc) == json.dumps(doc, separators=(",", ":"))


@given(st.dictionaries(st.one_of(st.integers(), st.booleans(), st.none()), st.integers()))
def test_what_it_does_not_write_itself_is_left_to_json(doc: dict[object, int]) -> None:
    assert jsontext.dumps(doc) == json.dumps(doc, separators=(",", ":"))


def test_every_fixture_hosts_bundle_is_written_as_json_writes_it() -> None:
    for host in sorted(p for p in HOSTS.iterdir() if p.is_dir()):
        doc = collect_document(host, nvml_module=None)
        assert jsontext.dumps(doc) == json.dumps(doc, separators=(",", ":")), host.name


@given(st.integers(min_value=0, max_value=253402300799_999_999_999))  # to 9999-12-31
def test_a_moment_is_written_as_datetime_isoformat_writes_it(ns: int) -> None:
    seconds, micro = divmod(ns // 1000, 1_000_000)
    expected = datetime.fromtimestamp(seconds, UTC).replace(microsecond=micro)
    assert iso_utc(ns) == expected.isoformat()


def test_a_bundle_without_a_clock_is_stamped_with_the_system_clock_in_utc() -> None:
    before = datetime.now(UTC)
    doc = collect_document(HOSTS / "v2-cgroupfs-crio", nvml_module=None)
    after = datetime.now(UTC)
    stamped = datetime.fromisoformat(doc["collected_at"])
    assert stamped.utcoffset() == timedelta(0)
    assert before.replace(microsecond=0) <= stamped <= after


@given(st.text())  # every code point: controls, DEL, quotes, lone surrogates, astral ones
def test_a_string_is_quoted_as_json_quotes_it(text: str) -> None:
    assert jsontext.quote(text) == json.dumps(text)


def test_every_ascii_character_and_the_edges_of_the_planes_are_quoted_as_json_quotes_them() -> None:
    for char in [*map(chr, range(128)), "\x80", "\u2028", "\ud800", "\udfff", "\uffff"]:
        assert jsontext.quote(char) == json.dumps(char), repr(char)
    for text in ["\U00010000", "\U0010ffff", "a\U0001f600b", 'pod "x"\\y\n']:
        assert jsontext.quote(text) == json.dumps(text), repr(text)
