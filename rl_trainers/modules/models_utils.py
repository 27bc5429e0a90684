"""``torchrl.modules.models.utils`` names, importable at ``rl_trainers.modules.models.utils``
(torchrl's ``ConvNet`` config names ``torchrl.modules.models.utils.SquashDims``)."""

from rl_trainers.modules.models import SquashDims

__all__ = ["SquashDims"]
