"""``python -m rl_trainers.export`` (also ``rl-trainers export``): see :mod:`rl_trainers.agents.cli`."""

from __future__ import annotations

import sys

from rl_trainers.agents.cli import run_command

if __name__ == "__main__":
    raise SystemExit(run_command("export", sys.argv[1:]))
