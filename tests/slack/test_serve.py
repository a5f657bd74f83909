"""``gpunode serve`` refuses to start on missing or malformed settings, naming what to set,
and never echoes a secret's value (in ``--lang`` too); without a policy file it starts,
denying every action."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "sig-secret-value-5f2a9c"
TOKEN = "xoxp-user-token-value-77aa"


def _python(
    args: list[str], env: dict[str, str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """This interpreter run with ``args`` in ``tmp_path``, with only PATH, HOME (the folder)
    and the checkout under test's PYTHONPATH from this environment, plus ``env``."""
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    if "PYTHONPATH" in os.environ:  # the checkout under test, not another install
        base["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        [sys.executable, *args],
        env={**base, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def serve(env: dict[str, str], tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _python(["-m", "bot", "serve", *args], env, tmp_path)


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({}, "GPUNODE_SLACK__BOT_TOKEN"),
        ({"GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc"}, "GPUNODE_SLACK__SIGNING_SECRET"),
        (
            {"GPUNODE_SLACK__BOT_TOKEN": TOKEN, "GPUNODE_SLACK__SIGNING_SECRET": SECRET},
            "must be a bot token starting with xoxb-",
        ),
        (
            {"GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc", "GPUNODE_SLACK__SOCKET_MODE": "true"},
            "GPUNODE_SLACK__APP_TOKEN",
        ),
        (
            {
                "GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc",
                "GPUNODE_SLACK__SIGNING_SECRET": SECRET,
                "GPUNODE_HTTP__PORT": "not-a-port",
            },
            "http.port",
        ),
        (
            {
                "GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc",
                "GPUNODE_SLACK__SIGNING_SECRET": SECRET,
                "GPUNODE_HTTP__ALERTMANAGER_TOKEN": SECRET,
            },
            "GPUNODE_SLACK__INCIDENT_CHANNEL",
        ),
        (
            {
                "GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc",
                "GPUNODE_SLACK__SIGNING_SECRET": SECRET,
                "GPUNODE_ALERTS__ALLOW_UNAUTHENTICATED": "true",
                "GPUNODE_SLACK__INCIDENT_CHANNEL": "  ",
            },
            "GPUNODE_SLACK__INCIDENT_CHANNEL",
        ),
    ],
    ids=[
        "nothing",
        "no-secret",
        "user-token",
        "socket-no-app-token",
        "bad-port",
        "alert-token-without-channel",
        "open-intake-without-channel",
    ],
)
def test_serve_fails_fast_naming_the_setting_without_printing_secrets(
    env: dict[str, str], says: str, tmp_path: Path
) -> None:
    done = serve(env, tmp_path)

    assert done.returncode == 1
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    for value in (SECRET, TOKEN):
        assert value not in done.stderr and value not in done.stdout


#: what a refused start reports importing: what serving needs, never what refusing needs
SERVING = ("aiohttp", "slack_bolt", "kubernetes", "matplotlib", "bot.wiring.running")
REPORT_IMPORTS = f"""
import sys
from bot.cli import main
status = main(sys.argv[1:])
print(status, sorted(m for m in {SERVING!r} if m in sys.modules))
"""


@pytest.mark.parametrize(
    ("env", "policy"),
    [
        ({}, None),
        ({"GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc", "GPUNODE_SLACK__SIGNING_SECRET": SECRET}, ":"),
    ],
    ids=["missing-settings", "policy-not-yaml"],
)
def test_a_refused_start_is_worded_without_importing_what_serving_needs(
    env: dict[str, str], policy: str | None, tmp_path: Path
) -> None:
    """A missing setting or a policy that does not parse is told before the SDKs, the
    runtime and its services are imported: a second of CPU a refused start paid first."""
    if policy is not None:
        (tmp_path / "policy.yaml").write_text(policy)
        env = {**env, "GPUNODE_ACTIONS__POLICY_FILE": str(tmp_path / "policy.yaml")}
    done = _python(["-c", REPORT_IMPORTS, "serve"], env, tmp_path)

    assert done.stdout.strip() == "1 []", done.stderr
    assert "gpunode:" in done.stderr and "Traceback" not in done.stderr


def serve_with_config(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "gpunode.yaml"
    config.write_text(text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "bot", "serve", "--config", str(config)],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (f"slack:\n  bot_token: xoxb-1\n  signing_secret: {SECRET}: x\n", "line 3, column"),
        (f'slack:\n  signing_secret: "{SECRET}\n  bot_token: [\n', "line"),
        (f"slack:\n  signing_secret:\n\t{SECRET}\n", "line 3"),
        (f"slack:\n  bot_token: [{TOKEN}]\n  signing_secret: {SECRET}\n", "slack.bot_token"),
        (
            f"slack:\n  bot_token: xoxb-1\n  signing_secret: {SECRET}\nhttp: {{port: {TOKEN}}}\n",
            "http.port",
        ),
        (f"slack:\n  bot_token: xoxb-1\n  {SECRET}: {TOKEN}\n", "Extra inputs"),
    ],
    ids=["yaml-mapping", "yaml-unclosed-quote", "yaml-tab", "wrong-type", "bad-port", "extra"],
)
def test_a_config_file_error_names_the_place_and_never_echoes_a_value(
    text: str, says: str, tmp_path: Path
) -> None:
    done = serve_with_config(text, tmp_path)

    assert done.returncode == 1
    assert says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    for value in (SECRET, TOKEN):
        assert value not in done.stderr and value not in done.stdout, done.stderr


def test_serve_without_a_policy_file_starts_with_a_policy_that_denies_every_action(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from bot.config import load_settings
    from bot.core.governance.policy import ActionRequestInfo, Deny, Principal, authorize, decide
    from bot.wiring.serve import load_policy

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUNODE_ACTIONS__POLICY_FILE", raising=False)
    monkeypatch.delenv("GPUNODE_CONFIG", raising=False)
    policy = load_policy(load_settings(config_file=None))

    someone = Principal(user_id="U0SOMEONE1", usergroup_ids=frozenset(), channel_id="C0INC")
    assert isinstance(authorize(someone, "diagnose", policy), Deny)
    for tier in (1, 2, 3):
        assert isinstance(decide(someone, ActionRequestInfo(tier=tier), policy), Deny)


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({}, "GPUNODE_SLACK__BOT_TOKEN"),
        (
            {"GPUNODE_SLACK__BOT_TOKEN": TOKEN, "GPUNODE_SLACK__SIGNING_SECRET": SECRET},
            "xoxb-",
        ),
        (
            {"GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc", "GPUNODE_SLACK__SOCKET_MODE": "true"},
            "GPUNODE_SLACK__APP_TOKEN",
        ),
        (
            {
                "GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc",
                "GPUNODE_SLACK__SIGNING_SECRET": SECRET,
                "GPUNODE_HTTP__ALERTMANAGER_TOKEN": SECRET,
            },
            "GPUNODE_SLACK__INCIDENT_CHANNEL",
        ),
    ],
    ids=["nothing", "user-token", "socket-no-app-token", "alert-token-without-channel"],
)
def test_serve_says_which_setting_to_set_in_the_operators_language(
    env: dict[str, str], says: str, tmp_path: Path
) -> None:
    from tests.render.test_catalogs import english_words

    done = serve(env, tmp_path, "--lang", "zh-CN")

    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and last.startswith("gpunode: "), done.stderr
    assert says in last and english_words(last) == [], last
    assert re.search("[\u4e00-\u9fff]", last), last  # worded in Chinese, not only names
    for value in (SECRET, TOKEN):
        assert value not in done.stderr and value not in done.stdout


#: a policy file with problems of several kinds: a user id that is no Slack id, a quorum that
#: is no number, a key no policy has
BAD_POLICY = """\
roles:
  sre: {allows: [1], can_approve: [1]}
bindings:
  sre: {users: [alice]}
approvals:
  1: {quorum: many}
owner: alice
"""
READY = {"GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc", "GPUNODE_SLACK__SIGNING_SECRET": SECRET}


@pytest.mark.parametrize(
    ("env", "policy", "says"),
    [
        ({**READY, "GPUNODE_HTTP__PORT": "not-a-port"}, None, ["http.port"]),
        (
            {**READY, "GPUNODE_SLACK__SOCKET_MODE": "maybe", "GPUNODE_KUBE__COLLECTOR_MODE": "pod"},
            None,
            ["slack.socket_mode", "kube.collector_mode", "'job'", "'daemonset'"],
        ),
        ({**READY, "GPUNODE_CLUSTERS__PROD__MODE": "server"}, None, ["clusters.prod", "server"]),
        (READY, BAD_POLICY, ["bindings.sre.users.0", "'alice'", "U0123ABCD", "approvals.1"]),
        (READY, "roles: [\n", ["policy.yaml", "YAML"]),
        ({**READY, "GPUNODE_ACTIONS__POLICY_FILE": "absent.yaml"}, None, ["absent.yaml"]),
        (
            READY,
            "impersonation:\n  users:\n    U0ALICE1: {user: alice, groups: [system:masters]}\n",
            ["impersonation.users.U0ALICE1.groups", "'system:masters'", "ServiceAccount"],
        ),
        (
            {**READY, "GPUNODE_KUBE__HELM_VALUES_KEYS__VLLM__MEMORY-LIMIT": "main=a, b"},
            None,
            ["kube.helm_values_keys", "['vllm']['memory-limit']", "container=key"],
        ),
        (
            {**READY, "GPUNODE_LINKS__DASHBOARD_URL": "https://g/d/x?n={host}"},
            None,
            ["links.dashboard_url", "https://g/d/x?n={host}", "host", "{node}", "{to}"],
        ),
    ],
    ids=[
        "port-not-a-number",
        "flag-and-choice",
        "cluster-mode-incomplete",
        "policy-invalid",
        "policy-not-yaml",
        "policy-absent",
        "impersonated-group-is-a-system-identity",
        "helm-values-key-mixed",
        "dashboard-url-unknown-placeholder",
    ],
)
def test_serve_words_a_setting_or_a_policy_it_refuses_in_the_operators_language(
    env: dict[str, str], policy: str | None, says: list[str], tmp_path: Path
) -> None:
    """pydantic's own complaints (a number that is none, a flag, a choice) are worded from
    the catalog, not quoted; the setting, the policy key, its line and the choices stay as
    they are. What the system said (PyYAML's message, the OS error) is quoted as it said it,
    so it is left out of the check for English words."""
    import yaml

    from bot.config.policy import LOADER
    from tests.render.test_catalogs import english_words

    quoted = [os.strerror(2)]  # ENOENT, as the OS says it
    if policy is not None:
        (tmp_path / "policy.yaml").write_text(policy, encoding="utf-8")
        env = {**env, "GPUNODE_ACTIONS__POLICY_FILE": str(tmp_path / "policy.yaml")}
        try:
            yaml.load(policy, Loader=LOADER)  # the loader serve reads it with
        except yaml.YAMLError as exc:
            quoted.append(str(exc))
    done = serve(env, tmp_path, "--lang", "zh-CN")

    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    worded = done.stderr[done.stderr.index("gpunode: ") :]  # a YAML error spans lines
    for said in says:
        assert said in worded, worded
    assert re.search("[\u4e00-\u9fff]", worded), worded
    for text in quoted:
        worded = worded.replace(text, " ")
    assert english_words(worded) == [], worded
    for value in (SECRET, TOKEN):
        assert value not in done.stderr and value not in done.stdout


def test_a_terminal_command_words_an_invalid_setting_in_the_readers_language(
    tmp_path: Path,
) -> None:
    """Every command that reads the settings says what is wrong with them in ``--lang``."""
    from tests.render.test_catalogs import english_words

    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    if "PYTHONPATH" in os.environ:
        base["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env = {**base, "GPUNODE_KUBE__AGENT_PORT": "0", "GPUNODE_LEADER__RETRY_S": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "bot", "top", "--lang", "zh-CN"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and last.startswith("gpunode: "), done.stderr
    assert "kube.agent_port" in last and "leader.retry_s" in last, last
    assert english_words(last) == [] and re.search("[\u4e00-\u9fff]", last), last


def test_an_english_reader_sees_the_settings_error_as_before(tmp_path: Path) -> None:
    """Keying the error changed no English byte: without ``--lang`` serve prints the
    error's own text, and the catalog's English words are that text."""
    from bot.config.settings import load_settings
    from bot.errors import ConfigError
    from bot.render.errors import error_text

    env = {**READY, "GPUNODE_HTTP__PORT": "not-a-port", "GPUNODE_SLACK__NONSENSE": "x"}
    with pytest.raises(ConfigError) as caught:
        load_settings(env)
    done = serve(env, tmp_path)

    expected = (
        "invalid settings (slack.nonsense: Extra inputs are not permitted; http.port: Input "
        "should be a valid integer, unable to parse string as an integer). Set them in the "
        "config file or as GPUNODE_<GROUP>__<FIELD> environment variables."
    )
    assert caught.value.message == expected
    assert done.stderr.strip().splitlines()[-1] == f"gpunode: {expected}"
    assert error_text(caught.value.key, caught.value.params, "", "en") == expected


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        (
            {"GPUNODE_KUBE__HELM_VALUES_KEYS__VLLM__PRIORITY-CLASS": "main=a b"},
            "kube.helm_values_keys: Value error, helm_values_keys['vllm']['priority-class']: a "
            "values key or container name has no spaces, e.g. 'resources.limits.memory' or "
            "'main=server.resources.limits.memory'",
        ),
        (
            {"GPUNODE_LINKS__DASHBOARD_URL": "grafana/d/x"},
            "links.dashboard_url: Value error, 'grafana/d/x' is not an http(s) URL",
        ),
        (
            {"GPUNODE_LINKS__DASHBOARD_URL": "https://g/d/x?n={node"},
            "links.dashboard_url: Value error, 'https://g/d/x?n={node' has a stray brace "
            "(expected '}' before end of string); write {{ and }} for literal braces",
        ),
    ],
    ids=["helm-values-key-space", "dashboard-url-not-http", "dashboard-url-stray-brace"],
)
def test_a_helm_values_key_or_dashboard_url_refused_reads_in_english_as_before(
    env: dict[str, str], problem: str, tmp_path: Path
) -> None:
    """The validators' own complaints are keyed now; an English reader still sees their
    text byte for byte, and a Chinese reader sees it worded, with the setting, the chart, the
    field and the template kept as they are."""
    expected = (
        f"invalid settings ({problem}). Set them in the config file or as "
        "GPUNODE_<GROUP>__<FIELD> environment variables."
    )
    english = serve({**READY, **env}, tmp_path)
    chinese = serve({**READY, **env}, tmp_path, "--lang", "zh-CN")

    assert english.stderr.strip().splitlines()[-1] == f"gpunode: {expected}", english.stderr
    last = chinese.stderr.strip().splitlines()[-1]
    assert chinese.returncode == 1 and re.search("[\u4e00-\u9fff]", last), chinese.stderr
    assert "Value error" not in last and "e.g." not in last and " URL" not in last, last


def test_serve_words_a_thresholds_file_it_refuses_in_the_operators_language(
    tmp_path: Path,
) -> None:
    """pydantic's complaints about the thresholds file read as settings ones do: English
    byte for byte as before, Chinese from the catalog with the keys kept."""
    from tests.render.test_catalogs import english_words

    path = tmp_path / "thresholds.yaml"
    path.write_text("container_near_limit_ratio: 1.5\nslab_share: 0.2\n", encoding="utf-8")
    env = {**READY, "GPUNODE_THRESHOLDS_FILE": str(path)}

    english = serve(env, tmp_path)
    chinese = serve(env, tmp_path, "--lang", "zh-CN")

    assert english.stderr.strip().splitlines()[-1] == (
        "gpunode: thresholds file is invalid (container_near_limit_ratio: Input should be less "
        "than or equal to 1; slab_share: Extra inputs are not permitted); fix or remove those "
        "keys"
    ), english.stderr
    last = chinese.stderr.strip().splitlines()[-1]
    assert chinese.returncode == 1 and re.search("[\u4e00-\u9fff]", last), chinese.stderr
    assert "container_near_limit_ratio" in last and "slab_share" in last, last
    assert english_words(last) == [], last
