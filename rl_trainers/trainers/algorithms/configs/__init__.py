"""torchrl's path ``torchrl.trainers.algorithms.configs``: the config schema, an alias, no logic.

The names are those of :mod:`rl_trainers.configs` (importing either registers the schema
in Hydra's ConfigStore, once); its submodules (``envs``, ``envs_libs``, ``utils``...) are
generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`.
"""

from rl_trainers.configs import *  # noqa: F403
from rl_trainers.configs import __all__  # noqa: F401
