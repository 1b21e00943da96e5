"""The house reads in one direction (docs/architecture.md).

Packages, bottom to top: ``theory`` and ``numerics`` (independent of each other), ``verify``,
``figures``, ``fastslow``. A module may import only from its own package or from a package below
it, so the package-level import graph has no cycle. Inside ``numerics`` the subpackages are layered
too: the infrastructure modules (``validation``, ``lapack``, ``jit_cache``, ``lanes``), then
``integrators``, then ``model``, then ``analysis`` and ``toy``. No module imports another package's (or another
``numerics`` subpackage's) underscore names. An import inside a function is allowed only with a
``# deferred: <reason>`` or ``# optional ...`` comment on its line.

The four design packages are imported by their installed names, ``fastslow.theory``,
``fastslow.numerics``, ``fastslow.verify`` and ``fastslow.figures`` (``pyproject.toml`` installs
them inside ``fastslow``); a bare ``import numerics`` would work in the repository and fail in an
installed copy, so it is a violation too. Below, a module's name is its path in the repository
(``numerics.model.layer``) and an import target is read without the ``fastslow.`` prefix.
"""

from __future__ import annotations

import ast
import subprocess
import tomllib
from pathlib import Path

import pytest

from fastslow import DESIGN_PACKAGES  # installed as fastslow.<name>

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"theory": 0, "numerics": 0, "verify": 1, "figures": 2, "fastslow": 3}
NUMERICS_LAYERS = {
    "validation": 0,
    "lapack": 0,
    "user_cache": 0,
    "threads": 0,
    "jit_cache": 0.5,  # infrastructure too, resting on user_cache (where every cache lives)
    "lanes": 0,
    "integrators": 1,
    "model": 2,
    "analysis": 3,
    "toy": 3,
    "lm": 3,
}


def _git_files(*patterns: str) -> list[str]:
    """Tracked and untracked (not ignored) files matching ``patterns``, relative to the root."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *patterns],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [f for f in out.stdout.split() if (ROOT / f).exists()]


_PROBES: dict[Path, Path] = {}
"""Planted modules: their file (in a test's tmp_path) → where the checkers read them in the tree.
Never written into the checkout, where another test process may be copying the sources."""


def _sources() -> list[Path]:
    return [ROOT / f for f in _git_files("*.py") if f.split("/")[0] in LAYERS] + list(_PROBES)


def _tree_path(path: Path) -> Path:
    """``path`` relative to the root (a planted probe: where it stands in for a module)."""
    return _PROBES.get(path) or path.relative_to(ROOT)


def _module_name(path: Path) -> str:
    parts = list(_tree_path(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _logical(dotted: str) -> str:
    """``fastslow.numerics.model`` → ``numerics.model`` (the folder it lives in); else unchanged."""
    parts = dotted.split(".")
    if len(parts) > 1 and parts[0] == "fastslow" and parts[1] in DESIGN_PACKAGES:
        return ".".join(parts[1:])
    return dotted


def _is_module(dotted: str) -> bool:
    dotted = _logical(dotted)
    base = ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _imports(path: Path):
    """``(lineno, target module, imported names, inside a function, bare)`` of every import; the
    target without its ``fastslow.`` prefix, ``bare`` when a design package was imported by its
    top-level name."""
    tree = ast.parse(path.read_text())
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inner = {
        id(s) for f in funcs for s in ast.walk(f) if isinstance(s, (ast.Import, ast.ImportFrom))
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bare = alias.name.split(".")[0] in DESIGN_PACKAGES
                yield node.lineno, _logical(alias.name), [], id(node) in inner, bare
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
                bare = False
            else:
                mod = node.module or ""
                bare = mod.split(".")[0] in DESIGN_PACKAGES
            names = [a.name for a in node.names]
            # ``from pkg import module`` imports the module itself
            for name in names:
                if _is_module(f"{mod}.{name}"):
                    yield node.lineno, _logical(f"{mod}.{name}"), [], id(node) in inner, bare
                else:
                    yield node.lineno, _logical(mod), [name], id(node) in inner, bare


def _first_party(mod: str) -> bool:
    return mod.split(".")[0] in LAYERS


def _numerics_part(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "numerics" else None


def _violations() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {
        "layer": [],
        "numerics": [],
        "underscore": [],
        "inner": [],
        "bare": [],
    }
    for path in _sources():
        me = _module_name(path)
        rel = _tree_path(path)
        lines = path.read_text().splitlines()
        for lineno, target, names, inside, bare in _imports(path):
            where = f"{rel}:{lineno} imports {target}{(' ' + ','.join(names)) if names else ''}"
            if bare:
                found["bare"].append(where)
            if (
                inside
                and "deferred:" not in lines[lineno - 1]
                and "optional" not in lines[lineno - 1]
            ):
                found["inner"].append(where)
            if not _first_party(target):
                continue
            src_pkg, dst_pkg = me.split(".")[0], target.split(".")[0]
            if src_pkg != dst_pkg:
                if LAYERS[dst_pkg] >= LAYERS[src_pkg]:
                    found["layer"].append(where)
            elif src_pkg == "numerics" and me != "numerics":
                a, b = _numerics_part(me), _numerics_part(target)
                if b is None:  # the facade numerics/__init__ sits above every subpackage
                    found["numerics"].append(where)
                elif a != b and NUMERICS_LAYERS[b] >= NUMERICS_LAYERS[a]:
                    found["numerics"].append(where)
            same_unit = src_pkg == dst_pkg and (
                src_pkg != "numerics" or _numerics_part(me) == _numerics_part(target)
            )
            if not same_unit:
                private = [n for n in names if n.startswith("_")]
                private += [p for p in target.split(".") if p.startswith("_") and p != "__init__"]
                if private:
                    found["underscore"].append(where)
    return found


@pytest.fixture(scope="module")
def violations():
    return _violations()


def test_packages_import_only_downwards(violations):
    """theory/numerics < verify < figures < fastslow; theory and numerics never import each other."""
    assert violations["layer"] == []


def test_design_packages_are_imported_by_their_installed_names(violations):
    """``from fastslow.numerics import …``, never ``from numerics import …`` (absent when installed)."""
    assert violations["bare"] == []


def test_pyproject_installs_every_package_under_fastslow():
    """Every folder with an ``__init__.py`` is installed, as ``fastslow.<path>``, and nothing else
    becomes a top-level name of site-packages."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(tool["packages"])
    on_disk = {
        _module_name(ROOT / f)
        for f in _git_files("*/__init__.py")
        if f.split("/")[0] in LAYERS and f.count("/") >= 1
    }
    expected = {m if m.startswith("fastslow") else f"fastslow.{m}" for m in on_disk}
    assert listed == expected
    assert {p.split(".")[0] for p in listed} == {"fastslow"}
    assert tool["package-dir"] == {f"fastslow.{p}": p for p in DESIGN_PACKAGES}
    # in the repository the folders are the real sources: fastslow/<name> only links to them
    # (tests/test_layout.py), so package-dir builds the wheel from the real folders
    assert set(LAYERS) == {"fastslow", *DESIGN_PACKAGES}


def test_numerics_subpackages_import_only_downwards(violations):
    """validation/lapack/jit_cache/lanes < integrators < model < analysis, toy; nobody imports the
    facade."""
    assert violations["numerics"] == []


def test_no_import_of_another_packages_underscore_names(violations):
    assert violations["underscore"] == []


def test_imports_inside_functions_state_their_reason(violations):
    assert violations["inner"] == []


def test_the_checker_sees_a_planted_violation(tmp_path, monkeypatch):
    """Non-vacuity: an upward import, an underscore import and a bare inner import are caught."""
    fake = tmp_path / "_architecture_probe.py"
    fake.write_text(
        "from fastslow.verify.params import Param\n"
        "from fastslow.numerics.model.layer import _private\n"
        "from numerics import validation\n"
        "def f():\n    from fastslow import figures\n"
    )
    monkeypatch.setitem(_PROBES, fake, Path("numerics/toy/_architecture_probe.py"))
    found = _violations()
    assert any("_architecture_probe" in w for w in found["layer"])
    assert any("_architecture_probe" in w for w in found["underscore"])
    assert any("_architecture_probe" in w for w in found["inner"])
    assert any("_architecture_probe" in w for w in found["bare"])


def _reexport_violations() -> list[str]:
    """Imports of ``numerics`` through a package's re-export, in every Python file of the
    repository (tests and tools too): ``import fastslow.numerics`` (as ``nm`` or otherwise) or
    ``from fastslow.numerics[.sub] import NAME`` where ``NAME`` is not a module of that package.
    The one style: a name from the module that defines it, or that module itself
    (docs/architecture.md, "One import style")."""
    found = []
    for path in [ROOT / f for f in _git_files("*.py")] + list(_PROBES):
        rel = _tree_path(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found += [
                    f"{rel}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if a.name in ("fastslow.numerics", "numerics")
                ]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                target = _logical(node.module)
                if target.split(".")[0] != "numerics":
                    continue
                if not (ROOT.joinpath(*target.split(".")) / "__init__.py").exists():
                    continue  # a module: its names are defined there
                found += [
                    f"{rel}:{node.lineno} imports {a.name} from the package {target}"
                    for a in node.names
                    if not _is_module(f"{target}.{a.name}")
                ]
    return found


def test_numerics_is_imported_from_the_modules_that_define_its_names():
    """No ``import fastslow.numerics as nm``, no name taken from a package's ``__init__``."""
    assert _reexport_violations() == []


def test_the_import_style_rule_sees_a_planted_reexport(tmp_path, monkeypatch):
    """Non-vacuity: the facade import and a name from a subpackage's ``__init__`` are caught;
    a module and a name from its defining module are not."""
    fake = tmp_path / "_style_probe.py"
    fake.write_text(
        "import fastslow.numerics as nm\n"
        "from fastslow.numerics.integrators import integrate\n"
        "from fastslow.numerics.model import pooling\n"
        "from fastslow.numerics.model.weights import ModelConfig\n"
    )
    monkeypatch.setitem(_PROBES, fake, Path("tests/_style_probe.py"))
    found = [w for w in _reexport_violations() if "_style_probe" in w]
    assert len(found) == 2
    assert any("fastslow.numerics" in w for w in found)
    assert any("integrate from the package numerics.integrators" in w for w in found)


def test_code_cites_the_repository_not_an_outside_spec():
    """Claim statements live in docs/claims.md; no source cites a file outside the repository."""
    files = _git_files("*.py", "*.md", "*.sh", "*.toml")
    outside = "SPEC" + " §"  # spelled in two parts so that this file does not cite it
    cited = [f for f in files if outside in (ROOT / f).read_text(errors="replace")]
    assert cited == []


def _reference_violations() -> list[str]:
    """Imports of ``numerics`` or ``theory`` by a module of ``verify.reference``."""
    found = []
    for path in _sources():
        me = _module_name(path)
        if not (me == "verify.reference" or me.startswith("verify.reference.")):
            continue
        for lineno, target, _names, _, _ in _imports(path):
            if target.split(".")[0] in ("numerics", "theory"):
                found.append(f"{_tree_path(path)}:{lineno} imports {target}")
            if target.split(".")[0] == "verify" and not target.startswith("verify.reference"):
                found.append(f"{_tree_path(path)}:{lineno} imports {target}")
    return found


def test_references_share_no_code_with_the_code_under_test():
    """``verify.reference`` (the formulas written out independently) imports nothing from
    ``numerics``, ``theory`` or the rest of ``verify``: only NumPy and the standard library."""
    assert _reference_violations() == []


def test_the_reference_rule_sees_a_planted_import(tmp_path, monkeypatch):
    fake = tmp_path / "_probe.py"
    fake.write_text("from fastslow.numerics.model import kernels\nimport fastslow.theory.kernels\n")
    monkeypatch.setitem(_PROBES, fake, Path("verify/reference/_probe.py"))
    found = _reference_violations()
    assert sum("_probe" in w for w in found) == 2
