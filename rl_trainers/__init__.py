"""rl_trainers: a Hydra-configured reinforcement-learning trainer application.

Importing the package changes nothing in torch or in the import system. The Hydra app's
``train.py`` scripts opt in to keeping ``torch._dynamo`` unloaded until something compiles
(:func:`rl_trainers._lazy_dynamo.install`, called before tensordict is imported).
"""

from rl_trainers._lazy_attributes import lazy_attributes
from rl_trainers._utils import compile_with_warmup, logger, timeit  # torchrl's top level

__version__ = "0.1.0"

#: Loaded on first use (``rl_trainers.load_policy``...), so ``import rl_trainers`` stays cheap.
_LAZY = {
    "load_policy": "rl_trainers.agents.policy",
    "make_env": "rl_trainers.agents.policy",
    "evaluate": "rl_trainers.agents.policy",
    "TrainedPolicy": "rl_trainers.agents.policy",
    "export_policy": "rl_trainers.agents.export",
    "train": "rl_trainers.agents.training",
    "TrainedRun": "rl_trainers.agents.training",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "__version__",
    "compile_with_warmup",
    "evaluate",
    "export_policy",
    "load_policy",
    "logger",
    "make_env",
    "timeit",
    "train",
    "TrainedPolicy",
    "TrainedRun",
]
