"""``torchrl.data.tensor_specs`` names: the tensor specs, defined in :mod:`rl_trainers.envs.specs`.

torchrl scripts import the specs from here (``from torchrl.data.tensor_specs import
Bounded``); the classes are the ones :mod:`rl_trainers.data` and :mod:`rl_trainers.envs`
export. torchrl's ``NonTensor``, the stacked specs (``Stacked``, ``StackedComposite`` and
their ``LazyStacked*`` names) and the dtype-fixed subclasses (``UnboundedContinuous``,
``UnboundedDiscrete``, ``BoundedContinuous``, ``BoundedDiscrete``) are not available.
"""

from rl_trainers.envs.specs import (
    Binary,
    BinaryDiscreteTensorSpec,
    Bounded,
    BoundedTensorSpec,
    Categorical,
    Composite,
    CompositeSpec,
    DiscreteTensorSpec,
    MultiCategorical,
    MultiDiscreteTensorSpec,
    MultiOneHot,
    MultiOneHotDiscreteTensorSpec,
    OneHot,
    OneHotDiscreteTensorSpec,
    TensorSpec,
    Unbounded,
    UnboundedContinuousTensorSpec,
    UnboundedDiscreteTensorSpec,
)

__all__ = [
    "Binary",
    "BinaryDiscreteTensorSpec",
    "Bounded",
    "BoundedTensorSpec",
    "Categorical",
    "Composite",
    "CompositeSpec",
    "DiscreteTensorSpec",
    "MultiCategorical",
    "MultiDiscreteTensorSpec",
    "MultiOneHot",
    "MultiOneHotDiscreteTensorSpec",
    "OneHot",
    "OneHotDiscreteTensorSpec",
    "TensorSpec",
    "Unbounded",
    "UnboundedContinuousTensorSpec",
    "UnboundedDiscreteTensorSpec",
]
