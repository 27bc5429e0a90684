"""Builders the Hydra config nodes target: each turns one node into one component.

They are plain functions so that a config node's fields can be checked against their
signatures (see tests/app/test_configs.py), and so a script can call them
without Hydra.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import traceback
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from rl_trainers.configs.validation import check_obs_norm, check_reward_norm
from rl_trainers.errors import ConfigError
from rl_trainers.modules.model_builders import ACTIVATIONS, activation_from_name


def activation_class(name: str) -> type[nn.Module]:
    """The ``torch.nn`` activation class called ``name`` (``tanh``, ``relu``...)."""
    try:
        return activation_from_name(name)
    except ValueError:
        raise ConfigError("network.*.activation", name, f"one of {sorted(ACTIVATIONS)}") from None


def seed_everything(seed: int) -> None:
    """Seed python's ``random``, numpy and torch (call before building anything random)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def make_env(
    env_name: str,
    num_envs: int = 1,
    vectorization: str = "sync",
    max_episode_steps: int | None = None,
    normalize_observations: bool = False,
    obs_norm_clip: float | None = 10.0,
    normalize_rewards: bool = False,
    reward_norm_gamma: float | None = None,
    reward_norm_clip: float = 10.0,
    reward_scale: float = 1.0,
    from_pixels: bool = False,
    frame_skip: int = 1,
    device: str = "cpu",
    image_size: int = 84,
    grayscale: bool = True,
    frame_stack: int = 4,
    transforms: Sequence[Any] = (),
    make_kwargs: Mapping[str, Any] | None = None,
):
    """A batched gymnasium env with the transforms training needs.

    ``RewardSum`` always tracks the raw episode return under ``"episode_reward"`` (it comes
    first, so neither normalisation nor scaling reaches it); ``VecNorm``, ``RewardNorm`` and
    ``RewardScaling`` are added when asked for, in that order. With ``from_pixels`` the
    rendered frames become float ``"pixels"`` ``[*B, C, image_size, image_size]`` in
    ``[0, 1]`` (``ToTensorImage``, ``Resize``, ``GrayScale``, ``CatFrames``), with
    ``C = (1 if grayscale else 3) * frame_stack``.

    Args:
        env_name: gymnasium id or ``module:Class`` entry point.
        num_envs: sub-environments stepped together (batch size ``[num_envs]``).
        vectorization: ``sync`` (one process) or ``async`` (a process per sub-env).
        max_episode_steps: override the env's time limit.
        normalize_observations: normalise observations by the running mean and std of all
            observations seen (:class:`~rl_trainers.envs.VecNorm` with ``decay=1``, SB3
            ``VecNormalize``'s ``norm_obs``; checkpointed).
        obs_norm_clip: normalised observations are clipped to ``[-clip, clip]`` (None: not
            clipped).
        normalize_rewards: divide training rewards by the running std of the discounted
            return (:class:`~rl_trainers.envs.RewardNorm`, SB3 ``VecNormalize``'s
            ``norm_reward``; checkpointed).
        reward_norm_gamma: the discount of that return (None: 0.99; the app passes the
            algorithm's ``loss.gamma``).
        reward_norm_clip: normalised rewards are clipped to ``[-clip, clip]``.
        reward_scale: multiply rewards by this for training.
        from_pixels: observe rendered frames under ``"pixels"``.
        frame_skip: repeat each action this many times.
        device: device of the env's tensors.
        image_size: side of the square frames (pixels only).
        grayscale: convert frames to one luminance channel (pixels only).
        frame_stack: stack this many recent frames along the channels (pixels only).
        transforms: more :class:`~rl_trainers.envs.Transform` objects, appended after the
            ones above (from a config: ``_target_`` nodes, instantiated by Hydra).
        make_kwargs: more keyword arguments for ``gymnasium.make`` (e.g. ``{"g": 9.81}``
            for Pendulum-v1).
    """
    from rl_trainers.envs import (
        CatTensors,
        Compose,
        GymEnv,
        ParallelEnv,
        RewardNorm,
        RewardScaling,
        RewardSum,
        Transform,
        TransformedEnv,
        VecNorm,
    )

    if num_envs < 1:
        raise ConfigError("env.num_envs", num_envs, "a positive number of environments")
    check_reward_norm(reward_norm_gamma, reward_norm_clip)
    check_obs_norm(obs_norm_clip)
    kwargs: dict[str, Any] = {
        **(make_kwargs or {}),
        "from_pixels": from_pixels,
        "frame_skip": frame_skip,
        "device": device,
    }
    if max_episode_steps is not None:
        kwargs["max_episode_steps"] = max_episode_steps
    if vectorization not in ("sync", "async"):
        raise ConfigError("env.vectorization", vectorization, "'sync' or 'async'")
    with _missing_dependencies_as_config_error(env_name):
        try:
            if vectorization == "sync":
                base = GymEnv(env_name, num_envs=num_envs, **kwargs)
            else:
                base = ParallelEnv(num_envs, _GymEnvFactory(env_name, kwargs))
        except TypeError as err:
            if not make_kwargs:
                raise
            raise ConfigError(
                "env.make_kwargs",
                dict(make_kwargs),
                f"arguments {env_name} accepts; gymnasium.make said: {err}",
            ) from err
    extra = list(transforms)
    for i, transform in enumerate(extra):
        if not isinstance(transform, Transform):
            raise ConfigError(
                f"env.transforms[{i}]",
                transform,
                "a transform node with a _target_, e.g. "
                "{_target_: rl_trainers.envs.StepCounter, max_steps: 200}",
            )
    chain = [RewardSum()]
    # a user's env.transforms may build "observation" themselves (e.g. a CatTensors)
    builds_observation = any(
        "observation" in getattr(t, "out_keys", ())
        and "observation" not in getattr(t, "in_keys", ())
        for t in extra
    )
    parts = [] if from_pixels or builds_observation else _observation_parts(base, env_name)
    if parts:  # a Tuple or Dict space: the networks read one "observation"
        chain.append(CatTensors(in_keys=parts, out_key="observation", sort=False))
    if from_pixels:
        chain += _pixel_transforms(image_size, grayscale, frame_stack)
    if normalize_observations:
        chain.append(VecNorm(in_keys=["observation"], decay=1.0, eps=1e-8, clip=obs_norm_clip))
    if normalize_rewards:
        gamma = 0.99 if reward_norm_gamma is None else reward_norm_gamma
        chain.append(RewardNorm(gamma=gamma, clip=reward_norm_clip))
    if reward_scale != 1.0:
        chain.append(RewardScaling(loc=0.0, scale=reward_scale))
    return TransformedEnv(base, Compose(*chain, *extra))


def _observation_parts(base, env_name: str) -> list[str]:
    """The entries to join into one ``"observation"`` vector: a Tuple space's
    ``observation_<i>`` in order, a Dict space's entries in its order; ``[]`` for a single
    ``"observation"``. Entries that are not vectors (images, nested Dicts) cannot be joined:
    a :class:`ConfigError` says which."""
    from rl_trainers.envs.libs.gym import tuple_observation_keys

    spec = base.observation_spec
    parts = tuple_observation_keys(spec)
    keys = list(spec.keys())
    if parts or keys == ["observation"]:
        return parts
    batch_dims = len(base.batch_size)
    not_vectors = [
        key
        for key in keys
        if not hasattr(spec[key], "shape")
        or isinstance(spec[key], type(spec))
        or len(spec[key].shape) - batch_dims > 1
    ]
    if not_vectors:
        raise ConfigError(
            "env.env_name",
            env_name,
            f"its observations are a Dict with entries {keys}, and {not_vectors} are not "
            "vectors; the networks read one 'observation' vector: make the env return one "
            "(e.g. wrap it in gymnasium.wrappers.FlattenObservation in the module that "
            "defines it)",
        )
    return keys


@contextlib.contextmanager
def _missing_dependencies_as_config_error(env_name: str) -> Iterator[None]:
    """Report an env whose dependencies are not installed as a :class:`ConfigError` on
    ``env.env_name``, with the install command gymnasium suggests."""
    from gymnasium.error import DependencyNotInstalled

    try:
        yield
    except DependencyNotInstalled as err:
        raise ConfigError(
            "env.env_name",
            env_name,
            f"its dependencies are not installed: {' '.join(str(err).split())}",
        ) from err
    except ModuleNotFoundError as err:
        module = (err.name or str(err)).split(".")[0]
        raise ConfigError(
            "env.env_name",
            env_name,
            f"it needs the Python module {module!r}, which is not installed "
            f"(install the package that provides it, often pip install {module})",
        ) from err
    except (AttributeError, ImportError, OSError) as err:
        backend = os.environ.get("MUJOCO_GL")
        if backend is None or not _raised_in(err, ("mujoco", "OpenGL")):
            raise
        raise ConfigError(
            "env.env_name",
            env_name,
            f"MuJoCo could not load its OpenGL backend MUJOCO_GL={backend} "
            f"({type(err).__name__}: {err}); install that backend's system library "
            "(osmesa: libosmesa6; egl: libegl1) or choose another, e.g. MUJOCO_GL=egl",
        ) from err


def _raised_in(err: BaseException, packages: tuple[str, ...]) -> bool:
    """Whether a frame of ``err``'s traceback is in a file under one of ``packages``."""
    return any(
        f"/{package}/" in frame.f_code.co_filename
        for frame, _ in traceback.walk_tb(err.__traceback__)
        for package in packages
    )


def _pixel_transforms(image_size: int, grayscale: bool, frame_stack: int) -> list:
    """uint8 ``[H, W, 3]`` renders -> float ``[C, image_size, image_size]`` frame stacks."""
    from rl_trainers.envs import CatFrames, GrayScale, Resize, ToTensorImage

    if image_size < 1:
        raise ConfigError("env.image_size", image_size, "a positive number of pixels, e.g. 84")
    if frame_stack < 1:
        raise ConfigError("env.frame_stack", frame_stack, "a positive number of frames, e.g. 4")
    transforms = [ToTensorImage(), Resize(image_size, image_size)]
    if grayscale:
        transforms.append(GrayScale())
    if frame_stack > 1:
        transforms.append(CatFrames(frame_stack, dim=-3))
    return transforms


class _GymEnvFactory:
    """A picklable ``GymEnv`` constructor for worker processes."""

    def __init__(self, env_name: str, kwargs: dict[str, Any]) -> None:
        self.env_name = env_name
        self.kwargs = kwargs

    def __call__(self):
        from rl_trainers.envs import GymEnv

        return GymEnv(self.env_name, **self.kwargs)


def make_replay_buffer(
    size: int = 1_000_000,
    batch_size: int = 256,
    storage: str = "lazy_tensor",
    sampler: str = "random",
    writer: str = "round_robin",
    alpha: float = 0.6,
    beta: float = 0.4,
    scratch_dir: str | None = None,
    device: str | None = None,
):
    """A ``TensorDictReplayBuffer`` with the named storage, sampler and writer.

    Args:
        size: capacity in transitions.
        batch_size: transitions per ``sample()``.
        storage: ``lazy_tensor`` (RAM), ``lazy_memmap`` (disk) or ``list``.
        sampler: ``random`` (uniform, with replacement), ``without_replacement`` (each item
            once per pass) or ``prioritized`` (sum tree, proportional to priority^alpha).
        writer: ``round_robin`` (overwrites the oldest items when full).
        alpha: priority exponent.
        beta: importance-weight exponent.
        scratch_dir: directory of a ``lazy_memmap`` storage.
        device: where a ``lazy_tensor`` storage keeps the transitions (None: cpu); the
            other storages keep them in host memory.
    """
    from rl_trainers.data import (
        LazyMemmapStorage,
        LazyTensorStorage,
        ListStorage,
        PrioritizedSampler,
        RandomSampler,
        RoundRobinWriter,
        SamplerWithoutReplacement,
        TensorDictReplayBuffer,
    )

    if size < 1:
        raise ConfigError("replay_buffer.size", size, "a positive capacity")
    if batch_size < 1:
        raise ConfigError("replay_buffer.batch_size", batch_size, "a positive batch size")
    storages = {
        "lazy_tensor": lambda: LazyTensorStorage(size, device=device or "cpu"),
        "lazy_memmap": lambda: LazyMemmapStorage(size, scratch_dir=scratch_dir),
        "list": lambda: ListStorage(size),
    }
    if storage not in storages:
        raise ConfigError("replay_buffer.storage", storage, f"one of {sorted(storages)}")
    samplers = {
        "random": RandomSampler,
        "without_replacement": SamplerWithoutReplacement,
        "prioritized": lambda: PrioritizedSampler(size, alpha=alpha, beta=beta),
    }
    if sampler not in samplers:
        raise ConfigError("replay_buffer.sampler", sampler, f"one of {sorted(samplers)}")
    writers = {"round_robin": RoundRobinWriter}
    if writer not in writers:
        raise ConfigError("replay_buffer.writer", writer, f"one of {sorted(writers)}")
    return TensorDictReplayBuffer(
        storage=storages[storage](),
        sampler=samplers[sampler](),
        writer=writers[writer](),
        batch_size=batch_size,
    )


def make_ppo_loss(
    actor_network,
    critic_network,
    loss_type: str = "clip",
    clip_epsilon: float = 0.2,
    dtarg: float = 0.01,
    beta: float = 1.0,
    increment: float = 2.0,
    decrement: float = 0.5,
    beta_adaptation: str = "update",
    entropy_coef: float = 0.0,
    critic_coef: float = 0.5,
    loss_critic_type: str = "l2",
    normalize_advantage: bool = True,
    gamma: float = 0.99,
    lmbda: float = 0.95,
    clip_value: float | None = None,
):
    """A PPO loss of the family ``loss_type`` names, with a GAE value estimator.

    Args:
        actor_network: the policy (shared with the collector).
        critic_network: the state-value network.
        loss_type: ``"clip"`` (``ClipPPOLoss``), ``"kl"`` (``KLPENPPOLoss``: the adaptive
            KL penalty) or ``"ppo"`` (``PPOLoss``: the unclipped surrogate), as torchrl's
            ``PPOLossConfig.loss_type``. Each reads only its own fields below.
        clip_epsilon: policy ratio clip range (``clip``).
        dtarg: target KL between the collecting and the current policy (``kl``).
        beta: initial KL penalty coefficient (``kl``; adapted during training and
            checkpointed with the loss).
        increment: beta's factor when the KL exceeds ``1.5 * dtarg`` (``kl``).
        decrement: beta's factor when the KL is below ``dtarg / 1.5`` (``kl``).
        beta_adaptation: ``"update"``: beta adapts once per collected batch, on the KL over
            the batch after its epochs (the paper's rule; ``PPOTrainer`` calls
            ``adapt_beta``); ``"minibatch"``: after every minibatch, on its KL (torchrl's
            ``KLPENPPOLoss``) (``kl``).
        entropy_coef: weight of the entropy bonus.
        critic_coef: weight of the value loss.
        loss_critic_type: ``l2``, ``smooth_l1`` or ``l1``.
        normalize_advantage: normalise advantages per minibatch.
        gamma: discount factor.
        lmbda: GAE lambda.
        clip_value: clip the value prediction to this distance from the value stored at
            collection and take the larger of the clipped and unclipped value losses (the
            PPO2 rule of OpenAI's baselines, CleanRL and torchrl); None: no clipping.
    """
    from rl_trainers.objectives import ClipPPOLoss, KLPENPPOLoss, PPOLoss, ValueEstimators

    _check_actor_critic_fields(gamma, lmbda, critic_coef, entropy_coef, loss_critic_type)
    if clip_value is not None and not clip_value > 0:
        raise ConfigError(
            "loss.clip_value", clip_value, "a positive distance, e.g. 0.2, or null for none"
        )
    common = _actor_critic_kwargs(entropy_coef, critic_coef, loss_critic_type, normalize_advantage)
    common["clip_value"] = clip_value
    if loss_type == "clip":
        if not clip_epsilon > 0:
            raise ConfigError("loss.clip_epsilon", clip_epsilon, "a positive clip range, e.g. 0.2")
        loss = ClipPPOLoss(actor_network, critic_network, clip_epsilon=clip_epsilon, **common)
    elif loss_type == "kl":
        _check_kl_penalty(dtarg, beta, increment, decrement, beta_adaptation)
        loss = KLPENPPOLoss(
            actor_network,
            critic_network,
            dtarg=dtarg,
            beta=beta,
            increment=increment,
            decrement=decrement,
            adapt_beta_each_call=beta_adaptation == "minibatch",
            **common,
        )
    elif loss_type == "ppo":
        loss = PPOLoss(actor_network, critic_network, **common)
    else:
        raise ConfigError(
            "loss.loss_type",
            loss_type,
            "'clip' (clipped surrogate), 'kl' (adaptive KL penalty) or 'ppo' (plain surrogate)",
        )
    loss.make_value_estimator(ValueEstimators.GAE, gamma=gamma, lmbda=lmbda)
    return loss


def _check_loss_critic_type(loss_critic_type: str) -> None:
    if loss_critic_type not in ("l2", "smooth_l1", "l1"):
        raise ConfigError("loss.loss_critic_type", loss_critic_type, "'l2', 'smooth_l1' or 'l1'")


def _actor_critic_kwargs(
    entropy_coef: float, critic_coef: float, loss_critic_type: str, normalize_advantage: bool
) -> dict[str, Any]:
    """The keyword arguments PPO's, A2C's and REINFORCE's losses take alike (the entropy
    bonus is on when its weight is positive)."""
    return {
        "entropy_bonus": entropy_coef > 0,
        "entropy_coef": entropy_coef,
        "critic_coef": critic_coef,
        "loss_critic_type": loss_critic_type,
        "normalize_advantage": normalize_advantage,
    }


def _check_actor_critic_fields(
    gamma: float, lmbda: float, critic_coef: float, entropy_coef: float, loss_critic_type: str
) -> None:
    """PPO's, A2C's and REINFORCE's checks: discount and GAE lambda in [0, 1], the critic loss
    known, its weight and the entropy weight non-negative."""
    _check_unit_interval("loss.gamma", gamma)
    _check_unit_interval("loss.lmbda", lmbda)
    _check_loss_critic_type(loss_critic_type)
    if not critic_coef >= 0:
        raise ConfigError("loss.critic_coef", critic_coef, "a non-negative weight, e.g. 0.5")
    if not entropy_coef >= 0:
        raise ConfigError("loss.entropy_coef", entropy_coef, "a non-negative weight, e.g. 0.01")


def make_a2c_loss(
    actor_network,
    critic_network,
    entropy_coef: float = 0.0,
    critic_coef: float = 0.5,
    loss_critic_type: str = "l2",
    normalize_advantage: bool = False,
    gamma: float = 0.99,
    lmbda: float = 1.0,
):
    """An ``A2CLoss`` with a GAE value estimator (the Hydra ``loss`` node of A2C).

    ``lmbda=1`` (SB3's ``gae_lambda`` default) makes the advantage the discounted return of
    the rest of the batch, bootstrapped with the critic, minus the critic's value.

    Args:
        actor_network: the policy (shared with the collector).
        critic_network: the state-value network.
        entropy_coef: weight of the entropy bonus (0: none).
        critic_coef: weight of the value loss (SB3's ``vf_coef``).
        loss_critic_type: ``l2`` (SB3's mean squared error), ``smooth_l1`` or ``l1``.
        normalize_advantage: standardise the advantages of each batch.
        gamma: discount factor.
        lmbda: GAE lambda.
    """
    from rl_trainers.objectives import A2CLoss, ValueEstimators

    _check_actor_critic_fields(gamma, lmbda, critic_coef, entropy_coef, loss_critic_type)
    loss = A2CLoss(
        actor_network,
        critic_network,
        **_actor_critic_kwargs(entropy_coef, critic_coef, loss_critic_type, normalize_advantage),
    )
    loss.make_value_estimator(ValueEstimators.GAE, gamma=gamma, lmbda=lmbda)
    return loss


def make_reinforce_loss(
    actor_network,
    critic_network=None,
    baseline: bool = True,
    entropy_coef: float = 0.0,
    critic_coef: float = 0.5,
    loss_critic_type: str = "l2",
    normalize_advantage: bool = True,
    gamma: float = 0.99,
    lmbda: float = 1.0,
):
    """A ``ReinforceLoss`` (the Hydra ``loss`` node of the vanilla policy gradient).

    With a baseline, a GAE value estimator writes the advantages (``lmbda=1``: the
    discounted return-to-go minus the learned value ``V(s)``, bootstrapped with ``V`` where
    the batch cuts a trajectory); without one (``baseline=false``, ``critic_network=None``)
    the trainer writes the discounted returns-to-go themselves (``PGTrainer``).

    Args:
        actor_network: the policy (shared with the collector).
        critic_network: the state-value baseline (None when ``baseline`` is false).
        baseline: learn a state-value baseline.
        entropy_coef: weight of the entropy bonus (0: none).
        critic_coef: weight of the baseline's value loss.
        loss_critic_type: ``l2``, ``smooth_l1`` or ``l1``.
        normalize_advantage: standardise the advantages of each batch.
        gamma: discount factor.
        lmbda: GAE lambda (with a baseline).
    """
    from rl_trainers.objectives import ReinforceLoss, ValueEstimators

    _check_actor_critic_fields(gamma, lmbda, critic_coef, entropy_coef, loss_critic_type)
    if baseline and critic_network is None:
        raise ValueError("make_reinforce_loss(baseline=True) needs a critic_network")
    loss = ReinforceLoss(
        actor_network,
        critic_network if baseline else None,
        **_actor_critic_kwargs(entropy_coef, critic_coef, loss_critic_type, normalize_advantage),
        gamma=gamma,
    )
    if baseline:
        loss.make_value_estimator(ValueEstimators.GAE, gamma=gamma, lmbda=lmbda)
    return loss


def _check_kl_penalty(
    dtarg: float, beta: float, increment: float, decrement: float, adaptation: str
) -> None:
    if adaptation not in ("update", "minibatch"):
        raise ConfigError(
            "loss.beta_adaptation",
            adaptation,
            "'update' (once per collected batch) or 'minibatch' (after every gradient step)",
        )
    if not dtarg > 0:
        raise ConfigError("loss.dtarg", dtarg, "a positive target KL, e.g. 0.01")
    if not beta >= 0:
        raise ConfigError("loss.beta", beta, "a non-negative penalty coefficient, e.g. 1.0")
    if not increment >= 1:
        raise ConfigError("loss.increment", increment, "a factor >= 1, e.g. 2.0")
    if not 0 < decrement <= 1:
        raise ConfigError("loss.decrement", decrement, "a factor in (0, 1], e.g. 0.5")


def make_sac_loss(
    actor_network,
    qvalue_network,
    num_qvalue_nets: int = 2,
    alpha_init: float = 1.0,
    fixed_alpha: bool = False,
    target_entropy: str | float = "auto",
    loss_function: str = "l2",
    gamma: float = 0.99,
):
    """A ``SACLoss`` (twin critics, automatic entropy) with a TD(0) target.

    Args:
        actor_network: the TanhNormal policy (shared with the collector).
        qvalue_network: one Q network; it is copied ``num_qvalue_nets`` times.
        num_qvalue_nets: number of Q networks.
        alpha_init: initial entropy temperature.
        fixed_alpha: keep alpha fixed.
        target_entropy: ``"auto"`` (minus the action dimension) or a number.
        loss_function: ``l2`` or ``smooth_l1``.
        gamma: discount factor.
    """
    from rl_trainers.objectives import SACLoss, ValueEstimators

    _check_unit_interval("loss.gamma", gamma)
    if num_qvalue_nets < 1:
        raise ConfigError("loss.num_qvalue_nets", num_qvalue_nets, "at least 1")
    if not alpha_init > 0:
        raise ConfigError("loss.alpha_init", alpha_init, "a positive temperature, e.g. 1.0")
    if target_entropy != "auto":
        try:
            target_entropy = float(target_entropy)
        except ValueError:
            raise ConfigError("loss.target_entropy", target_entropy, "'auto' or a number") from None
    loss = SACLoss(
        actor_network,
        qvalue_network,
        num_qvalue_nets=num_qvalue_nets,
        alpha_init=alpha_init,
        fixed_alpha=fixed_alpha,
        target_entropy=target_entropy,
        loss_function=loss_function,
    )
    loss.make_value_estimator(ValueEstimators.TD0, gamma=gamma)
    return loss


def make_dqn_loss_module(
    value_network,
    double_dqn: bool = False,
    loss_function: str = "smooth_l1",
    gamma: float = 0.99,
):
    """A ``DQNLoss`` with a target network (the Hydra ``loss`` node of DQN).

    Unlike torchrl's ``make_dqn_loss(model, cfg)``, which also returns a target updater,
    this builds the loss alone: the trainer chooses how the target network is updated.

    Args:
        value_network: the Q-value actor (an exploration wrapper around one is unwrapped).
        double_dqn: choose next actions with the online network, value them with the target.
        loss_function: ``smooth_l1`` (Huber), ``l2`` or ``l1``.
        gamma: discount factor.
    """
    from rl_trainers.objectives import DQNLoss

    _check_unit_interval("loss.gamma", gamma)
    if loss_function not in ("l2", "smooth_l1", "l1"):
        raise ConfigError("loss.loss_function", loss_function, "'smooth_l1', 'l2' or 'l1'")
    loss = DQNLoss(
        value_network, loss_function=loss_function, delay_value=True, double_dqn=double_dqn
    )
    loss.make_value_estimator(gamma=gamma)
    return loss


def make_td3_loss(
    actor_network,
    qvalue_network,
    num_qvalue_nets: int = 2,
    policy_noise: float = 0.2,
    noise_clip: float = 0.5,
    loss_function: str = "l2",
    delay_actor: bool = True,
    delay_qvalue: bool = True,
    gamma: float = 0.99,
):
    """A ``TD3Loss`` (target actor and critics, clipped double-Q) with a TD(0) target: the
    Hydra ``loss`` node of TD3. The trainer chooses when the targets move.

    Args:
        actor_network: the deterministic actor (the collector explores around it).
        qvalue_network: one Q network; it is copied ``num_qvalue_nets`` times.
        num_qvalue_nets: number of critics (the target takes their minimum).
        policy_noise: std of the target policy smoothing noise.
        noise_clip: the smoothing noise is clipped to ``[-noise_clip, noise_clip]``.
        loss_function: ``l2``, ``smooth_l1`` or ``l1``.
        delay_actor: keep a target actor (else the target action comes from the actor).
        delay_qvalue: keep target critics (else the target values come from the critics).
        gamma: discount factor.
    """
    from rl_trainers.objectives import TD3Loss

    _check_td_fields(gamma, loss_function)
    if num_qvalue_nets < 1:
        raise ConfigError("loss.num_qvalue_nets", num_qvalue_nets, "at least 1 (TD3: 2)")
    if policy_noise < 0:
        raise ConfigError("loss.policy_noise", policy_noise, "a std >= 0 (0: no smoothing)")
    if noise_clip < 0:
        raise ConfigError("loss.noise_clip", noise_clip, "a bound >= 0, e.g. 0.5")
    loss = TD3Loss(
        actor_network,
        qvalue_network,
        num_qvalue_nets=num_qvalue_nets,
        policy_noise=policy_noise,
        noise_clip=noise_clip,
        loss_function=loss_function,
        delay_actor=delay_actor,
        delay_qvalue=delay_qvalue,
        gamma=gamma,
    )
    return loss


def make_ddpg_loss(
    actor_network,
    value_network,
    loss_function: str = "l2",
    delay_actor: bool = True,
    delay_value: bool = True,
    gamma: float = 0.99,
):
    """A ``DDPGLoss`` with a target actor and a target critic: the Hydra ``loss`` node of DDPG.

    Args:
        actor_network: the deterministic actor (the collector explores around it).
        value_network: the Q network ``Q(s, a)``.
        loss_function: ``l2``, ``smooth_l1`` or ``l1``.
        delay_actor: keep a target actor (torchrl's DDPGLoss default is False; SB3 and the
            paper keep one).
        delay_value: keep a target critic.
        gamma: discount factor.
    """
    from rl_trainers.objectives import DDPGLoss

    _check_td_fields(gamma, loss_function)
    return DDPGLoss(
        actor_network,
        value_network,
        loss_function=loss_function,
        delay_actor=delay_actor,
        delay_value=delay_value,
        gamma=gamma,
    )


def _check_td_fields(gamma: float, loss_function: str) -> None:
    """TD3's and DDPG's checks: the discount in [0, 1] and a known critic loss."""
    _check_unit_interval("loss.gamma", gamma)
    if loss_function not in ("l2", "smooth_l1", "l1"):
        raise ConfigError("loss.loss_function", loss_function, "'l2', 'smooth_l1' or 'l1'")


def make_lr_scheduler(optimizer: torch.optim.Optimizer, total_steps: int, kind: str = "constant"):
    """A learning-rate schedule stepped once per collected batch (``total_steps`` batches).

    Args:
        optimizer: the optimizer whose rates change.
        total_steps: number of scheduler steps over the run.
        kind: ``constant``, ``linear`` (to 0 at the end) or ``cosine``.
    """
    total = max(int(total_steps), 1)
    schedules = {
        "constant": lambda step: 1.0,
        "linear": lambda step: max(1.0 - step / total, 0.0),
        "cosine": lambda step: 0.5 * (1.0 + math.cos(math.pi * min(step / total, 1.0))),
    }
    if kind not in schedules:
        raise ConfigError("lr_scheduler.kind", kind, f"one of {sorted(schedules)}")
    return torch.optim.lr_scheduler.LambdaLR(optimizer, schedules[kind])


def _check_unit_interval(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ConfigError(name, value, "a number in [0, 1]")
