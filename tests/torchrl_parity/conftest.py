"""The tests of torchrl's names and forms (its API, configs and tutorials run on rl_trainers).

They share the app tests' config composer and the loop tests' fakes (``trainer_fakes.py``),
imported from there (``tests/`` is on ``sys.path``), so ``pytest tests/torchrl_parity`` runs
on its own.
"""

from app.conftest import compose_config, tiny_config  # noqa: F401
from trainer_fakes import collector, fakes, logger, loss_module  # noqa: F401
