"""``gpunode doctor --lang`` and ``gpunode migrate --lang`` against the demo cluster and a
store: in Chinese and in the pseudo-locale the table, the verdict and migrate's lines carry no
English sentence (names, paths and modes are data) and the exit status is the English one;
without ``--lang`` the output is the English it always was."""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bot.cli import doctor as doctor_cli
from bot.cli import main
from bot.cli import migrate as migrate_cli
from bot.store import engines
from bot.store.migrations import SCHEMA_VERSION
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.conftest import kube_call
from tests.render.test_catalogs import english_words
from tests.services.test_doctor import store_env  # noqa: F401 (a fixture)

CJK = re.compile(r"[\u4e00-\u9fff]")


def _doctor(sim: KubeSim, locale: str) -> tuple[int, str]:
    out = io.StringIO()
    args = argparse.Namespace(
        config=None, kubeconfig=None, context=None, server=sim.url, token=BOT_TOKEN, lang=locale
    )
    return doctor_cli.main(args, out=out), out.getvalue()


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


async def test_doctor_in_chinese_on_the_demo_cluster_has_no_english_sentence(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    store_env: str,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    sim = await make_kubesim("seed")
    argv = ["doctor", "--server", sim.url, "--token", BOT_TOKEN, "--lang", "zh-CN"]

    code, said = await asyncio.to_thread(_main, argv, capsys)

    assert code == 0, said
    assert CJK.search(said), said
    assert english_words(said) == [], said
    assert said.rstrip().endswith("doctor：所有必需的检查均已通过"), said


async def test_doctor_in_the_pseudo_locale_words_every_row_from_the_catalog(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    store_env: str,  # noqa: F811 (the fixture)
) -> None:
    sim = await make_kubesim("seed")

    code, said = await asyncio.to_thread(_doctor, sim, "en-XA")
    _, english = await asyncio.to_thread(_doctor, sim, "en")

    assert code == 0, said
    assert english_words(said) == [], said
    assert len(said.splitlines()) == len(english.splitlines())


async def test_a_removed_grant_fails_in_chinese_as_in_english(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    store_env: str,  # noqa: F811 (the fixture)
) -> None:
    sim = await make_kubesim("seed")
    path = "/apis/rbac.authorization.k8s.io/v1/clusterroles/gpunode"
    status, role = await kube_call(sim.url, "GET", path)
    assert status == 200
    role["rules"] = [r for r in role["rules"] if r.get("resources") != ["pods/eviction"]]
    assert (await kube_call(sim.url, "PUT", path, body=role))[0] == 200

    code, said = await asyncio.to_thread(_doctor, sim, "zh-CN")

    assert code == 1, said
    (line,) = [line for line in said.splitlines() if "pods/eviction" in line]
    assert line.split()[0] == "失败"
    assert "缺少：create pods/eviction（core），集群范围" in line
    assert english_words(said) == [], said


def _store(tmp_path: Path) -> str:
    """A store file only its owner may write, in a folder only its owner may enter."""
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    path = folder / "gpunode.db"
    engines.connect(str(path)).close()
    os.chmod(path, 0o600)
    return str(path)


@pytest.mark.parametrize("locale", ["zh-CN", "en-XA"])
def test_migrate_prints_its_lines_without_english(tmp_path: Path, locale: str) -> None:
    out = io.StringIO()
    args = argparse.Namespace(dsn=_store(tmp_path), app_role=None, config=None, lang=locale)

    assert migrate_cli.main(args, out=out) == 0

    said = out.getvalue()
    assert len(said.splitlines()) == 3, said  # the schema, the file, its folder
    assert str(SCHEMA_VERSION) in said.splitlines()[0]
    assert english_words(said) == [], said
    assert (CJK.search(said) is not None) == (locale == "zh-CN"), said


def test_migrate_without_lang_prints_the_english_it_always_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store(tmp_path)

    code, said = _main(["migrate", "--dsn", path], capsys)

    assert code == 0, said
    schema, file, folder = said.splitlines()
    assert schema == f"schema at version {SCHEMA_VERSION}"
    assert file.startswith(f"ok   store file: {path} is writable by its owner only (mode -rw")
    assert folder.startswith("ok   store folder: ")
