"""Every bad input the CLI meets gets one clear line, no traceback and no warning: each case
runs ``gpunode`` as a user would, in a child process (so a leaked warning or traceback reaches
stderr exactly as in a terminal). Usage errors exit 2, runtime failures 1."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.ports import refusing_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with KubeSim.running_in_thread(load_scenario("seed")) as sim:
        yield sim.url


def gpunode(
    *args: str, cwd: Path, settings: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUNODE_")}
    env.update(PYTHONPATH=str(ROOT), HOME=str(cwd), XDG_STATE_HOME=str(cwd / "state"))
    env.update(settings or {})
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


KUBECONFIGS = {
    "not YAML": "garbage: [\n",
    "a list": "- a\n",
    "a string": "hello\n",
    "clusters a number": "apiVersion: v1\nclusters: 5\n",
    "server not a URL": (
        "apiVersion: v1\ncurrent-context: x\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
        'clusters: [{name: c, cluster: {server: "notaurl"}}]\n'
        "users: [{name: u, user: {token: t}}]\n"
    ),
}


def assert_clean(result: subprocess.CompletedProcess[str], code: int, *says: str) -> None:
    err = result.stderr
    assert "Traceback" not in err and "Warning" not in err, err
    assert result.returncode == code, (result.returncode, err)
    assert err.startswith("gpunode") or err.startswith("usage:"), err
    for part in says:
        assert part in err, (part, err)


@pytest.mark.parametrize("shape", sorted(KUBECONFIGS))
def test_a_malformed_kubeconfig_is_named_without_a_traceback(tmp_path: Path, shape: str) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIGS[shape], encoding="utf-8")
    result = gpunode("diagnose", "gpu-node-01", "--kubeconfig", str(kubeconfig), cwd=tmp_path)
    assert_clean(result, 1, str(kubeconfig) if shape != "not YAML" else "not valid YAML")


def test_tls_to_a_plain_http_port_says_to_use_http(tmp_path: Path, sim_url: str) -> None:
    https = sim_url.replace("http://", "https://")
    result = gpunode("diagnose", "gpu-node-01", "--server", https, cwd=tmp_path)
    assert_clean(result, 1, f"at {https}", "TLS handshake failed", "http:// URL")


def test_a_name_that_does_not_resolve_is_named(tmp_path: Path) -> None:
    url = "https://gpunode-no-such-host.invalid:6443"
    result = gpunode("top", "--server", url, cwd=tmp_path)
    assert_clean(result, 1, url, "does not resolve (DNS)")


def test_an_unreachable_server_is_named_with_its_url(tmp_path: Path) -> None:
    with refusing_port() as port:
        url = f"http://127.0.0.1:{port}"
        result = gpunode("diagnose", "gpu-node-01", "--server", url, cwd=tmp_path)
    assert_clean(result, 1, f"the API server at {url} did not answer", "connection was refused")
    assert "MaxRetryError" not in result.stderr


def test_a_wrong_token_is_unauthorized_and_no_token_is_forbidden(
    tmp_path: Path, sim_url: str
) -> None:
    wrong = gpunode("diagnose", "gpu-node-01", "--server", sim_url, "--token", "nope", cwd=tmp_path)
    assert_clean(wrong, 1, "unauthorized", "401", "token is wrong or expired")
    assert "forbidden" not in wrong.stderr
    none = gpunode("diagnose", "gpu-node-01", "--server", sim_url, cwd=tmp_path)
    assert_clean(none, 1, "forbidden", "the request carried no credentials")
    assert "unauthorized" not in none.stderr


def test_a_server_that_is_not_a_url_is_a_usage_error_without_a_warning(tmp_path: Path) -> None:
    result = gpunode("diagnose", "gpu-node-01", "--server", "notaurl", cwd=tmp_path)
    assert_clean(result, 2, "--server 'notaurl' is not an API server URL")


def test_a_missing_node_is_not_sent_to_look_at_a_namespace(tmp_path: Path, sim_url: str) -> None:
    result = gpunode(
        "prevent", "gpu-node-99", "--server", sim_url, "--token", BOT_TOKEN, cwd=tmp_path
    )
    assert_clean(result, 1, "gpu-node-99")
    assert "namespace" not in result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["help", "nosuch"], "'nosuch'"),
        (["diagnose"], "the following arguments are required: node"),
        (["diagnose", "Not_A_Node!"], "Not_A_Node!"),
        (["nosuch"], "invalid choice: 'nosuch'"),
        (["status", "a", "b", "c"], "status"),
    ],
)
def test_usage_errors_exit_2_and_name_what_was_wrong(
    tmp_path: Path, args: list[str], says: str
) -> None:
    assert_clean(gpunode(*args, cwd=tmp_path), 2, says)


def test_a_store_that_is_not_there_is_a_runtime_failure(tmp_path: Path) -> None:
    assert_clean(gpunode("status", cwd=tmp_path), 1, "no incident store at", "store.path")


@pytest.mark.parametrize("path", ["", "a-folder"])
def test_a_store_path_that_names_no_file_is_the_same_clear_failure(
    tmp_path: Path, path: str
) -> None:
    """An empty ``store.path`` (the working folder) or a folder is not a store file: the
    command says which setting names the store, not SQLite's "unable to open"."""
    (tmp_path / "a-folder").mkdir()
    run = gpunode("status", cwd=tmp_path, settings={"GPUNODE_STORE__PATH": path})
    assert_clean(run, 1, "no incident store at", "store.path")


@pytest.mark.parametrize("command", [("demo", "--script"), ("sandbox", "kube")])
def test_an_unknown_scenario_is_named_with_the_shipped_ones(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    result = gpunode(*command, "--scenario", "no-such-scenario", cwd=tmp_path)
    assert_clean(result, 1, "no scenario 'no-such-scenario'", "seed")
