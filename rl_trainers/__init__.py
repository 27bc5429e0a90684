"""rl_trainers: a Hydra-configured reinforcement-learning trainer application."""

from rl_trainers import _lazy_dynamo

__version__ = "0.1.0"

# before anything imports tensordict: keep torch.compile's ~70 MiB front end unloaded until
# something compiles (see rl_trainers/_lazy_dynamo.py)
_lazy_dynamo.install()
