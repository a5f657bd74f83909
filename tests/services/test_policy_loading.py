from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.policy import read_policy
from bot.errors import PolicyError

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "policy.example.yaml"


def test_the_example_policy_loads() -> None:
    policy = read_policy(EXAMPLE)
    assert policy.quorum(1) == 1
    assert policy.bindings["admin"].users == ("U0ADMIN001",)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("roles:\n  r:\n    allows: [1, 5]\n", "line 3: roles.r.allows.1"),
        (
            "roles:\n  r: {}\nbindings:\n  r:\n    users:\n      - bob\n",
            "line 6: bindings.r.users.0",
        ),
        ("roles:\n  r:\n    can_aprove: [1]\n", "line 3: roles.r.can_aprove"),
        ("roles: [\n", "not valid YAML"),
    ],
)
def test_errors_name_the_line_and_key(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        read_policy(path)
    assert fragment in caught.value.message
    assert str(path) in caught.value.message


def test_a_missing_file_says_which_setting_to_fix(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"actions\.policy_file"):
        read_policy(tmp_path / "absent.yaml")
