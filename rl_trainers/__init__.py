"""rl_trainers: a Hydra-configured reinforcement-learning trainer application."""

from rl_trainers import _lazy_dynamo, _root_resolver

__version__ = "0.1.0"

# before anything imports tensordict: keep torch.compile's ~70 MiB front end unloaded until
# something compiles (see rl_trainers/_lazy_dynamo.py)
_lazy_dynamo.install()

from rl_trainers._utils import compile_with_warmup, logger, timeit  # noqa: E402  torchrl's top level

# a saved run config (trainer._config_: ${rl_trainers.root_config:}) resolves with bare
# OmegaConf after `import rl_trainers`; registered when omegaconf is imported
_root_resolver.install()

#: Loaded on first use (``rl_trainers.load_policy``...), so ``import rl_trainers`` stays cheap.
_LAZY = {
    "load_policy": "rl_trainers.agents.policy",
    "make_env": "rl_trainers.agents.policy",
    "evaluate": "rl_trainers.agents.policy",
    "TrainedPolicy": "rl_trainers.agents.policy",
    "export_policy": "rl_trainers.agents.export",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rl_trainers' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "__version__",
    "compile_with_warmup",
    "evaluate",
    "export_policy",
    "load_policy",
    "logger",
    "make_env",
    "timeit",
    "TrainedPolicy",
]
