"""fastslow: a numerical verification suite for the fast–slow ODE reading of hierarchical Transformers.

The subpackages: :mod:`fastslow.theory` (SymPy derivations), :mod:`fastslow.numerics` (the engine),
:mod:`fastslow.verify` (claim units, shared measurement, sweeps and the report),
:mod:`fastslow.figures` (one function per figure) and this package's own modules, the command line
and the entry points for users:

* :func:`check` — a claim's verdict on a built-in instance or on your own toy system
  (:mod:`fastslow.toy`);
* :mod:`fastslow.toy` — the kinds of toy system (:class:`~fastslow.toy.LinearLoop`,
  :class:`~fastslow.toy.GeneratorFamily`, :class:`~fastslow.toy.DepthFlow`).

Where the subpackages live. In the repository they are the top-level folders ``theory/``,
``numerics/``, ``verify/`` and ``figures/``, the real sources, and ``fastslow/theory`` and its three
siblings are committed relative symbolic links to them (``fastslow/numerics -> ../numerics``). So a
source checkout has the layout of an installed copy (wheel: ``package-dir`` in ``pyproject.toml``
puts the folders inside the ``fastslow`` package): Python, mypy and pyright all find
``fastslow.numerics`` in ``fastslow/numerics``, and installing fastslow adds one top-level name,
``fastslow``, that never shadows or overwrites another distribution's ``theory`` or ``figures``.
One module name per file: each design package refuses to be imported under any other name
(``import numerics`` from the checkout's root raises ImportError naming ``fastslow.numerics``),
nothing else of the checkout is reachable as ``fastslow.<name>``, and a folder without
``__init__.py`` (the claim tests, ``verify/tests``) is not a package of fastslow
(:class:`_NoFolderPackages`). A checkout without the links (a
clone with ``core.symlinks=false``, Git's default on Windows, where each link is a small text file;
an unpacked sdist) still runs: this package then finds exactly the four design packages beside it
(:class:`_DesignFolders`), though static tools do not see them. docs/architecture.md weighs the
alternatives. Importing ``fastslow`` itself is cheap: :func:`check` loads the claim units when
called.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

    from fastslow.verify.verdict import Verdict

DESIGN_PACKAGES = ("theory", "numerics", "verify", "figures")
"""The design's packages, the checkout's top-level folders, imported as ``fastslow.<name>``: the
one list (tests/test_layout.py checks ``pyproject.toml``, the committed links, ``conftest.py`` and
the others against it)."""


def _source_checkout_root() -> Path | None:
    """The checkout's root when this package runs from a source checkout (``pyproject.toml`` and
    the design folders beside this package), else ``None`` (an installed copy)."""
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and all(
        (root / name / "__init__.py").is_file() for name in DESIGN_PACKAGES
    ):
        return root
    return None


class _DesignFolders(importlib.abc.MetaPathFinder):
    """Finds the design packages named in ``folders`` (``fastslow.<name>`` → its folder) and
    nothing else: how a checkout whose links are not directories reaches them. Their submodules
    are found by the package's own ``__path__`` (the folder)."""

    def __init__(self, folders: dict[str, Path]):
        self.folders = folders

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def _unlinked_design_folders(root: Path | None) -> dict[str, Path]:
    """``{"fastslow.<name>": <root>/<name>}`` for each design package whose link
    ``fastslow/<name>`` is not a directory in the source checkout ``root`` (Git with
    ``core.symlinks=false`` writes a link as a text file holding its target; an sdist has no
    links); empty with the links, or in an installed copy (``root`` is ``None``)."""
    if root is None:
        return {}
    here = Path(__file__).resolve().parent
    return {
        f"{__name__}.{name}": root / name for name in DESIGN_PACKAGES if not (here / name).is_dir()
    }


class _NoFolderPackages(importlib.abc.MetaPathFinder):
    """Refuses ``fastslow.<…>.<folder>`` where ``<folder>`` has no ``__init__.py`` (Python would
    import it as a namespace package): such a folder is not part of the package, and its files
    would get a second module name. The one today is ``verify/tests``, the claim tests, which
    ``pytest verify`` imports by their base names (``test_a1_causality``); through the package's
    path ``fastslow.verify.tests.test_a1_causality`` would name the same file again."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not fullname.startswith(f"{__name__}.") or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.origin is None and spec.submodule_search_locations:
            folder = list(spec.submodule_search_locations)[0]
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: {folder} has no __init__.py, so it is not a "
                f"package of {__name__}",
                name=fullname,
            )
        return None


_root = _source_checkout_root()
if not any(type(f).__name__ == _NoFolderPackages.__name__ for f in sys.meta_path):  # once
    sys.meta_path.insert(0, _NoFolderPackages())
_unlinked = _unlinked_design_folders(_root)
if _unlinked and not any(getattr(f, "folders", None) == _unlinked for f in sys.meta_path):
    sys.meta_path.insert(0, _DesignFolders(_unlinked))


def _version() -> str:
    """This copy's version: in a source checkout the ``version`` of its ``pyproject.toml`` (the
    code that runs is the checkout's, whatever copy is installed in the environment), else the
    installed distribution's metadata (:func:`importlib.metadata.version`); ``"unknown"`` when
    neither says."""
    if _root is not None and (_root / "pyproject.toml").is_file():
        import tomllib  # deferred: only a source checkout reads its pyproject.toml

        with open(_root / "pyproject.toml", "rb") as fh:
            return str(tomllib.load(fh)["project"]["version"])
    from importlib import metadata  # deferred: only an installed copy reads its metadata

    try:
        return metadata.version("fastslow")
    except metadata.PackageNotFoundError:
        return "unknown"


__version__ = _version()
__all__ = ["check", "claims_for"]


def check(
    claim_id: str,
    system=None,
    params: Mapping | None = None,
    seed: int = 0,
    *,
    control: str | None = None,
) -> Verdict:
    """The verdict of claim ``claim_id`` on ``system`` (a :mod:`fastslow.toy` system) or, without
    one, on the built-in instance ``params``/``seed`` (or the negative control ``control``).

    The verdict (:class:`fastslow.verify.verdict.Verdict`) is the same object, with the same
    outcomes and JSON, as for the built-in instances, decided by the claim's unit alone:

    * ``holds``: the hypotheses and the conclusion hold;
    * ``fails``: the hypotheses hold and a part of the conclusion does not (a counterexample;
      a limit of the check hides only the parts it governs), or a hypothesis does not hold on one
      of the claim's declared main instances (a failure of the suite);
    * ``outside-hypotheses``: a hypothesis diagnostic of your system does not hold (the
      conclusion is still reported);
    * ``undecided``: the check's own numerics cannot decide this instance (a declared limit of the
      check, in ``verdict.limits``, does not hold: integrators disagreeing beyond their
      tolerances, no asymptotic window above the accuracy floor, an accuracy asked for and not
      reached);
    * ``error``: the check raised on a valid input (the exception is in ``verdict.error``).

    Each hypothesis records how it was decided (``verdict.sources``: ``input``, ``theory``,
    ``reference`` or ``implementation``). Bad input (an unknown parameter, a system of a kind the
    claim does not check) raises ``ValueError`` naming it and the claims that do check that kind;
    a broken system (non-finite or complex entries, wrong shapes, a field mutated after
    construction: the system is validated again, on a copy, before any work; a ``describe()``
    that raises) raises ``ValueError`` or ``TypeError`` naming the fault, and time and memory
    are estimated on the system's own sizes (over budget: ``ValueError``).
    """
    from fastslow.verify.registry import get_claim  # deferred: `import fastslow` stays cheap

    return get_claim(claim_id).check(params, seed, control=control, system=system)


def claims_for(system) -> list[str]:
    """The IDs of the claims that can check ``system`` (a :mod:`fastslow.toy` system, an instance
    or a kind)."""
    from fastslow.verify import registry  # deferred: `import fastslow` stays cheap

    return registry.claims_for(system)
