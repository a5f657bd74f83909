"""Read the role policy YAML once at start (I/O edge of ``bot.core.governance.policy``).

Errors name the file, the key path and the line, so an admin can fix the file without
guessing: ``policy.yaml is invalid: line 12: roles.responder.allows.0: Input should be ...``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.core.governance.policy import Policy, parse_policy
from bot.errors import PolicyError

#: libyaml's safe loader when built (several times faster), else the pure-Python one
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

Path_ = tuple[str | int, ...]


def _line_index(node: yaml.Node, prefix: Path_, out: dict[Path_, int]) -> None:
    """Map each key path to the 1-based line where it appears in the document."""
    out.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key: str | int = key_node.value
            if isinstance(key, str) and key.strip().isdecimal():
                key = int(key)  # tier keys: the validator sees them as ints
            out[(*prefix, key)] = key_node.start_mark.line + 1
            _line_index(value_node, (*prefix, key), out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _line_index(item, (*prefix, index), out)


def read_policy(path: str | Path) -> Policy:
    """Load and validate the policy file; PolicyError says what to fix, and where."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(
            f"cannot read policy file {source}: {exc.strerror}; check actions.policy_file",
            key="policy_unreadable",
            params={"source": source, "error": exc.strerror},
        ) from exc
    try:
        data = yaml.load(text, Loader=LOADER)  # noqa: S506 - a safe loader
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise PolicyError(
            f"policy file {source} is not valid YAML: {exc}",
            key="policy_not_yaml",
            params={"source": source, "error": str(exc)},
        ) from exc
    lines: dict[Path_, int] = {}
    if root is not None:
        _line_index(root, (), lines)

    def line_of(loc: Path_) -> int | None:
        # pydantic locations may carry a trailing "[key]" marker; walk up to a known path.
        for end in range(len(loc), 0, -1):
            if loc[:end] in lines:
                return lines[loc[:end]]
        return None

    return parse_policy(data, source=source, line_of=line_of)
