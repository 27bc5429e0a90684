"""torchrl's module paths: alias modules generated from one table, re-exporting the adapter."""

from __future__ import annotations

import configparser
import importlib
from pathlib import Path

import pytest

from rl_trainers.compat.torchrl.aliases import ALIASES, imports_the_adapter, source_text, stale

REPO = Path(__file__).resolve().parents[2]


def test_alias_files_are_what_the_table_generates():
    assert stale() == [], (
        "alias modules differ from rl_trainers.compat.torchrl.aliases.ALIASES: run "
        "python -m rl_trainers.compat.torchrl.aliases --write"
    )


@pytest.mark.parametrize("alias", ALIASES, ids=[a.module for a in ALIASES])
def test_alias_module_exports_the_adapter_objects(alias):
    module = importlib.import_module(alias.module)
    assert sorted(module.__all__) == sorted(alias.exported())
    for source_name, names in alias.imports():
        source = importlib.import_module(source_name)
        for name in names:
            assert getattr(module, name) is getattr(source, name), name
    assert "no logic" in source_text(alias)


def test_only_the_alias_modules_may_import_the_adapter():
    """The import-linter contract lets exactly the alias modules of the adapter (the table's
    and the two hand-written package modules) import rl_trainers.compat."""
    parser = configparser.ConfigParser()
    parser.read(REPO / ".importlinter")
    contract = next(parser[s] for s in parser.sections() if s.endswith(":compat-is-an-adapter"))
    allowed = {
        line.split("->")[0].strip()
        for line in contract["ignore_imports"].strip().splitlines()
        if line.strip()
    }
    assert allowed == {a.module for a in ALIASES if imports_the_adapter(a)} | {
        "rl_trainers.trainers.algorithms",
        "rl_trainers.trainers.algorithms.configs",
        "rl_trainers.trainers.helpers",
    }
