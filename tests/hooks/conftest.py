"""The fixtures of the hooks' tests: fakes of a collector, a loss and a logger (tests/trainer_fakes.py)."""

from trainer_fakes import collector, fakes, logger, loss_module  # noqa: F401 (fixtures)
