"""Run the Python examples of the user documentation so the docs cannot rot.

Every ```python block of each page below is executed, in order, in one namespace per page
(later blocks may use names defined by earlier ones), in a fresh temporary working
directory. A block preceded by a ``<!-- skip -->`` line is not run; one preceded by
``<!-- slow -->`` (e.g. MLflow, whose store takes seconds to create) runs only in the
``slow`` variant of the test, which runs every block of the page.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = [
    "index.md",
    "concepts.md",
    "configuration.md",
    "loggers.md",
    "checkpointing.md",
    "hooks.md",
    "plotting.md",
    "porting.md",
    "using-trained-agents.md",
]
_BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
_SKIP = "<!-- skip -->"
_SLOW = "<!-- slow -->"


def python_blocks(text: str, include_slow: bool = False) -> list[tuple[int, str]]:
    """The ``(line number, code)`` of each runnable ```python block of a Markdown page."""
    blocks = []
    for match in _BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        if before == _SKIP or (before == _SLOW and not include_slow):
            continue
        blocks.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return blocks


def test_block_extraction() -> None:
    text = (
        "a\n```python\nx = 1\n```\n<!-- skip -->\n```python\nboom()\n```\n"
        "<!-- slow -->\n```python\ny = 2\n```\n```bash\nls\n```\n"
    )
    assert python_blocks(text) == [(2, "x = 1\n")]
    assert python_blocks(text, include_slow=True) == [(2, "x = 1\n"), (10, "y = 2\n")]


def test_pages_have_examples() -> None:
    for page in PAGES:
        assert (DOCS / page).exists(), page
    assert python_blocks((DOCS / "hooks.md").read_text())


def _run_page(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow: bool) -> None:
    path = DOCS / page
    text = path.read_text()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CKPT_BACKEND", raising=False)
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    try:
        for line, code in python_blocks(text, include_slow=slow):
            exec(compile(code, f"{path}:{line}", "exec"), namespace)
    finally:
        os.environ.pop("CKPT_BACKEND", None)


@pytest.mark.parametrize("page", PAGES)
def test_page_examples(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run_page(page, tmp_path, monkeypatch, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize(
    "page", [p for p in PAGES if (DOCS / p).exists() and _SLOW in (DOCS / p).read_text()]
)
def test_page_examples_with_slow_blocks(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_page(page, tmp_path, monkeypatch, slow=True)
