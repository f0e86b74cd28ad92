"""House rules, checked on the source itself (ast), so they hold without anyone reviewing for
them: public APIs of other packages only, no module named like the standard library, no import
side effects, every environment variable declared once, bounded caches keyed by value."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graph.settings import ENV_VARS, ENVIRONMENT

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graph", "tools")
OWN = {"graph", "tools", "tests", "bench", "examples"}
# documented extension points of base classes we subclass (LangChain's custom chat model guide;
# `_get_ls_params`: BaseChatModel's docstring asks subclasses to override it)
EXTENSION_POINTS = {
    *("_generate", "_agenerate", "_stream", "_astream", "_llm_type", "_run", "_arun"),
    "_get_ls_params",
}
# public names of the standard library that start with an underscore
STDLIB_PUBLIC = {"_exit", "_asdict", "_replace", "_fields", "_make", "_field_defaults"}


def sources(*roots: str) -> list[Path]:
    return sorted(p for root in roots for p in (ROOT / root).rglob("*.py"))


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def private_uses(path: Path) -> list[str]:
    """Imports of another package's private module, and `_`-attributes of other objects."""
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            private = any(part.startswith("_") for part in node.module.split("."))
            if top not in OWN and top != "__future__" and private:
                found.append(f"{path.name}:{node.lineno} from {node.module} import")
            if top not in OWN:
                found += [
                    f"{path.name}:{node.lineno} imports {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_")
                ]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] not in OWN and any(p.startswith("_") for p in parts):
                    found.append(f"{path.name}:{node.lineno} import {alias.name}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__") and node.attr.endswith("__"):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in {"self", "cls"}:
                continue
            if node.attr in EXTENSION_POINTS or node.attr in STDLIB_PUBLIC:
                continue
            if isinstance(owner, ast.Name) and owner.id.startswith("_"):
                continue  # a private module of our own, imported under its name
            found.append(f"{path.name}:{node.lineno} uses .{node.attr}")
    return found


@pytest.mark.parametrize("path", sources(*PACKAGES), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_api_of_other_packages(path: Path) -> None:
    if path.name == "_compat.py":
        return
    assert private_uses(path) == []


def test_the_rule_finds_private_uses(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from langgraph._internal._runnable import RunnableCallable\n"
        "from langchain_openai import ChatOpenAI\n"
        "ChatOpenAI()._get_request_payload([])\n"
    )
    assert len(private_uses(sample)) == 2


@pytest.mark.parametrize("path", sources(*PACKAGES, "bench"), ids=lambda p: p.name)
def test_no_module_is_named_like_the_standard_library(path: Path) -> None:
    name = path.stem if path.name != "__init__.py" else path.parent.name
    assert name not in sys.stdlib_module_names


def test_modules_stay_small() -> None:
    """A module one reads in a sitting: at most 300 lines in graph/ (the design's rule), 400 in
    tools/ (a tool and its internals beside it)."""
    lengths = {
        str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in sources(*PACKAGES)
    }
    limit = {path: 300 if path.startswith("graph") else 400 for path in lengths}
    assert {path: n for path, n in lengths.items() if n > limit[path]} == {}


def test_importing_the_packages_has_no_side_effects(tmp_path: Path) -> None:
    """No .env read, no environment read that changes anything, nothing heavy built: a fresh
    interpreter imports every module of graph/ and tools/ with a .env that would break them."""
    (tmp_path / ".env").write_text("REACT_AGENT_MAX_STEPS=not-a-number\nLEAKED_FROM_DOTENV=1\n")
    modules = [
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in sources(*PACKAGES)
        if p.name != "__main__.py"
    ]
    code = (
        "import importlib, os, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "assert 'LEAKED_FROM_DOTENV' not in os.environ, 'a module read .env at import'\n"
        "import graph\n"
        "assert 'graph' not in vars(graph), 'the graph was compiled at import'\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_from_graph_import_graph_still_builds_the_default_graph() -> None:
    from graph import graph

    assert {"think", "review", "act", "observe", "finish"} <= set(graph.get_graph().nodes)


ENV_NAME = re.compile(r"\b(?:REACT_AGENT_[A-Z0-9_]+|OPENAI_[A-Z_]+)\b")
NOT_SETTINGS = {"OPENAI_ORG_ID"}  # named only to keep them out of tests


def test_every_environment_variable_is_declared_once() -> None:
    declared = set(ENV_VARS.values()) | {v.name for v in ENVIRONMENT}
    assert len(ENV_VARS) + len(ENVIRONMENT) == len(declared), "a variable is declared twice"
    used = set()
    for path in sources(*PACKAGES):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                used |= set(ENV_NAME.findall(node.value))
    undeclared = sorted(used - declared - NOT_SETTINGS)
    where = "graph/settings/fields.py (run settings) or graph/environment.py"
    assert undeclared == [], f"declare these in {where}: {undeclared}"


def test_no_cache_is_keyed_by_id() -> None:
    """No identity caches: a value cached by an object's `id()` is stale when the address is
    reused, and keeping one alive for a CPU ratio is not a cost users feel."""
    offenders = []
    for path in sources(*PACKAGES):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Call):
                call = node.slice
                if isinstance(call.func, ast.Name) and call.func.id == "id":
                    offenders.append(f"{path.name}:{node.lineno}")
            mapped = isinstance(node, ast.Call) and getattr(node.func, "id", "") == "map"
            if mapped and node.args and getattr(node.args[0], "id", "") == "id":  # identities
                offenders.append(f"{path.name}:{node.lineno}")
            lookup = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if lookup and node.func.attr in {"get", "setdefault", "pop"} and node.args:
                first = node.args[0]
                if isinstance(first, ast.Call) and getattr(first.func, "id", "") == "id":
                    offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
