"""rl_trainers: a Hydra-configured reinforcement-learning trainer application."""

__version__ = "0.1.0"
