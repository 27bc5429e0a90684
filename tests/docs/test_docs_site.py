"""The documentation site (``mkdocs.yml``) builds with ``--strict``: every page in the nav,
no broken link or anchor, the API reference generated from the docstrings."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def nav_pages(nav) -> list[str]:
    """The page paths of a mkdocs ``nav`` (nested lists of ``title: page`` or pages)."""
    pages = []
    for item in nav:
        if isinstance(item, str):
            pages.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def test_every_docs_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = set(nav_pages(config["nav"]))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    missing = sorted(pages - listed)
    assert not missing, (
        "docs pages missing from the nav of mkdocs.yml; add each under the section it "
        "belongs to, e.g. `      - Scaling: scaling.md` under `Guides:`: " + ", ".join(missing)
    )
    assert not sorted(listed - pages), "the nav of mkdocs.yml lists pages that do not exist"


def test_mkdocs_build_strict(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    site = tmp_path / "site"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    elapsed = time.perf_counter() - start
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert done.returncode == 0, "\n".join(warnings) or done.stderr[-3000:]
    print(f"mkdocs build --strict: {elapsed:.1f} s")
    # the API reference is generated: a class heading and a docstring's text are there
    trainer = (site / "api" / "trainer" / "index.html").read_text()
    assert 'id="rl_trainers.core.Trainer"' in trainer
    configs = (site / "api" / "configs" / "index.html").read_text()
    assert "PPOTrainerConfig" in configs and "episodes per evaluation" in configs
    for page in ("index.html", "loggers/index.html", "plotting/index.html"):
        assert (site / page).is_file()
