"""Key coverage of the template locales: what each locale's templates define, compared with
English, as a list of problems (empty: every locale covers every key).

A "key" is a template file, a macro in it (name and parameters, in order, with the same number
of defaults), a variable a whole-document template reads from its context, and a constant
key of a dict literal a macro looks values up in (``{"critical": "…"}[name]``): a locale that
lacks any of them fails at render time (``StrictUndefined``, ``KeyError``) or silently shows
English. Used by ``test_locale_coverage.py`` on the real tree and on broken copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import jinja2
from jinja2 import meta, nodes

from bot.render import filters

KINDS = ("slack", "sentences", "markdown", "text", "html")
BASE = "en"
#: macros whose dict literals translate free text: another locale may hold more keys than
#: English there (it names labels English prints as they are), never fewer
TRANSLATION_TABLES = frozenset({"fact_value", "amount_label", "xid_meaning", "xid_action"})


@dataclass(frozen=True)
class Macro:
    args: tuple[str, ...]
    defaults: int
    dict_keys: frozenset[object]


@dataclass(frozen=True)
class Signature:
    """What one template file defines and needs."""

    macros: dict[str, Macro] = field(default_factory=dict)
    variables: frozenset[str] = frozenset()
    module_keys: frozenset[object] = frozenset()
    imports: tuple[str, ...] = ()


def _dict_keys(node: nodes.Node) -> frozenset[object]:
    keys: set[object] = set()
    for d in node.find_all(nodes.Dict):
        for pair in d.items:
            if isinstance(pair.key, nodes.Const):
                keys.add(pair.key.value)
    return frozenset(keys)


_ENV = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
_ENV.filters.update(filters.FILTERS)


@cache
def signature(source: str) -> Signature:
    """What a template's source defines and needs (parsing only: nothing is rendered)."""
    tree = _ENV.parse(source)
    macros = {
        node.name: Macro(
            args=tuple(a.name for a in node.args),
            defaults=len(node.defaults),
            dict_keys=_dict_keys(node),
        )
        for node in tree.body
        if isinstance(node, nodes.Macro)
    }
    module = [n for n in tree.body if not isinstance(n, nodes.Macro)]
    return Signature(
        macros=macros,
        variables=frozenset(meta.find_undeclared_variables(tree)),
        module_keys=frozenset().union(*(_dict_keys(n) for n in module)),
        imports=tuple(
            str(n.template.value)
            for n in tree.find_all((nodes.Import, nodes.FromImport))
            if isinstance(n, nodes.Import | nodes.FromImport)
            and isinstance(n.template, nodes.Const)
        ),
    )


def _files(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.j2")} if folder.is_dir() else set()


def compare(where: str, en: Signature, other: Signature, locale: str) -> list[str]:
    problems: list[str] = []
    for name in sorted(en.macros.keys() - other.macros.keys()):
        problems.append(f"{where}: macro {name} missing")
    for name in sorted(other.macros.keys() - en.macros.keys()):
        problems.append(f"{where}: macro {name} not in {BASE}")
    for name in sorted(en.macros.keys() & other.macros.keys()):
        a, b = en.macros[name], other.macros[name]
        if (a.args, a.defaults) != (b.args, b.defaults):
            problems.append(
                f"{where}: macro {name}({', '.join(b.args)}) differs from "
                f"{BASE} {name}({', '.join(a.args)})"
            )
        missing = a.dict_keys - b.dict_keys
        if missing:
            problems.append(f"{where}: macro {name} lacks keys {sorted(map(str, missing))}")
        extra = b.dict_keys - a.dict_keys
        if extra and name not in TRANSLATION_TABLES:
            problems.append(
                f"{where}: macro {name} has keys not in {BASE} {sorted(map(str, extra))}"
            )
    if en.module_keys - other.module_keys:
        missing_keys = sorted(map(str, en.module_keys - other.module_keys))
        problems.append(f"{where}: lacks keys {missing_keys}")
    if other.variables - en.variables:
        problems.append(
            f"{where}: reads {sorted(other.variables - en.variables)} that {BASE} is not given"
        )
    if en.variables - other.variables:
        problems.append(f"{where}: ignores {sorted(en.variables - other.variables)}")
    for imported in other.imports:
        if f"/{BASE}/" in imported:
            problems.append(f"{where}: imports {imported} (the {BASE} wording)")
    return problems


def coverage_problems(root: Path, expected: tuple[str, ...] = ()) -> list[str]:
    """Every difference between English and another locale under ``root`` (a templates
    folder). ``expected`` locales must exist for every kind."""
    problems: list[str] = []
    all_locales = sorted(
        {
            p.name
            for kind in KINDS
            if (root / kind).is_dir()
            for p in (root / kind).iterdir()
            if p.is_dir()
        }
        | set(expected)
    )
    for kind in KINDS:
        if not any(p.is_dir() for p in (root / kind).glob("*")):
            continue  # every template of this kind is one layout (words in the catalogs)
        base_files = _files(root / kind / BASE)
        if not base_files:
            problems.append(f"{kind}/{BASE}: no templates")
        for locale in all_locales:
            if locale == BASE:
                continue
            folder = root / kind / locale
            files = _files(folder)
            for name in sorted(base_files - files):
                problems.append(f"{kind}/{locale}/{name}: missing")
            for name in sorted(files - base_files):
                problems.append(f"{kind}/{locale}/{name}: not in {BASE}")
            for name in sorted(base_files & files):
                en = signature((root / kind / BASE / name).read_text(encoding="utf-8"))
                other = signature((folder / name).read_text(encoding="utf-8"))
                problems += compare(f"{kind}/{locale}/{name}", en, other, locale)
    return problems
