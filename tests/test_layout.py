"""The rooms of the code (ARCHITECTURE.md): the modules of autograder, posenc and arena import each other without a
cycle, counting the imports inside functions and module ``__getattr__`` hooks too (so none can hide one); the
student's kernel imports only the modules the sandbox mounts; the installed package imports no test data; and
ARCHITECTURE.md names every Python file outside tests/ and only paths that exist."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

import bench_grading  # tools/ (on the path through support.py)
import synthetic
from autograder.sandbox import KERNEL_MODULES
from support import ROOT

PACKAGE = ROOT / "autograder"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: str) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / package).rglob("*.py")) if p.name != "nbgrader_config.py"}


def _imports(name: str, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that ``name`` imports anywhere in its source (module level or inside functions)."""
    path = modules[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            # `from . import checks` imports a submodule; `from .course import ROOT` the module itself
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                       for alias in node.names]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def _graph(package: str) -> dict[str, set[str]]:
    modules = _modules(package)
    return {name: _imports(name, modules) for name in modules}


MODULES = _modules("autograder")
GRAPH = _graph("autograder")


@pytest.mark.parametrize("package", ["autograder", "posenc", "arena"])
def test_no_import_cycle(package):
    # (a module may use its package's namespace, e.g. posenc.explorer's `import posenc`: not a cycle of modules)
    graph = {name: targets - {package} for name, targets in _graph(package).items()}
    done, path = set(), []

    def visit(name):
        if name in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(name):] + [name]))
        if name in done:
            return
        path.append(name)
        for target in sorted(graph[name]):
            visit(target)
        path.pop()
        done.add(name)

    for name in graph:
        visit(name)


def test_posenc_loads_torch_lazily_in_one_place():
    """Only posenc/__init__'s _LAZY table defers an import through a module __getattr__."""
    hooks = [name for name, path in _modules("posenc").items()
             if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in ast.parse(path.read_text()).body)]
    assert hooks == ["posenc"]


def test_the_kernel_imports_only_what_the_sandbox_mounts():
    """checks, agent and wire run in the student's kernel, where the sandbox mounts only the
    modules of KERNEL_MODULES: whatever of autograder they import must be among them."""
    kernel = {"autograder" if m == "__init__" else f"autograder.{m}" for m in KERNEL_MODULES}
    assert kernel <= set(MODULES), kernel - set(MODULES)
    for name in kernel:
        assert GRAPH[name] <= kernel, f"{name} imports {sorted(GRAPH[name] - kernel)}, which the sandbox does not mount"
    # and every kernel module is needed: the agent is the kernel's extension, checks its setup cell's
    config = (PACKAGE / "nbgrader_config.py").read_text()
    assert "extensions=autograder.agent" in config


def test_the_package_imports_no_test_data():
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert not [m for m in imported if m.split(".")[0] in ("synthetic", "tests", "support")], name


def test_the_benchmark_grades_the_tests_synthetic_class():
    """tools/bench_grading.py takes its submissions from the checkout's tests/synthetic/, the same builder the
    tests use (the package has no copy of it)."""
    assert bench_grading.synthetic_builder() is synthetic.Builder


# ---------------------------------------------------------------------------------------------------------
# ARCHITECTURE.md matches the tree.

ARCHITECTURE = (ROOT / "ARCHITECTURE.md").read_text()
# A path in backticks: a file with an extension or a folder ending in "/"; `<ch>`-style placeholders are not paths.
NAMED_PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)*(?:\.(?:py|md|sh|json|yml|yaml|toml|bib|txt|in)|/))`")


def test_every_python_file_outside_the_tests_has_a_room():
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    files = [f for f in tracked.stdout.splitlines() if not f.startswith("tests/")]
    assert files, "git ls-files found no Python file"
    unnamed = [f for f in files if f"`{f}`" not in ARCHITECTURE]
    assert not unnamed, f"ARCHITECTURE.md does not name {unnamed}: give each a row in its room's table"


def test_every_path_the_architecture_names_exists():
    named = set(NAMED_PATH.findall(ARCHITECTURE))
    assert len(named) > 50, sorted(named)
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"ARCHITECTURE.md names {missing}, which the repository does not have"
