"""``python -m rl_trainers <command> ...``: the ``rl-trainers`` command (:mod:`rl_trainers.app.cli`)."""

from rl_trainers.app.cli import main

if __name__ == "__main__":
    main(prog="python -m rl_trainers")
