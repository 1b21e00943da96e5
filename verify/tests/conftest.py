"""``pytest verify``: collect claim results from tests marked ``@pytest.mark.claim(ID)`` and write
the claim report at the end of the session (see :mod:`verify.report`).

A test records its check results through the ``claim`` fixture::

    @pytest.mark.claim("A1")
    def test_blockcausal_model_is_autoregressive(claim):
        result = claim.main(run_check("A1", {}, seed=7))
        assert result.holds, result.summary()

The verdict is decided by the claim's unit (:mod:`verify.claim`); a test only records it and
asserts its outcome. ``claim.negative(verdict)`` records a negative control's verdict, ``claim.figure(key, value)`` an extra
measured number, ``claim.note(text)`` a remark that goes into the report.

Sweeps over seeds, sizes and masks go through the ``check_sweep`` fixture, which runs the checks
as points of :func:`verify.sweep.sweep` on the session's executor (``--workers``,
``--scheduler``, ``--sweep-cache``; see the root ``conftest.py``)::

    results = check_sweep([dict(claim="D7", seed=s, mask=m) for s in seeds for m in masks])

The options are checked before anything runs: ``--workers`` must be a positive integer (it is
bounded by the CPUs), ``--sweep-cache`` and ``--report-dir`` must be writable folders and a
``--scheduler`` must answer; otherwise pytest stops with a usage error naming the option, instead
of marking claims failed. A failing sweep point becomes a verdict of outcome ``error``.

The session may run on several processes (``pytest -n 2``, pytest-xdist; ``bash run.sh`` does):
a test's records travel with its report (``user_properties``) to the process that writes the
report, whichever process ran the test, so the report is the same either way.

The report goes to ``--report-dir`` (default ``verify/report`` of the source checkout, or
``fastslow-report`` in the working directory when the package is installed). A partial session
(``-k``, ``-x``, an interruption) never replaces a complete report: it is written beside it as
``report.partial.json`` and ``REPORT.partial.md``, marked partial.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fastslow.verify import sweep
from fastslow.verify.json_values import jsonable
from fastslow.verify.outputs import writable_dir
from fastslow.verify.provenance import project_root, provenance
from fastslow.verify.registry import CLAIMS, run_check
from fastslow.verify.report import (
    ClaimLedger,
    build_report,
    complete_report_in,
    profile_text,
    write_report,
)
from fastslow.verify.verdict import Verdict

_LEDGER = pytest.StashKey[ClaimLedger]()
_CLAIM_OF = pytest.StashKey[dict]()
_REPORT_PATHS = pytest.StashKey[tuple]()
_DESELECTED = pytest.StashKey[set]()
_REPORTED = pytest.StashKey[set]()
_FEED = pytest.StashKey["_LedgerFeed"]()
_EVENTS = pytest.StashKey[list]()  # one test's records, until its report carries them
_PROPERTY = "fastslow.claim"  # the user property holding a verify test's claim and records
_HERE = Path(__file__).resolve().parent  # verify/tests: the claim tests
_VERIFY = _HERE.parent  # verify/: the package (fastslow.verify)


def pytest_configure(config):
    config.stash[_LEDGER] = ClaimLedger()
    config.stash[_CLAIM_OF] = {}
    config.stash[_DESELECTED] = set()
    config.stash[_REPORTED] = set()
    _check_options(config)
    config.stash[_FEED] = _LedgerFeed(config)
    config.pluginmanager.register(config.stash[_FEED], "fastslow-claim-ledger")


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


def report_dir(config) -> Path:
    """Where the report goes: ``--report-dir``, else ``verify/report`` of the source checkout, else
    ``fastslow-report`` in the working directory (never into an installed package)."""
    given = config.getoption("--report-dir")
    if given:
        return Path(given)
    return _VERIFY / "report" if project_root() is not None else Path.cwd() / "fastslow-report"


def _check_options(config) -> None:
    """``pytest.UsageError`` naming the option when ``--workers``, ``--sweep-cache``,
    ``--report-dir`` or ``--scheduler`` cannot work, before any test runs."""
    if config.option.collectonly:
        return
    try:
        workers = config.getoption("--workers")
        if workers is not None:
            sweep.max_workers(workers)
        cache = config.getoption("--sweep-cache")
        if cache:
            sweep.prepare_cache(cache, "--sweep-cache")
        if config.getoption("--report-dir"):
            writable_dir(config.getoption("--report-dir"), "--report-dir")
        scheduler = config.getoption("--scheduler")
        if scheduler:
            sweep.probe_scheduler(scheduler)
    except ValueError as exc:
        raise pytest.UsageError(str(exc).replace("workers must", "--workers must")) from None


def _in_verify(item) -> bool:
    return _HERE in Path(str(item.path)).resolve().parents


def pytest_collection_modifyitems(config, items):
    claim_of = config.stash[_CLAIM_OF]
    for item in items:
        if not _in_verify(item):
            continue
        marker = item.get_closest_marker("claim")
        if marker is None or not marker.args:
            raise pytest.UsageError(
                f"{item.nodeid}: every verify test needs @pytest.mark.claim(ID)"
            )
        cid = marker.args[0]
        if cid not in CLAIMS:
            raise pytest.UsageError(f"{item.nodeid}: unknown claim ID {cid!r}")
        claim_of[item.nodeid] = cid


def pytest_deselected(items):
    if items:
        config = items[0].config
        config.stash[_DESELECTED].update(i.nodeid for i in items if _in_verify(i))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the claim and the records of a verify test to its report (the process that writes
    the claim report enters them in its ledger: :class:`_LedgerFeed`)."""
    rep = yield
    cid = item.config.stash[_CLAIM_OF].get(item.nodeid)
    if cid is not None:
        events = item.stash.setdefault(_EVENTS, [])  # the claim fixture's list: emptied, kept
        rep.user_properties.append((_PROPERTY, {"claim": cid, "events": events[:]}))
        events.clear()
    return rep


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if _is_xdist_worker(config):  # the controller writes the report: hand it what was collected
        config.workeroutput["fastslow_claim_of"] = dict(config.stash[_CLAIM_OF])
        config.workeroutput["fastslow_deselected"] = sorted(config.stash[_DESELECTED])
        return
    if not config.stash[_CLAIM_OF] or config.option.collectonly:
        return
    config.stash[_FEED].fill(config.stash[_LEDGER])
    outdir = report_dir(config)
    prov = provenance()
    prov["profile"] = "thorough" if config.thorough else "default"
    why = _incomplete_reasons(session, exitstatus)
    report = build_report(config.stash[_LEDGER], prov, complete=not why, incomplete_reasons=why)
    stem = "report.partial" if why and complete_report_in(outdir) else "report"
    try:
        config.stash[_REPORT_PATHS] = write_report(report, outdir, stem)
    except OSError as exc:
        config.stash[_REPORT_PATHS] = (f"not written to {outdir}: {exc.strerror or exc}",)


class _LedgerFeed:
    """Collects each verify test's report (outcome and records) in the process that writes the
    claim report: the only one, or the controller of ``pytest -n``."""

    def __init__(self, config):
        self.config = config
        self.received: list[tuple] = []

    def pytest_runtest_logreport(self, report):
        payload = next((v for k, v in report.user_properties if k == _PROPERTY), None)
        if payload is not None and not _is_xdist_worker(self.config):
            self.received.append(
                (report.nodeid, report.when, report.outcome, report.duration, payload)
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        """``pytest -n``: the collected tests, in collection order, as soon as a worker has them
        (so an interrupted session still knows what it did not run)."""
        claim_of = self.config.stash[_CLAIM_OF]
        for nodeid in ids:
            if (self.config.rootpath / nodeid.split("::")[0]).resolve().parent == _HERE:
                claim_of.setdefault(nodeid, None)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """``pytest -n``: a worker's collected (in collection order) and deselected verify tests."""
        out = getattr(node, "workeroutput", {})
        self.config.stash[_CLAIM_OF].update(out.get("fastslow_claim_of", {}))
        self.config.stash[_DESELECTED].update(out.get("fastslow_deselected", []))

    def fill(self, ledger: ClaimLedger) -> None:
        """Enter what was received into ``ledger`` in collection order, whichever process ran
        which test when (the report does not depend on ``-n``)."""
        order = {nodeid: i for i, nodeid in enumerate(self.config.stash[_CLAIM_OF])}
        phases = {"setup": 0, "call": 1, "teardown": 2}
        received = sorted(self.received, key=lambda r: (order.get(r[0], len(order)), phases[r[1]]))
        for nodeid, when, outcome, duration, payload in received:
            cid = payload["claim"]
            for kind, *args in payload["events"]:
                if kind in ("main", "negative"):
                    ledger.record(cid, Verdict.from_json(args[0]), negative=kind == "negative")
                elif kind == "figure":
                    ledger.figure(cid, args[0], args[1])
                else:
                    ledger.note(cid, args[0])
            if when == "call" or outcome != "passed":
                ledger.outcome(cid, nodeid, outcome, duration)
                self.config.stash[_REPORTED].add(nodeid)


class ClaimRecorder:
    """Records the results of one claim's test; they reach the session's ledger with the test's
    report."""

    def __init__(self, events: list, claim_id: str):
        self._events = events
        self.id = claim_id

    def _record(self, kind: str, result) -> None:
        # the ledger's own checks, when the test records (a wrong record fails that test)
        ClaimLedger().record(self.id, result, negative=kind == "negative")
        self._events.append((kind, result.to_json()))

    def main(self, result):
        """Record the check on an instance satisfying the hypotheses; return the result."""
        self._record("main", result)
        return result

    def holds(self, params: dict | None = None, seed: int | None = None):
        """Decide this claim on the instance ``params``/``seed``, record it as a main instance and
        assert that it holds; return the verdict."""
        result = self.main(run_check(self.id, params, seed))
        assert result.outcome == "holds", result.summary()
        return result

    def negative(self, result):
        """Record a negative control (a violated hypothesis); return the result."""
        self._record("negative", result)
        return result

    def figure(self, key: str, value) -> None:
        self._events.append(("figure", key, jsonable(value)))

    def note(self, text: str) -> None:
        self._events.append(("note", text))


@pytest.fixture
def claim(request) -> ClaimRecorder:
    marker = request.node.get_closest_marker("claim")
    if marker is None:
        raise pytest.UsageError("the claim fixture needs @pytest.mark.claim(ID)")
    return ClaimRecorder(request.node.stash.setdefault(_EVENTS, []), marker.args[0])


@pytest.fixture(scope="session")
def thorough(request) -> bool:
    """True under ``--thorough``: run the long sweeps."""
    return bool(request.config.thorough)


@pytest.fixture(scope="session")
def sweep_executor(request):
    """The executor of the verify sweeps: serial, a local process pool, or a Dask cluster."""
    config = request.config
    workers = config.getoption("--workers")
    # under pytest -n too: a pool per process, so a long sweep left last still uses every CPU
    if workers is None:
        workers = (os.cpu_count() or 1) if config.thorough else 1
    with sweep.executor_for(workers, config.getoption("--scheduler")) as executor:
        yield executor


@pytest.fixture
def check_sweep(request, sweep_executor):
    """``check_sweep(points) -> [Verdict]``: ``run_check(**point)`` for every point, as a sweep.

    Each point is ``dict(claim=ID, seed=N, **params)``. The results are the same whatever the
    executor (see :mod:`verify.sweep`).
    """
    cache = request.config.getoption("--sweep-cache")

    def run(points: list[dict], label: str | None = None) -> list[Verdict]:
        results = sweep.sweep(
            sweep.check_point,
            points,
            executor=sweep_executor,
            cache_dir=cache,
            label=label or request.node.name,
            on_error=sweep.check_point_error,
        )
        return [Verdict.from_json(r) for r in results]

    return run


def _incomplete_reasons(session, exitstatus) -> list[str]:
    """Why this session's report does not cover the whole verify suite (empty when it does)."""
    config = session.config
    why = []
    deselected = config.stash[_DESELECTED]
    if deselected:
        why.append(f"{len(deselected)} verify test(s) deselected (-k/-m or similar)")
    not_run = sorted(set(config.stash[_CLAIM_OF]) - config.stash[_REPORTED] - set(deselected))
    if not_run:
        why.append(f"{len(not_run)} collected verify test(s) did not run (stopped early)")
    if exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop:
        why.append("the session was interrupted or stopped early")
    collected_files = {Path(n.split("::")[0]).name for n in config.stash[_CLAIM_OF]}
    all_files = {p.name for p in _HERE.glob("test_*.py")}
    if all_files - collected_files:
        why.append(
            "not every verify test module was collected: missing "
            + ", ".join(sorted(all_files - collected_files))
        )
    return why


def pytest_terminal_summary(terminalreporter, config):
    paths = config.stash.get(_REPORT_PATHS, None)
    if paths and isinstance(paths[0], str):
        terminalreporter.write_sep("=", "fastslow claim report " + paths[0])
    elif paths:
        rep = json.loads(paths[0].read_text())
        terminalreporter.write_sep(
            "=", "fastslow claim report" + ("" if rep["complete"] else " (PARTIAL)")
        )
        for c in rep["claims"]:
            terminalreporter.write_line(
                f"{c['id']:>3}  {c['status']:<9} negative control: "
                f"{c['negative_control']:<18} {c['title']}{profile_text(c)}"
            )
            for r in c["reasons"][:3]:
                terminalreporter.write_line(f"       {r}")
        terminalreporter.write_line(
            "main instances: " + ", ".join(f"{n} {o}" for o, n in rep["outcomes"].items())
        )
        for r in rep["incomplete_reasons"]:
            terminalreporter.write_line(f"partial: {r}")
        if paths[0].name == "report.partial.json":
            terminalreporter.write_line(
                "partial session: the complete report.json beside it is kept unchanged"
            )
        terminalreporter.write_line(f"report: {paths[0]}")
        terminalreporter.write_line(f"        {paths[1]}")
