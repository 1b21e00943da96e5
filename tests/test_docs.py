"""The documentation's code runs: every ```python block of README.md (and of docs/tutorial.md, if
present) is executed in order in one namespace per file, so a snippet that drifts from the code
fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "docs" / "tutorial.md"]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.S | re.M)


@pytest.mark.parametrize("path", [p for p in DOCS if p.exists()], ids=lambda p: p.name)
def test_every_python_block_runs(path, tmp_path, monkeypatch):
    blocks = python_blocks(path)
    assert blocks, f"{path.name} has no python block"
    monkeypatch.chdir(tmp_path)  # a block may write files
    namespace: dict = {"__name__": f"doc_{path.stem}"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{path.name}[block {i}]", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{path.name}, python block {i} failed: {exc!r}\n{code}") from exc
