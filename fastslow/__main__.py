"""The ``fastslow`` command (``python -m fastslow``, and the ``fastslow`` script's entry point).

The signal rule (:mod:`fastslow.signals`) is installed first, before the command line and its
heavy imports are loaded, so a SIGINT or SIGTERM at any moment ends the command the same way.
"""

import os
import sys

from fastslow import signals

signals.install()
try:
    signals.point("start")
    from fastslow.cli import main as _command_line
except KeyboardInterrupt:  # while the command line loads: one line, the signal's code
    print("fastslow: interrupted while starting", file=sys.stderr, flush=True)
    os._exit(signals.exit_code())  # at once: nothing ran yet


def main(argv=None) -> int:
    """Run the command line (:func:`fastslow.cli.main`) under the signal rule."""
    return _command_line(argv)


if __name__ == "__main__":
    sys.exit(main())
