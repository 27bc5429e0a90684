"""``python -m rl_trainers.plot``: see :mod:`rl_trainers.plot.cli`."""

from .cli import main

if __name__ == "__main__":
    main()
