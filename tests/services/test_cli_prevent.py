"""``gpunode prevent NODE [--out DIR]`` against the Kubernetes stand-in with the bot's token.

The seed node's printed kit is saved to ``test-artifacts/prevention/`` (the closing note of
the kit's walkthrough shows it); the same output comes from
``gpunode sandbox kube --scenario seed`` then ``gpunode prevent gpu-node-01 --server URL
--token TOKEN``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from bot.render.prevention import KIT_FILES, README
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN

NODE = "gpu-node-01"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "prevention"


@pytest.fixture(scope="module")
def seed_url() -> Iterator[str]:
    with KubeSim.running_in_thread(load_scenario("seed")) as sim:
        yield sim.url


def prevent(url: str, *args: str) -> list[str]:
    return ["prevent", *args, "--server", url, "--token", BOT_TOKEN]


def test_gpunode_prevent_prints_the_kit_with_every_value_explained(
    seed_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(prevent(seed_url, NODE)) == 0
    out = capsys.readouterr().out
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"gpunode-prevent-{NODE}.md").write_text(out, encoding="utf-8")

    assert out.startswith(f"# Prevention kit for {NODE}\n")
    assert "as read from the cluster at" in out
    explained = out.split("## Every value and the evidence behind it", 1)[1]
    assert "`requests.memory: 85Gi` in ml-train: the 68.0 GiB of memory" in explained
    assert "applied to gpu-node-01's memory capacity, 251.0 GiB" in explained
    files = out.split("## The files", 1)[1]
    for name in KIT_FILES:
        assert f"### {name}" in files
    quota_block = files.split("### resourcequota.yaml", 1)[1].split("````yaml\n", 1)[1]
    [quota] = [d for d in yaml.safe_load_all(quota_block.split("````", 1)[0]) if d]
    assert quota["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "8",
        "requests.memory": "85Gi",
        "limits.memory": "90Gi",
    }


def test_gpunode_prevent_out_writes_each_manifest_and_the_readme_into_a_new_directory(
    seed_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "kits" / NODE  # parents are created too

    assert main(prevent(seed_url, NODE, "--out", str(out))) == 0

    assert sorted(p.name for p in out.iterdir()) == sorted([*KIT_FILES, README])
    printed = capsys.readouterr().out
    assert f"wrote {out / 'resourcequota.yaml'}" in printed and "review" in printed
    kubelet = yaml.safe_load((out / "kubelet-config.yaml").read_text())
    assert kubelet["kind"] == "KubeletConfiguration"
    assert "## Every value and the evidence behind it" in (out / README).read_text()


def test_gpunode_prevent_out_refuses_to_overwrite_an_earlier_kit_unless_forced(
    seed_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "limitrange.yaml").write_text("edited by hand")

    assert main(prevent(seed_url, NODE, "--out", str(tmp_path))) == 2  # a usage error
    err = capsys.readouterr().err
    assert "already holds limitrange.yaml" in err and "--force" in err
    assert (tmp_path / "limitrange.yaml").read_text() == "edited by hand"
    assert not (tmp_path / "resourcequota.yaml").exists()  # nothing written at all

    assert main(prevent(seed_url, NODE, "--out", str(tmp_path), "--force")) == 0
    assert "LimitRange" in (tmp_path / "limitrange.yaml").read_text()
    assert (tmp_path / "notes.txt").read_text() == "mine"  # other files are left alone


@pytest.mark.parametrize("force", [False, True], ids=["without-force", "with-force"])
def test_gpunode_prevent_out_never_writes_through_a_symlink_in_the_directory(
    seed_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], force: bool
) -> None:
    out, elsewhere = tmp_path / "kit", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "limitrange.yaml").symlink_to(elsewhere / "planted.yaml")  # dangling

    code = main(prevent(seed_url, NODE, "--out", str(out), *(["--force"] if force else [])))

    assert code == 2  # refused before anything is written, like an earlier kit
    err = capsys.readouterr().err
    assert "limitrange.yaml" in err
    assert ("is a symbolic link" in err) if force else ("already holds limitrange.yaml" in err)
    assert list(elsewhere.iterdir()) == []  # nothing was written through the link


@pytest.mark.parametrize(
    ("node", "code", "says"),
    [
        ("gpu-node-99", 1, "gpu-node-99"),  # the cluster has no such node: a runtime failure
        ("GPU-Node-01", 2, "node names are lowercase: did you mean gpu-node-01?"),  # usage
    ],
)
def test_gpunode_prevent_a_wrong_node_fails_saying_what_is_wrong(
    seed_url: str, capsys: pytest.CaptureFixture[str], node: str, code: int, says: str
) -> None:
    assert main(prevent(seed_url, node)) == code
    assert says in capsys.readouterr().err
