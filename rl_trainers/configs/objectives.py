"""Loss config nodes (group ``loss``)."""

from __future__ import annotations

from dataclasses import dataclass

from .common import config_field


@dataclass
class PPOLossConfig:
    """PPO with GAE advantages: clipped surrogate, adaptive KL penalty, or plain surrogate."""

    _target_: str = "rl_trainers.algorithms.components.make_ppo_loss"
    loss_type: str = config_field(
        "clip", "clip (clipped surrogate) | kl (adaptive KL penalty) | ppo (plain surrogate)"
    )
    clip_epsilon: float = config_field(0.2, "policy ratio clip range (loss_type=clip)")
    dtarg: float = config_field(0.01, "target KL per update (loss_type=kl)")
    beta: float = config_field(1.0, "initial KL penalty coefficient (loss_type=kl)")
    increment: float = config_field(2.0, "beta *= increment when KL > 1.5 dtarg (loss_type=kl)")
    decrement: float = config_field(0.5, "beta *= decrement when KL < dtarg / 1.5 (loss_type=kl)")
    beta_adaptation: str = config_field(
        "update", "update (once per batch, the paper) | minibatch (every step, torchrl)"
    )
    entropy_coef: float = config_field(0.0, "weight of the entropy bonus")
    critic_coef: float = config_field(0.5, "weight of the value loss")
    loss_critic_type: str = config_field("l2", "l2 | smooth_l1 | l1 value loss")
    clip_value: float | None = config_field(
        None,
        "clip the value update to this distance from the collected value, taking the larger "
        "of the clipped and unclipped losses (CleanRL's clip_vloss, torchrl's clip_value; "
        "None: no clipping)",
    )
    normalize_advantage: bool = config_field(True, "normalise advantages per minibatch")
    gamma: float = config_field(0.98, "discount factor")
    lmbda: float = config_field(0.8, "GAE lambda")


@dataclass
class SACLossConfig:
    """Soft actor-critic with twin Q networks and automatic entropy tuning."""

    _target_: str = "rl_trainers.algorithms.components.make_sac_loss"
    num_qvalue_nets: int = config_field(2, "number of Q networks (min over them)")
    alpha_init: float = config_field(1.0, "initial entropy temperature")
    fixed_alpha: bool = config_field(False, "keep alpha fixed instead of tuning it")
    target_entropy: str = config_field("auto", "'auto' (-action dims) or a number")
    loss_function: str = config_field("l2", "l2 | smooth_l1 | l1 Q loss")
    gamma: float = config_field(0.99, "discount factor")


@dataclass
class DQNLossConfig:
    """Deep Q-learning on the TD(0) target ``r + gamma * max_a Q_target(s', a)``."""

    _target_: str = "rl_trainers.algorithms.components.make_dqn_loss_module"
    double_dqn: bool = config_field(
        False, "choose next actions with the online network, value them with the target"
    )
    loss_function: str = config_field("smooth_l1", "smooth_l1 (Huber, as SB3) | l2 | l1")
    gamma: float = config_field(0.99, "discount factor")


@dataclass
class TD3LossConfig:
    """Twin delayed DDPG: clipped double-Q target with target policy smoothing."""

    _target_: str = "rl_trainers.algorithms.components.make_td3_loss"
    num_qvalue_nets: int = config_field(2, "number of critics (the target takes their min)")
    policy_noise: float = config_field(
        0.2, "std of the target policy smoothing noise (SB3's target_policy_noise)"
    )
    noise_clip: float = config_field(
        0.5, "the smoothing noise is clipped to [-noise_clip, noise_clip] (target_noise_clip)"
    )
    loss_function: str = config_field("l2", "l2 (MSE, as SB3 and the paper) | smooth_l1 | l1")
    delay_actor: bool = config_field(True, "keep a target actor (false: the online one)")
    delay_qvalue: bool = config_field(True, "keep target critics (false: the online ones)")
    gamma: float = config_field(0.98, "discount factor")


@dataclass
class DDPGLossConfig:
    """DDPG: one critic regressing on ``r + gamma * Q'(s', mu'(s'))``."""

    _target_: str = "rl_trainers.algorithms.components.make_ddpg_loss"
    loss_function: str = config_field("l2", "l2 (MSE, as SB3) | smooth_l1 | l1")
    delay_actor: bool = config_field(True, "keep a target actor (false: the online one)")
    delay_value: bool = config_field(True, "keep a target critic (false: the online one)")
    gamma: float = config_field(0.98, "discount factor")


@dataclass
class A2CLossConfig:
    """Advantage actor-critic: ``-mean(log_prob * A)`` with GAE advantages, a value loss and
    an optional entropy bonus (SB3's A2C defaults)."""

    _target_: str = "rl_trainers.algorithms.components.make_a2c_loss"
    entropy_coef: float = config_field(0.0, "weight of the entropy bonus (SB3's ent_coef)")
    critic_coef: float = config_field(0.5, "weight of the value loss (SB3's vf_coef)")
    loss_critic_type: str = config_field("l2", "l2 (SB3's mse) | smooth_l1 | l1 value loss")
    normalize_advantage: bool = config_field(False, "standardise the advantages of each batch")
    gamma: float = config_field(0.99, "discount factor")
    lmbda: float = config_field(
        1.0, "GAE lambda (SB3's gae_lambda; 1: return of the batch bootstrapped with V)"
    )


@dataclass
class PGLossConfig:
    """REINFORCE: ``-mean(log_prob * A)`` with ``A`` the discounted return-to-go, minus a
    learned state-value baseline unless ``baseline=false``."""

    _target_: str = "rl_trainers.algorithms.components.make_reinforce_loss"
    baseline: bool = config_field(
        True, "learn a state-value baseline V(s) (false: advantages are the returns-to-go)"
    )
    entropy_coef: float = config_field(0.0, "weight of the entropy bonus")
    critic_coef: float = config_field(0.5, "weight of the baseline's value loss")
    loss_critic_type: str = config_field("l2", "l2 | smooth_l1 | l1 value loss (baseline)")
    normalize_advantage: bool = config_field(True, "standardise the advantages of each batch")
    gamma: float = config_field(0.99, "discount factor of the returns-to-go")
    lmbda: float = config_field(
        1.0, "GAE lambda with a baseline (1: return-to-go minus V; lower trades bias for variance)"
    )
