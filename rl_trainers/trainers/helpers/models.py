"""``torchrl.trainers.helpers.models`` names used by torchrl's sota scripts.

torchrl's CQL/IQL/CrossQ utilities read ``ACTIVATIONS[cfg.model.activation]`` from here.
"""

from rl_trainers.modules.model_builders import ACTIVATIONS

__all__ = ["ACTIVATIONS"]
