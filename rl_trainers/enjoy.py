"""``python -m rl_trainers.enjoy`` (also ``rl-trainers enjoy``): see :mod:`rl_trainers.agents.cli`."""

from __future__ import annotations

import sys

from rl_trainers.agents.cli import run_command

if __name__ == "__main__":
    raise SystemExit(run_command("enjoy", sys.argv[1:]))
