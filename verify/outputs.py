"""Where the command line, the report and the figures write their files, and how.

Every output of the suite goes through this module, so one rule holds everywhere:

* **Regular files are replaced atomically.** The text is written to a temporary file in the same
  folder, flushed, given the permissions a new file would get (``0o666`` less the user's umask,
  so 0644 under the usual umask 022; an existing file keeps its own mode), and renamed over the
  target: a reader sees the old file or the new one, never half of one, and a full disk leaves
  the old file whole.
* **A symbolic link is followed, never replaced.** The file it points to is written (atomically,
  in the target's folder); the link stays a link. A dangling link creates its target.
* **A device or a FIFO is written directly** (``/dev/null``, ``/dev/stdout``, a terminal, a named
  pipe): it is opened for writing as a shell's ``>`` would open it, never renamed over, so
  ``--out /dev/null`` cannot replace the machine's device with a regular file. A write that the
  device refuses (``/dev/full``) is an :class:`OSError` naming it.
* ``-`` is standard output, and what a user's code prints goes to standard error
  (:func:`stdout_to_stderr`), never into an output.
* **Anything else is refused before the work starts**: a folder, a block device, a socket, a
  folder that does not exist or does not take new files (:func:`writable_file`,
  :func:`writable_dir`: ``ValueError`` naming the option and the path).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import tempfile
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

STDOUT = "-"
"""The output name that means standard output."""


def _umask() -> int:
    """The process's umask (read by setting and restoring it: POSIX offers no other way)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The permission bits a newly created file gets under the current umask (0644 under 022)."""
    return 0o666 & ~_umask()


@dataclass(frozen=True)
class Output:
    """One validated output: ``path`` as the user named it, ``target`` the file that is actually
    written (symbolic links resolved), and ``direct`` when the target is written in place (standard
    output, a character device or a FIFO) rather than replaced atomically."""

    path: str
    target: Path | None
    direct: bool

    @property
    def is_stdout(self) -> bool:
        return self.target is None


def resolve_output(path, what: str) -> Output:
    """``path`` checked as an output file before any work: ``-`` (standard output), a character
    device or FIFO (written directly), or a regular file, existing or new, whose folder takes new
    files (replaced atomically). A symbolic link is resolved to its target. Anything else is a
    ``ValueError`` naming ``what`` and the path."""
    text = os.fspath(path)
    if text == STDOUT:
        return Output(text, None, True)
    target = Path(os.path.realpath(text))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ValueError(f"{what} {text!r} cannot be examined: {exc.strerror or exc}") from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise ValueError(f"{what} {text!r} is a folder, expected a file name")
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            if not os.access(target, os.W_OK):
                raise ValueError(f"{what} {text!r} is not writable")
            return Output(text, target, True)
        if not stat.S_ISREG(mode):
            kind = "a block device" if stat.S_ISBLK(mode) else "a socket or other special file"
            raise ValueError(
                f"{what} {text!r} is {kind}; expected a regular file, a character device, "
                "a FIFO or - (standard output)"
            )
    parent = target.parent
    if not parent.is_dir():
        state = "is not a folder" if parent.exists() else "does not exist"
        raise ValueError(f"{what} {text!r}: the folder {str(parent)!r} {state}")
    _probe(parent, what, text)
    return Output(text, target, False)


def writable_file(path, what: str) -> Path:
    """``path`` if a file can be written there (:func:`resolve_output`), else ``ValueError`` naming
    ``what`` and the path. Checked before the work starts, so that a computation is never lost to
    an unwritable output."""
    resolve_output(path, what)
    return Path(path)


def writable_dir(path, what: str) -> Path:
    """``path`` as a folder that takes new files (created with its parents if missing), else
    ``ValueError`` naming ``what`` and the path."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a file, expected a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{what} {str(path)!r} cannot be created: {exc.strerror or exc}") from None
    _probe(path, what, str(path))
    return path


def _probe(folder: Path, what: str, named: str) -> None:
    try:
        fd, tmp = tempfile.mkstemp(prefix=".probe.", dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ValueError(f"{what} {named!r} is not writable: {exc.strerror or exc}") from None


def write_output(path, data: str | bytes, what: str = "output") -> None:
    """Write ``data`` to the output ``path`` by the module's rule: standard output, a device or a
    FIFO directly, a regular file (or a link's target) atomically. A path that is none of these is
    a ``ValueError``; a failing write an ``OSError`` (nothing is left half-written in a regular
    file)."""
    out = resolve_output(path, what)
    if out.is_stdout:
        if isinstance(data, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        sys.stdout.flush()
        return
    assert out.target is not None
    if out.direct:
        if isinstance(data, bytes):
            with open(out.target, "wb") as fh:
                fh.write(data)
        else:
            with open(out.target, "w", encoding="utf-8") as fh:
                fh.write(data)
        return
    write_atomic_many({out.target: data})


def write_atomic_many(files: dict) -> None:
    """Write every ``{path: text or bytes}`` to a temporary file beside its target first, then
    rename them all: nothing is replaced unless every file was written (a full disk leaves the old
    files whole), and when a rename fails (a path that is a folder, a device that fails) the files
    already replaced get their old contents back: all files or none. Each file is replaced by one
    rename, so a reader sees the old or the new file, never a missing or half-written one; the old
    contents are kept meanwhile as a hard link (a copy where links are not supported) beside each
    file. A symbolic link is followed (its target is replaced, the link stays); a path that exists
    and is not a regular file is refused (``IsADirectoryError`` for a folder, ``OSError`` for a
    device, FIFO or socket), before anything is written. A new file gets the umask's permissions,
    an existing one keeps its mode."""
    targets = {Path(os.path.realpath(p)): data for p, data in files.items()}
    for target in targets:
        _require_regular_or_missing(target)
    temps: list[tuple[str, Path]] = []
    replaced: list[tuple[Path, str | None]] = []  # (path, its old contents' backup or None)
    try:
        for path, data in targets.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((tmp, path))
            os.fchmod(
                fd, stat.S_IMODE(os.stat(path).st_mode) if path.is_file() else new_file_mode()
            )
            if isinstance(data, bytes):
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            else:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(data)
        for tmp, path in temps:
            backup = _backup(path)
            try:
                os.replace(tmp, path)
            except BaseException:
                if backup is not None:
                    Path(backup).unlink(missing_ok=True)
                raise
            replaced.append((path, backup))
    except BaseException:
        for path, backup in reversed(replaced):
            if backup is not None:
                os.replace(backup, path)
            else:
                path.unlink(missing_ok=True)
        raise
    finally:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)
        for _, backup in replaced:
            if backup is not None:
                Path(backup).unlink(missing_ok=True)


def _require_regular_or_missing(path: Path) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder, expected a file", str(path))
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "is not a regular file; it is never replaced", str(path))


def _backup(path: Path) -> str | None:
    """A hard link (or a copy) of ``path`` beside it, or None when there is no such file."""
    if not path.is_file():
        return None
    fd, backup = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent)
    os.close(fd)
    os.unlink(backup)
    try:
        os.link(path, backup)
    except OSError:
        shutil.copy2(path, backup)
    return backup


@contextmanager
def stdout_to_stderr():
    """Inside the block, everything written to standard output goes to standard error: Python's
    ``sys.stdout`` and file descriptor 1 (which ``os.write`` or a C extension reach), so that a
    user's code (a system file that prints) never enters a ``--json`` document or ``--out -``.
    Where file descriptor 1 cannot be moved (no such descriptor), only ``sys.stdout`` is."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        saved = None
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)
