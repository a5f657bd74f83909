"""A Kubernetes error names the request it answered ("read node gpu-1: the API server did not
answer...") in the reader's language: every request label the gateway uses
(``bot.kube.doing.LABELS``) has words in the catalog, an English reader reads exactly the
label's English words, and a Chinese or pseudo-locale reader reads no English in it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from bot.errors import GpunodeError
from bot.kube.doing import LABELS, Doing, placeholders
from bot.kube.errors import translate
from bot.render.errors import doing_keys, doing_text, error_text
from tests.render.test_catalogs import english_words

BOT = Path(__file__).resolve().parents[2] / "bot"
#: a value for each placeholder a label takes, as the cluster would name it
SAMPLE = {
    "node": "gpu-node-07",
    "namespace": "ml",
    "name": "train-0",
    "kind": "Deployment",
    "container": "trainer",
    "selector": "'app=train'",
    "row": "42",
}
OTHER_LOCALES = ("zh-CN", "en-XA")


def _label(key: str) -> Doing:
    return Doing.of(key, **{name: SAMPLE[name] for name in placeholders(key)})


def _api(status: int, message: str) -> ApiException:
    exc = ApiException(status=status, reason="Reason")
    exc.body = json.dumps({"kind": "Status", "message": message})
    return exc


def _errors(what: Doing) -> list[GpunodeError]:
    """The request failing each way an API call fails: not found, forbidden, the server's
    failure, and no answer at all (for a read and for a write)."""
    pool = urllib3.HTTPConnectionPool("api.example", 6443)
    conn = urllib3.connection.HTTPConnection("api.example", 6443)
    refused = urllib3.exceptions.MaxRetryError(
        pool, "/api", urllib3.exceptions.NewConnectionError(conn, "refused")
    )
    return [
        translate(_api(404, 'deployments.apps "train-0" not found'), what=what, cluster="prod-eu"),
        translate(_api(403, 'User "bot" cannot get resource "pods"'), what=what),
        translate(_api(500, "etcdserver: request timed out"), what=what),
        translate(refused, what=what),
        translate(refused, what=what, write=True),
    ]


def _unquoted(text: str, err: GpunodeError) -> str:
    """``text`` less what is quoted as it was said: the server's own message, the URL."""
    for quoted in ("said", "url"):
        if err.params.get(quoted):
            text = text.replace(str(err.params[quoted]), " ")
    return text


def test_every_request_label_has_words_in_the_catalog() -> None:
    assert sorted(doing_keys()) == sorted(LABELS)


@pytest.mark.parametrize("key", sorted(LABELS))
def test_an_english_reader_reads_the_labels_own_words(key: str) -> None:
    what = _label(key)
    assert doing_text(key, what.as_params(), "«no words»", "en") == str(what)
    for err in _errors(what):
        assert err.message.startswith(str(what)), err.message
        assert err.params["doing"] == str(what)
        assert error_text(err.key, err.params, "«no words»", "en") == err.message


@pytest.mark.parametrize("locale", OTHER_LOCALES)
@pytest.mark.parametrize("key", sorted(LABELS))
def test_no_english_reaches_a_failed_request_in_another_locale(key: str, locale: str) -> None:
    what = _label(key)
    for err in _errors(what):
        text = error_text(err.key, err.params, "«no words»", locale)
        assert text != "«no words»"
        assert str(what) not in text, text
        assert english_words(_unquoted(text, err)) == [], text


def test_a_label_is_built_only_from_its_own_key_and_placeholders() -> None:
    assert str(Doing.of("read_node", node="gpu-1")) == LABELS["read_node"] % {"node": "gpu-1"}
    with pytest.raises(ValueError, match="unknown request label"):
        Doing.of("read_nodes", node="gpu-1")
    with pytest.raises(ValueError, match="takes"):
        Doing.of("read_node", name="gpu-1")


def _literal_labels() -> list[tuple[str, str, frozenset[str] | None]]:
    """Every label the product code names: ``Doing.of("key", ...)`` (where, key, its param
    names), and a Lease's ``self._doing("key")`` (its params are the Lease's own)."""
    found: list[tuple[str, str, frozenset[str] | None]] = []
    for path in sorted(BOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                continue
            where = f"{path.relative_to(BOT.parent)}:{node.lineno}"
            key = str(node.args[0].value)
            func = node.func
            if func.attr == "of" and isinstance(func.value, ast.Name) and func.value.id == "Doing":
                found.append((where, key, frozenset(k.arg for k in node.keywords if k.arg)))
            elif func.attr == "_doing":
                found.append((where, key, None))
    return found


def test_every_label_the_code_names_is_in_the_vocabulary_with_its_placeholders() -> None:
    """Checked where the labels are written, so a label on a path no test drives is checked
    too; and every label in the vocabulary is one the code uses."""
    named = _literal_labels()
    wrong = [
        (where, key)
        for where, key, names in named
        if key not in LABELS or (names is not None and names != placeholders(key))
    ]
    assert wrong == []
    assert set(LABELS) == {key for _where, key, _names in named}
