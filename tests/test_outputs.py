"""Outputs never destroy what they point at (verify/outputs.py and every command that writes).

A regular file is replaced atomically with the umask's permissions; a symbolic link is followed and
stays a link; a device or a FIFO is written directly and stays what it is; ``-`` is standard
output; a folder, a block device or a socket is refused before any work."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from fastslow.cli import main
from fastslow.verify import outputs
from fastslow.verify.outputs import resolve_output, write_atomic_many, write_output


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_a_new_file_gets_the_umasks_permissions(tmp_path, umask_022):
    path = tmp_path / "out.json"
    write_output(path, "{}")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.read_text() == "{}"


def test_a_new_file_follows_another_umask(tmp_path):
    old = os.umask(0o077)
    try:
        write_output(tmp_path / "private.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600


def test_an_existing_file_keeps_its_mode_and_is_replaced_whole(tmp_path, umask_022):
    path = tmp_path / "out.json"
    path.write_text("old contents, longer than the new")
    path.chmod(0o640)
    write_output(path, "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_symbolic_link_is_followed_and_stays_a_link(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_output(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"


def test_a_dangling_link_creates_its_target(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "made.json")
    write_output(link, "new")
    assert link.is_symlink() and (tmp_path / "made.json").read_text() == "new"


def test_dev_null_is_written_directly_and_stays_a_device():
    write_output("/dev/null", "discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_device_is_an_error_naming_it_and_stays_a_device():
    with pytest.raises(OSError) as info:
        write_output("/dev/full", "x" * 100_000)
    assert info.value.strerror
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_copy_of_a_device_is_written_directly(tmp_path):
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the major/minor of /dev/null
    except PermissionError:
        pytest.skip("creating a device node needs privileges")
    write_output(node, "discarded")
    assert stat.S_ISCHR(node.stat().st_mode)


def test_a_fifo_is_written_directly_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_output(fifo, "through the pipe")
    reader.join(10)
    assert got == ["through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_dash_is_standard_output(capsys):
    write_output("-", "to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"


@pytest.mark.parametrize("kind", ["folder", "socket"])
def test_a_folder_or_a_socket_is_refused_before_the_work(tmp_path, kind):
    path = tmp_path / "x"
    if kind == "folder":
        path.mkdir()
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
    with pytest.raises(ValueError, match="--out"):
        resolve_output(path, "--out")


def test_the_atomic_writer_never_renames_over_a_device_or_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        write_atomic_many({tmp_path / "a.json": "a", fifo: "b"})
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not (tmp_path / "a.json").exists()  # refused before anything was written


def test_the_umask_is_left_as_it_was():
    before = os.umask(0o027)
    try:
        outputs.new_file_mode()
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(before)


# ------------------------------------------------------------------ the command line's outputs


def test_sweep_out_dev_null_exits_0_and_leaves_the_device(capsys):
    assert main(["sweep", "D7", "--seeds", "0:1", "--out", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_sweep_out_dev_full_is_one_line_exit_2_and_leaves_the_device(capsys):
    assert main(["sweep", "D7", "--seeds", "0:1", "--out", "/dev/full"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "/dev/full" in err and "Traceback" not in err
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_sweep_out_through_a_link_writes_the_target(tmp_path, capsys):
    target = tmp_path / "results.json"
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert main(["sweep", "D7", "--seeds", "0:1", "--out", str(link)]) == 0
    assert link.is_symlink()
    assert json.loads(target.read_text())[0]["result"]["verdict"] == "holds"


def test_sweep_out_dash_prints_the_json_after_the_summary(capsys):
    assert main(["sweep", "D7", "--seeds", "0:1", "--out", "-"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("[") :])[0]["point"]["seed"] == 0


def test_bench_out_into_a_folder_is_refused_before_any_section(tmp_path, capsys):
    from fastslow import bench

    assert bench.main(out=str(tmp_path), only=["layer_floor"]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_a_figure_file_that_is_a_link_stays_a_link(tmp_path):
    import matplotlib.pyplot as plt

    from fastslow import figures

    real = tmp_path / "elsewhere.png"
    real.write_bytes(b"old")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "name.png").symlink_to(real)
    fig = plt.figure()
    figures.save(fig, tmp_path / "out", "name", {"seed": 0})
    assert (tmp_path / "out" / "name.png").is_symlink()
    assert real.read_bytes().startswith(b"\x89PNG")
    assert Path(tmp_path / "out" / "name.pdf").read_bytes().startswith(b"%PDF")
