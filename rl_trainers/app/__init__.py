"""The Hydra application: ``rl-trainers <algorithm> [overrides]`` (also
``python -m rl_trainers <algorithm>`` and ``sota-implementations/<algorithm>_trainer/train.py``).

Its modules, one job each:

- :mod:`~rl_trainers.app.cli`: the ``rl-trainers`` command, algorithms and agent commands
- :mod:`~rl_trainers.app.train`: the Hydra entry point every algorithm runs through
- :mod:`~rl_trainers.app.run`: validate, build, train, evaluate, write ``summary.json``
- :mod:`~rl_trainers.app.help_page`: each algorithm's ``--help``
- :mod:`~rl_trainers.app.overrides`: torchrl's override names on the command line
- :mod:`~rl_trainers.app.errors`, :mod:`~rl_trainers.app.compose_errors`: a mistake is one
  ``Error:`` line and exit status 2
- :mod:`~rl_trainers.app.signals`: SIGTERM/SIGINT outside the training loop
- :mod:`~rl_trainers.app.rundir`, :mod:`~rl_trainers.app.resume`: the run directory, and
  continuing a stopped run
- :mod:`~rl_trainers.app.run_log`: the run's printed lines copied to its ``train.log``
- :mod:`~rl_trainers.app.launch`: how the app was started, for the commands it suggests
- ``recipes/``: the YAML recipes (package data), :data:`RECIPES_DIR`
"""

from pathlib import Path

# the typed schema in Hydra's config store: the recipes compose against it (config groups
# such as model/policy are its nodes), wherever RECIPES_DIR is used
import rl_trainers.configs  # noqa: F401

#: The directory of the YAML recipes shipped with the package: ``<algorithm>_trainer.yaml``
#: and one folder per config group (``env/``, ``experiment/``, ``hparams_search/``...).
RECIPES_DIR = str(Path(__file__).resolve().parent / "recipes")
