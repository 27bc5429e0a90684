"""Every file or directory of the repository that the docs name (in `code` spans) exists,
so a page cannot send a reader to a file that moved."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
#: top-level directories of the repository; a path starting with one is read from the root
TOP_DIRS = ("rl_trainers", "tests", "docs", "examples", "sota-implementations", "benchmarks")
#: subpackages of rl_trainers; a path starting with one (``algorithms/base.py``) is read
#: from rl_trainers/
SUBPACKAGES = tuple(
    p.name for p in (ROOT / "rl_trainers").iterdir() if p.is_dir() and p.name.isidentifier()
)


def named_paths(text: str) -> list[str]:
    """The repository paths of a page's inline code spans: those starting with a top-level
    directory or a subpackage of rl_trainers, without placeholders (``<algorithm>``)."""
    starts = "|".join(re.escape(d) for d in TOP_DIRS + SUBPACKAGES)
    return re.findall(rf"`((?:{starts})/[\w./-]*)`", text)


def resolved(path: str) -> Path:
    return (ROOT if path.split("/")[0] in TOP_DIRS else ROOT / "rl_trainers") / path


def test_named_paths_are_found_in_code_spans():
    text = "`rl_trainers/app/cli.py`, `algorithms/base.py`, `<run dir>/x`, `.hydra/config.yaml`"
    assert named_paths(text) == ["rl_trainers/app/cli.py", "algorithms/base.py"]
    assert resolved("algorithms/base.py") == ROOT / "rl_trainers" / "algorithms" / "base.py"


def test_every_path_the_docs_name_exists():
    missing = [
        f"{page.relative_to(ROOT)}: {path}"
        for page in PAGES
        for path in named_paths(page.read_text())
        if not resolved(path).exists()
    ]
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)
