"""``keep_freed_memory``: memory an update frees is reused by the next without page faults.

Each case runs in a fresh interpreter: malloc's thresholds are process state.
"""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's malloc thresholds (Linux only)"
)

# glibc's thresholds start dynamic and move with what the process has freed so far, so what a
# process does "by default" depends on the machine and on what was imported. Every case starts
# from fixed small thresholds (128 KiB, glibc's initial values) and then applies what is tested.
_SMALL_THRESHOLDS = """
import ctypes
_mallopt = ctypes.CDLL(None).mallopt
assert _mallopt(-3, 128 * 1024) and _mallopt(-1, 128 * 1024)  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
"""

# Rounds shaped like a SAC update: eight 1 MiB tensors written, then all freed. Prints the minor
# page faults of rounds 3 to 12.
_ROUNDS = """
import resource, torch
def rounds(n):
    for _ in range(n):
        blocks = [torch.empty(2**18).fill_(1.0) for _ in range(8)]
        del blocks
rounds(2)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds(10)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_freed_blocks_are_reused_without_page_faults(fresh_python) -> None:
    small = int(fresh_python(_SMALL_THRESHOLDS + _ROUNDS))
    kept = int(
        fresh_python(
            _SMALL_THRESHOLDS
            # after torch is loaded, as the app calls it (while building a run)
            + "import torch\nfrom rl_trainers.algorithms.malloc import keep_freed_memory\n"
            "assert keep_freed_memory()\n" + _ROUNDS
        )
    )
    assert small > 1000  # 10 rounds x 8 MiB of fresh pages (2048 per round)
    assert kept < 100


_BUILD = """
import sys, tempfile
from pathlib import Path
from hydra import compose, initialize_config_dir
from rl_trainers.app import RECIPES_DIR
from rl_trainers.algorithms import build_trainer
with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
    cfg = compose(config_name="sac_trainer", overrides=sys.argv[1:])
build_trainer(cfg, Path(tempfile.mkdtemp()))
"""


@pytest.mark.parametrize(
    ("overrides", "reused"), [([], True), (["trainer.keep_freed_memory=false"], False)]
)
def test_the_app_sets_it_unless_switched_off(
    fresh_python, overrides: list[str], reused: bool
) -> None:
    setup = _SMALL_THRESHOLDS + f"import sys\nsys.argv = ['x', *{overrides!r}]\n" + _BUILD
    faults = int(fresh_python(setup + _ROUNDS))
    assert (faults < 100) if reused else (faults > 1000), faults
