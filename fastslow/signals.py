"""The command line's one rule for SIGINT and SIGTERM, from its first statement to its last.

**The rule.** :func:`install` is the first thing the ``fastslow`` command runs (``fastslow/__main__.py``,
before argparse, NumPy or any claim is imported). From then on, to the end of the command:

* SIGINT (Ctrl-C) ends the command with exit 130 and SIGTERM with exit 143, with one line on
  stderr (``fastslow COMMAND: interrupted``) and no traceback, wherever the signal lands (while
  the command imports, while it parses its arguments, while its workers start or run). Nothing
  partial is left: outputs are written atomically, a sweep keeps its finished points in its
  cache and stops its workers.
* A SIGINT that is *ignored* when the command starts (``signal.SIG_IGN`` inherited, as POSIX
  shells start the background jobs of a script) stays ignored for the whole run: no handler is
  ever installed for it, so the command runs to its end whenever a SIGINT comes. SIGTERM still
  ends it with 143.

Both handlers raise :class:`KeyboardInterrupt` (the interpreter's own way to stop at the next
bytecode), after recording the signal, so every ``except KeyboardInterrupt`` of the code (the
sweep's clean-up, the command line's one line) serves both; :func:`exit_code` says which.

**Test hook.** ``FASTSLOW_SIGNAL_AT=POINT:SIGNAL`` (e.g. ``parse:INT``) makes the process send
itself the signal when it reaches the named point of its start-up (:data:`POINTS`), so the tests
deliver a signal at a defined moment instead of after a delay.

**Caveat.** The interpreter's own start-up, before the first statement of the package runs, is
Python's: a SIGINT there is reported by the interpreter.
"""

from __future__ import annotations

import os
import signal

HOOK_ENV = "FASTSLOW_SIGNAL_AT"
"""Test hook: ``POINT:SIGNAL`` sends ``SIGSIGNAL`` to this process when it reaches ``POINT``."""

POINTS = ("start", "imports", "parse", "run")
"""The defined moments of the command's start-up: handlers just installed, heavy imports under
way, the parser being built, the command about to run."""

_STATE: dict = {"installed": False, "signum": None, "inherited_ignore": False}


def _raise(signum, frame) -> None:
    _STATE["signum"] = signum
    raise KeyboardInterrupt


def install() -> dict | None:
    """Install the rule's handlers in this (main) thread and return the handlers they replace
    (for :func:`restore`); ``None`` when they are installed already or this is not the main
    thread (the signals are then left alone)."""
    if _STATE["installed"]:
        return None
    try:
        ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _raise)}
        if not ignored:
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, _raise)
    except ValueError:  # not the main thread
        return None
    _STATE.update(installed=True, inherited_ignore=ignored, signum=None)
    return previous


def restore(previous: dict | None) -> None:
    """Put back the handlers :func:`install` replaced (an in-process call of the command line
    leaves its caller's signals as it found them); ``None``: nothing to do."""
    if previous is None:
        return
    for signum, handler in previous.items():
        signal.signal(signum, handler)
    _STATE["installed"] = False


def stop_handling() -> None:
    """Ignore further SIGINT and SIGTERM while the command reports the first one and exits."""
    try:
        if not _STATE["inherited_ignore"]:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except ValueError:
        pass


def sigint_ignored() -> bool:
    """Whether SIGINT was ignored when :func:`install` ran (it then stays ignored)."""
    return bool(_STATE["inherited_ignore"])


def exit_code() -> int:
    """128 + the signal that stopped the command (SIGINT if none was recorded)."""
    return 128 + int(_STATE["signum"] or signal.SIGINT)


def point(name: str) -> None:
    """Reached the start-up moment ``name``: send the signal the test hook asks for there."""
    spec = os.environ.get(HOOK_ENV)
    if not spec:
        return
    where, _, sig = spec.partition(":")
    if where == name:
        os.kill(os.getpid(), getattr(signal, "SIG" + (sig or "INT")))
