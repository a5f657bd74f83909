"""Cluster-facing CLI commands take ``--server`` with ``--token``, and the API server's
authorization decides what they may do."""

from __future__ import annotations

import argparse

import pytest

from bot.cli import main
from bot.cli.common import cluster_settings
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN


def test_token_goes_with_the_server_url() -> None:
    args = argparse.Namespace(server="http://127.0.0.1:1", token="t0k3n", config=None)
    settings = cluster_settings(args)
    assert settings.mode == "server" and settings.server == "http://127.0.0.1:1"
    assert settings.token is not None and settings.token.get_secret_value() == "t0k3n"


@pytest.mark.parametrize(
    ("token", "code", "says"),
    [
        (["--token", BOT_TOKEN], 0, ["gpu-node-01"]),
        # top asks for nodes, pods and API groups at once: whichever 403 comes first is told
        (
            [],
            1,
            [
                'User "system:anonymous" cannot ',
                "); the request carried no credentials; set kube.token (--token)",
            ],
        ),
    ],
)
def test_top_runs_with_the_bots_token_and_is_refused_without_one(
    capsys: pytest.CaptureFixture[str], token: list[str], code: int, says: list[str]
) -> None:
    with KubeSim.running_in_thread(load_scenario("seed")) as sim:
        assert main(["top", "--server", sim.url, *token]) == code
    out = capsys.readouterr()
    assert all(part in out.out + out.err for part in says), out.err
