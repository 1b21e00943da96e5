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
``numerics/``, ``verify/`` and ``figures/``. An installed copy (wheel) has them inside the
``fastslow`` package (``package-dir`` in ``pyproject.toml``), so installing fastslow adds one
top-level name, ``fastslow``, and never shadows or overwrites another distribution's ``theory`` or
``figures``. In a source checkout (pytest from the root, ``python -m fastslow`` there, the editable
install of ``run.sh``) this package's ``__path__`` is extended by the checkout's root, so that
``fastslow.numerics`` is the folder ``numerics/``: one module name per file, no symbolic link, no
import hook of ours (docs/architecture.md weighs the alternatives). Importing ``fastslow`` itself is
cheap: :func:`check` loads the claim units when called.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastslow.verify.verdict import Verdict

DESIGN_PACKAGES = ("theory", "numerics", "verify", "figures")
"""The design's top-level folders, imported as ``fastslow.<name>``."""


def _source_checkout_root() -> Path | None:
    """The checkout's root when this package runs from a source checkout (the design packages are
    the root's folders, not inside this package), else ``None`` (an installed copy)."""
    here = Path(__file__).resolve().parent
    if all((here / name / "__init__.py").is_file() for name in DESIGN_PACKAGES):
        return None
    root = here.parent
    if all((root / name / "__init__.py").is_file() for name in DESIGN_PACKAGES):
        return root
    return None


_root = _source_checkout_root()
if _root is not None:  # fastslow.numerics is <root>/numerics, and so on
    __path__.append(str(_root))


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
