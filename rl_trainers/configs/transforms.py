"""Transform nodes with torchrl's names (``configs.transforms.StepCounterConfig``...).

Each targets the :mod:`rl_trainers.envs` transform of the same name with its constructor's
arguments. They go in the root env node's ``transforms`` list, e.g.
``GymEnvConfig(transforms=[StepCounterConfig(max_steps=200)])`` (torchrl's recipes also put
them in its ``ComposeConfig``, :mod:`rl_trainers.compat.torchrl.schema`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .common import config_field

_KEYS = "entries read (None: the transform's default)"
_OUT_KEYS = "entries written (None: in place of in_keys)"


@dataclass
class StepCounterConfig:
    """Counts steps per episode; truncates episodes at ``max_steps``."""

    _target_: str = "rl_trainers.envs.StepCounter"
    max_steps: int | None = config_field(None, "truncate episodes after this many steps")
    truncated_key: str = config_field("truncated", "entry set when max_steps is reached")
    step_count_key: str = config_field("step_count", "entry holding the step count")
    update_done: bool = config_field(True, "also set done when truncating")


@dataclass
class RewardSumConfig:
    """Sums rewards over each episode (the episode return)."""

    _target_: str = "rl_trainers.envs.RewardSum"
    in_keys: list[str] | None = config_field(None, "reward entries (None: reward)")
    out_keys: list[str] | None = config_field(None, "sum entries (None: episode_reward)")


@dataclass
class NoopResetEnvConfig:
    """Takes a random number of no-op steps after each reset (Atari)."""

    _target_: str = "rl_trainers.envs.NoopResetEnv"
    noops: int = config_field(30, "maximum number of no-op steps")
    random: bool = config_field(True, "draw the number of no-ops in [1, noops]")


@dataclass
class DoubleToFloatConfig:
    """Casts float64 entries to float32."""

    _target_: str = "rl_trainers.envs.DoubleToFloat"
    in_keys: list[str] | None = config_field(None, _KEYS)
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)
    in_keys_inv: list[str] | None = config_field(None, "entries cast back before env steps")
    out_keys_inv: list[str] | None = config_field(None, "entries written by the inverse cast")


@dataclass
class ObservationNormConfig:
    """Affine observation normalisation with fixed statistics."""

    _target_: str = "rl_trainers.envs.ObservationNorm"
    loc: float | None = config_field(None, "location (None: set later, e.g. init_stats)")
    scale: float | None = config_field(None, "scale (None: set later, e.g. init_stats)")
    in_keys: list[str] | None = config_field(None, _KEYS)
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)
    standard_normal: bool = config_field(False, "(x - loc) / scale instead of x * scale + loc")
    eps: float = config_field(1e-6, "added to scale in standard_normal mode")


@dataclass
class VecNormConfig:
    """Running mean/std observation normalisation (checkpointed)."""

    _target_: str = "rl_trainers.envs.VecNorm"
    in_keys: list[str] | None = config_field(None, _KEYS)
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)
    decay: float = config_field(0.9999, "decay of the running statistics")
    eps: float = config_field(1e-4, "added to the standard deviation")


@dataclass
class RewardScalingConfig:
    """Affine reward scaling: ``reward * scale + loc``."""

    _target_: str = "rl_trainers.envs.RewardScaling"
    loc: float = config_field(0.0, "added to the scaled reward")
    scale: float = config_field(1.0, "reward multiplier")
    in_keys: list[str] | None = config_field(None, _KEYS)
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)
    standard_normal: bool = config_field(False, "(reward - loc) / scale instead")


@dataclass
class RewardClippingConfig:
    """Clips rewards to ``[clamp_min, clamp_max]``."""

    _target_: str = "rl_trainers.envs.RewardClipping"
    clamp_min: float | None = config_field(None, "lower bound (None: none)")
    clamp_max: float | None = config_field(None, "upper bound (None: none)")
    in_keys: list[str] | None = config_field(None, _KEYS)
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)


@dataclass
class ClipTransformConfig:
    """Clips entries to ``[low, high]``."""

    _target_: str = "rl_trainers.envs.ClipTransform"
    in_keys: list[str] | None = config_field(None, _KEYS)
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)
    low: float | None = config_field(None, "lower bound (None: none)")
    high: float | None = config_field(None, "upper bound (None: none)")


@dataclass
class InitTrackerConfig:
    """Marks the first step of each episode."""

    _target_: str = "rl_trainers.envs.InitTracker"
    init_key: str = config_field("is_init", "entry set on the first step")


@dataclass
class ToTensorImageConfig:
    """uint8 ``[H, W, C]`` frames to float ``[C, H, W]`` in ``[0, 1]``."""

    _target_: str = "rl_trainers.envs.ToTensorImage"
    from_int: bool | None = config_field(None, "divide by 255 (None: when the input is uint8)")
    unsqueeze: bool = config_field(False, "add a leading dim to unbatched frames")
    in_keys: list[str] | None = config_field(None, "image entries (None: pixels)")
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)
    shape_tolerant: bool = config_field(False, "leave entries already channel-first")


@dataclass
class ResizeConfig:
    """Resizes image entries to ``w x h``."""

    _target_: str = "rl_trainers.envs.Resize"
    w: int = config_field(84, "width in pixels")
    h: int | None = config_field(None, "height in pixels (None: w)")
    interpolation: str = config_field("bilinear", "bilinear|nearest|bicubic|area")
    in_keys: list[str] | None = config_field(None, "image entries (None: pixels)")
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)


@dataclass
class CenterCropConfig:
    """Crops image entries to their central ``w x h``."""

    _target_: str = "rl_trainers.envs.CenterCrop"
    w: int = config_field(84, "width in pixels")
    h: int | None = config_field(None, "height in pixels (None: w)")
    in_keys: list[str] | None = config_field(None, "image entries (None: pixels)")
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)


@dataclass
class GrayScaleConfig:
    """RGB image entries to one luminance channel."""

    _target_: str = "rl_trainers.envs.GrayScale"
    in_keys: list[str] | None = config_field(None, "image entries (None: pixels)")
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)


@dataclass
class CatFramesConfig:
    """Stacks the last ``N`` frames along ``dim``."""

    _target_: str = "rl_trainers.envs.CatFrames"
    N: int = config_field(4, "number of frames stacked")
    dim: int = config_field(-3, "dimension they are concatenated along (negative)")
    in_keys: list[str] | None = config_field(None, "entries stacked (None: pixels)")
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)
    padding: str = config_field(
        "same", "first frames padded with copies (same) or zeros (constant)"
    )


@dataclass
class FrameSkipTransformConfig:
    """Repeats each action ``frame_skip`` times, summing rewards."""

    _target_: str = "rl_trainers.envs.FrameSkipTransform"
    frame_skip: int = config_field(1, "env steps per action")


@dataclass
class CatTensorsConfig:
    """Concatenates entries into one."""

    _target_: str = "rl_trainers.envs.CatTensors"
    in_keys: list[str] | None = config_field(None, "entries concatenated (None: observations)")
    out_key: str = config_field("observation_vector", "entry written")
    dim: int = config_field(-1, "dimension they are concatenated along")
    del_keys: bool = config_field(True, "remove the in_keys")
    sort: bool = config_field(True, "sort in_keys before concatenating")


@dataclass
class FlattenObservationConfig:
    """Flattens dims ``first_dim..last_dim`` of entries."""

    _target_: str = "rl_trainers.envs.FlattenObservation"
    first_dim: int = config_field(-3, "first dim flattened (negative)")
    last_dim: int = config_field(-1, "last dim flattened (negative)")
    in_keys: list[str] | None = config_field(None, "entries flattened (None: pixels)")
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)


@dataclass
class UnsqueezeTransformConfig:
    """Adds a dim of size one to entries."""

    _target_: str = "rl_trainers.envs.UnsqueezeTransform"
    dim: int = config_field(-1, "position of the new dim (negative)")
    in_keys: list[str] | None = config_field(None, _KEYS)
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)


@dataclass
class PermuteTransformConfig:
    """Permutes the trailing dims of entries."""

    _target_: str = "rl_trainers.envs.PermuteTransform"
    dims: list[int] = config_field([-1, -3, -2], "the new order of the trailing dims")
    in_keys: list[str] | None = config_field(None, _KEYS)
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)


@dataclass
class BinarizeRewardConfig:
    """Rewards to 1 if positive, else 0."""

    _target_: str = "rl_trainers.envs.BinarizeReward"
    in_keys: list[str] | None = config_field(None, "reward entries (None: reward)")
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)


@dataclass
class SignTransformConfig:
    """Entries to their sign (-1, 0, 1)."""

    _target_: str = "rl_trainers.envs.SignTransform"
    in_keys: list[str] | None = config_field(None, _KEYS)
    out_keys: list[str] | None = config_field(None, _OUT_KEYS)


@dataclass
class TargetReturnConfig:
    """Adds a return-to-go target to observations (decision transformers)."""

    _target_: str = "rl_trainers.envs.TargetReturn"
    target_return: float = config_field(10.0, "return targeted at the first step")
    mode: str = config_field("reduce", "reduce (subtract rewards) or constant")
    in_keys: list[str] | None = config_field(None, "reward entries (None: reward)")
    out_keys: list[str] | None = config_field(None, "entries written (None: target_return)")


@dataclass
class EndOfLifeTransformConfig:
    """Marks the loss of a life as an end of trajectory (Atari)."""

    _target_: str = "rl_trainers.envs.EndOfLifeTransform"
    eol_key: str = config_field("end-of-life", "entry set when a life is lost")
    lives_key: str = config_field("lives", "entry holding the lives count")
    done_key: str = config_field("done", "done entry of the env")
    eol_attribute: str = config_field("unwrapped.ale.lives", "env attribute giving the lives")


@dataclass
class TrajCounterConfig:
    """Numbers trajectories with a running id."""

    _target_: str = "rl_trainers.envs.TrajCounter"
    out_key: str = config_field("traj_count", "entry holding the trajectory id")
