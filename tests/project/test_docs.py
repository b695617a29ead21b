"""The documentation against the code, so that it cannot go stale silently.

- docs/modules.md is what ``tests/support/module_index.py`` prints now (one row per module, by
  layer);
- every repository path docs/architecture.md and docs/model.md give in backticks exists
  (``simcache/sim/components/tier.py``, ``simcache/spec/``, ``setup.py``);
- every dotted name in backticks that starts with ``simcache.`` or ``simcache_app.`` is a module or
  an attribute of one (``simcache.native.choice.GROUPS``);
- every ``Class.member`` in backticks is defined by a class of that name in the packages: a method,
  a field or class attribute, or an attribute its methods set on ``self`` (read from the sources,
  nothing run);
- every relative link leads to a file of the repository, and its ``#anchor`` to a heading there.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections import defaultdict
from pathlib import Path

from support.import_graph import ROOT, modules
from support.module_index import COMMAND, GENERATED, index

PAGES = [ROOT / "docs" / "architecture.md", ROOT / "docs" / "model.md"]

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`([^`\n]+)`")
# A folder (ending in a slash) or a file with an extension, from the repository's root; a bare file
# name only with one of these extensions (so that `MB/s` or `read/write` are not taken for paths).
_PATH = re.compile(r"(?:[\w.-]+/)+(?:[\w.-]+\.\w+)?|[\w.-]+\.(?:py|toml|md|ipynb|sh)")
_DOTTED = re.compile(r"simcache(?:_app)?(?:\.\w+)+")
_MEMBER = re.compile(r"([A-Z]\w*)\.(\w+)")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _code_spans(page: Path) -> list[str]:
    return _CODE.findall(_FENCE.sub("", page.read_text(encoding="utf-8")))


def _spans(pattern: re.Pattern[str]) -> dict[str, list[str]]:
    """Each backticked span of the pages that ``pattern`` matches whole, with the pages naming
    it."""
    found: dict[str, list[str]] = defaultdict(list)
    for page in PAGES:
        for span in _code_spans(page):
            if pattern.fullmatch(span) and page.name not in found[span]:
                found[span].append(page.name)
    return found


def test_the_module_index_is_current() -> None:
    text = (ROOT / "docs" / "modules.md").read_text(encoding="utf-8")
    assert text == index(), f"docs/modules.md is out of date: regenerate it with `{COMMAND}`"


def test_named_paths_exist() -> None:
    paths = _spans(_PATH)
    assert {
        "simcache/sim/kernel/clock.py",
        "tests/sim/test_fast_paths.py",
        "simcache/native/sources.py",
    } <= set(paths)
    missing = {
        path: pages
        for path, pages in paths.items()
        if path not in GENERATED and not (ROOT / path).exists()
    }
    assert missing == {}, (
        "paths the pages name that are not in the repository (give them from its root)"
    )


def _resolve(name: str) -> bool:
    """Whether ``name`` is a module, or a module's attribute (at any depth:
    ``module.Class.method``)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:end]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[end:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_dotted_names_resolve() -> None:
    names = _spans(_DOTTED)
    assert "simcache.sim.components.flusher.flusher_steps" in names
    unresolved = {name: pages for name, pages in names.items() if not _resolve(name)}
    assert unresolved == {}, (
        "names the pages give that are neither a module nor an attribute of one"
    )


def _class_members() -> dict[str, set[str]]:
    """Each class name of the packages, with every member any class of that name defines."""
    members: dict[str, set[str]] = defaultdict(set)
    bases: dict[str, set[str]] = defaultdict(set)
    for path in modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases[node.name] |= {base.id for base in node.bases if isinstance(base, ast.Name)}
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members[node.name].add(item.name)
                elif isinstance(item, ast.Assign):
                    members[node.name] |= {
                        target.id for target in item.targets if isinstance(target, ast.Name)
                    }
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members[node.name].add(item.target.id)
            for inner in ast.walk(node):  # attributes set on ``self`` in any method
                targets = (
                    inner.targets
                    if isinstance(inner, ast.Assign)
                    else [getattr(inner, "target", None)]
                )
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        members[node.name].add(target.attr)
    for name in list(members):  # what a class inherits from the packages' classes
        seen, todo = set(), list(bases[name])
        while todo:
            base = todo.pop()
            if base not in seen:
                seen.add(base)
                members[name] |= members.get(base, set())
                todo += bases.get(base, set())
    return members


def test_class_members_exist() -> None:
    named = _spans(_MEMBER)
    assert "Destager.adopt" in named
    members = _class_members()
    missing = {}
    for span, pages in named.items():
        cls, member = _MEMBER.fullmatch(span).groups()  # type: ignore[union-attr]
        if member not in members.get(cls, set()):
            missing[span] = pages
    assert missing == {}, (
        "`Class.member` names the pages give that no class of the packages defines"
    )


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    counts: dict[str, int] = defaultdict(int)
    for line in _FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if match := re.match(r"#{1,6} (.+)", line):
            slug = _slug(match.group(1))
            anchors.add(f"{slug}-{counts[slug]}" if counts[slug] else slug)
            counts[slug] += 1
    return anchors


def test_links_lead_somewhere() -> None:
    broken = []
    for page in PAGES:
        for target in _LINK.findall(_FENCE.sub("", page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists() or (anchor and anchor not in _anchors(file)):
                broken.append(f"{page.name}: ({target})")
    assert broken == [], "links to a file or heading that is not there"


def test_the_profiles_sources_name_files_that_exist() -> None:
    """A profile's source or a figure's comment that names a repository file
    (``scenarios/....toml``, ``docs/....md``) names one that exists: `simcache profiles` shows
    them as where a figure is checked, and three named validation scenarios with hyphens where the
    files have underscores (review 66c, F9)."""
    named = re.compile(r"(?:scenarios|docs|tests|bench)/[\w./-]+\.(?:toml|md|py)")
    found: dict[str, list[str]] = defaultdict(list)
    for profiles in sorted((ROOT / "simcache" / "spec" / "profiles").glob("*.toml")):
        for path in named.findall(profiles.read_text(encoding="utf-8")):
            found[path].append(profiles.name)
    assert "scenarios/validate_nvme_pm9a3_ignalina.toml" in found
    missing = {path: files for path, files in found.items() if not (ROOT / path).exists()}
    assert missing == {}, "files the profiles name that are not in the repository"
