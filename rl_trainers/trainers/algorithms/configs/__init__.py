"""torchrl's path ``torchrl.trainers.algorithms.configs``: the config schema, an alias, no logic.

The names are those of :mod:`rl_trainers.configs` and of torchrl's own nodes,
:mod:`rl_trainers.compat.torchrl.schema`. Importing this package registers both in Hydra's
ConfigStore (once), so a torchrl recipe composes; its submodules (``envs``, ``envs_libs``,
``utils``...) are generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`.
"""

from rl_trainers.compat.torchrl import schema as _torchrl_schema
from rl_trainers.compat.torchrl.schema import *  # noqa: F403
from rl_trainers.configs import *  # noqa: F403
from rl_trainers.configs import __all__ as _product_names

_torchrl_schema.register()

__all__ = [*_product_names, *_torchrl_schema.__all__]
