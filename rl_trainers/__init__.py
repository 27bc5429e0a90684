"""rl_trainers: a Hydra-configured reinforcement-learning trainer application.

Importing the package changes nothing in torch or in the import system. The Hydra app's
``train.py`` scripts opt in to keeping ``torch._dynamo`` unloaded until something compiles
(:func:`rl_trainers._lazy_dynamo.install`, called before tensordict is imported).
"""

from rl_trainers._utils import compile_with_warmup, logger, timeit  # torchrl's top level

__version__ = "0.1.0"

__all__ = ["__version__", "compile_with_warmup", "logger", "timeit"]
