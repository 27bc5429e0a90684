"""TD3 and DDPG trainers: delayed actor and target updates, exploration noise, warm-up."""

from __future__ import annotations

import copy

import pytest
import torch
from tensordict.nn import InteractionType, set_interaction_type

from rl_trainers.algorithms import build_trainer
from rl_trainers.algorithms.build import close_trainer


def _snapshot(trainer) -> dict:
    loss = trainer.loss_module
    return {
        "actor": [p.detach().clone() for p in loss.actor_network.parameters()],
        "actor_opt": copy.deepcopy(trainer.policy_update.actor.optimizer.state_dict()),
        "critic": [p.detach().clone() for p in loss.qvalue_network_params.parameters()],
        "targets": [t.clone() for t in loss.target_pairs()[1]],
    }


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _record_updates(trainer) -> list[tuple[int, dict, dict]]:
    """(update number, state before, state after) of every update of a run."""
    seen, before = [], {}

    def pre(batch):
        before["state"] = _snapshot(trainer)

    def post():
        seen.append((trainer.policy_update.updates, before["state"], _snapshot(trainer)))

    trainer.register_op("process_optim_batch", pre)
    trainer.register_op("post_optim", post)
    return seen


def test_td3_updates_actor_its_optimizer_and_targets_only_every_policy_delay_updates(
    tiny_config, tmp_path
):
    """With policy_delay=3, updates 1, 2, 4, 5... leave the actor's parameters, its Adam
    state and every target network bitwise unchanged; updates 3, 6... move all of them. The
    critics move at every update."""
    trainer = build_trainer(tiny_config("td3", ["trainer.policy_delay=3"]), tmp_path)
    seen = _record_updates(trainer)
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    assert len(seen) == 150  # batches from frame 50 on, 10 updates each
    for n, before, after in seen:
        assert not _same(before["critic"], after["critic"]), n
        delayed = n % 3 == 0
        assert _same(before["actor"], after["actor"]) is not delayed, n
        assert _same(before["actor_opt"], after["actor_opt"]) is not delayed, n
        assert _same(before["targets"], after["targets"]) is not delayed, n
    actor_state = trainer.policy_update.actor.optimizer.state_dict()["state"]
    assert all(int(s["step"]) == 150 // 3 for s in actor_state.values())
    critic_state = trainer.policy_update.critic.optimizer.state_dict()["state"]
    assert all(int(s["step"]) == 150 for s in critic_state.values())


def test_ddpg_updates_actor_critic_and_targets_at_every_update(tiny_config, tmp_path):
    trainer = build_trainer(tiny_config("ddpg"), tmp_path)
    seen = _record_updates(trainer)
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    assert len(seen) == 150
    loss = trainer.loss_module
    assert loss.num_qvalue_nets == 1 and loss.policy_noise == 0
    for n, before, after in seen:
        for part in ("actor", "actor_opt", "critic", "targets"):
            assert not _same(before[part], after[part]), (n, part)


@pytest.mark.parametrize("algorithm", ["td3", "ddpg"])
@pytest.mark.parametrize("noise", ["gaussian", "ou"])
def test_collector_explores_within_bounds_and_evaluations_act_without_noise(
    tiny_config, algorithm, noise, tmp_path
):
    """Warm-up batches hold uniformly random actions; later ones the actor's action plus
    noise, clamped to Pendulum's [-2, 2]; the evaluation policy is the actor alone."""
    cfg = tiny_config(algorithm, [f"trainer.exploration_noise={noise}", "trainer.noise_std=3.0"])
    trainer = build_trainer(cfg, tmp_path)
    batches = []
    trainer.register_op("batch_process", lambda b: batches.append(b.clone()))
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    actor = trainer.loss_module.actor_network
    warm = torch.cat([b["action"].reshape(-1) for b in batches[:5]])
    assert warm.min() < -1.5 and warm.max() > 1.5  # uniform over [-2, 2]
    late = batches[-1]
    actions = late["action"]
    assert actions.abs().max() <= 2.0
    with torch.no_grad():
        mean = actor(late.select("observation").clone())["action"]
    assert (actions - mean).abs().max() > 0.5  # noise of std 3 (clamped)
    if noise == "gaussian":  # (OU's steps of sigma * sqrt(dt) = 0.3 drift more slowly)
        assert (actions.abs() == 2.0).any()  # clamped, not rescaled
    assert trainer.eval_policy is None  # evaluations act with loss.actor_network
    with set_interaction_type(InteractionType.DETERMINISTIC):
        explored = trainer.collector.policy(late.select("observation").clone())["action"]
    assert torch.equal(explored, mean)  # the noise module is inactive when evaluating


def test_ou_noise_is_correlated_and_restarts_with_each_episode(tiny_config, tmp_path):
    """The Ornstein-Uhlenbeck state travels with the collector's data: its step count grows
    along an episode and restarts where the env flags a new one (Pendulum: every 200)."""
    cfg = tiny_config(
        "td3", ["trainer.exploration_noise=ou", "env.max_episode_steps=30", "eval.episodes=2"]
    )
    trainer = build_trainer(cfg, tmp_path)
    batches = []
    trainer.register_op("batch_process", lambda b: batches.append(b.clone()))
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    policy = torch.cat([b.reshape(-1) for b in batches[5:]])  # after the warm-up
    steps, is_init = policy["_ou_steps"], policy["is_init"].reshape(-1)
    assert steps[is_init].eq(1).all() and is_init.sum() >= 4
    assert torch.equal(steps[1:][~is_init[1:]], steps[:-1][~is_init[1:]] + 1)


def test_gaussian_noise_anneals_to_noise_std_end(tiny_config, tmp_path):
    cfg = tiny_config("td3", ["trainer.noise_std=0.5", "trainer.noise_std_end=0.1"])
    trainer = build_trainer(cfg, tmp_path)
    sigmas = []
    trainer.register_op("post_steps", lambda: sigmas.append(float(trainer.exploration.sigma)))
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    assert sigmas == pytest.approx([0.5 - 0.4 * 10 * k / 200 for k in range(1, 21)])


def test_torchrl_loss_fields_reach_the_loss(tiny_config, tmp_path):
    """torchrl's TD3Loss/DDPGLoss argument names are loss fields of the same meaning."""
    cfg = tiny_config(
        "td3",
        [
            "loss.policy_noise=0.3",
            "loss.noise_clip=0.4",
            "loss.num_qvalue_nets=3",
            "loss.loss_function=smooth_l1",
            "loss.delay_actor=false",
        ],
    )
    trainer = build_trainer(cfg, tmp_path)
    close_trainer(trainer)
    loss = trainer.loss_module
    assert (loss.policy_noise, loss.noise_clip, loss.num_qvalue_nets) == (0.3, 0.4, 3)
    assert loss.loss_function == "smooth_l1" and not loss.delay_actor and loss.delay_qvalue
    trainer = build_trainer(tiny_config("ddpg", ["loss.delay_value=false"]), tmp_path / "d")
    close_trainer(trainer)
    assert trainer.loss_module.delay_actor and not trainer.loss_module.delay_qvalue


def test_torchrls_policy_update_delay_sets_policy_delay_through_train_py(tmp_path):
    """torchrl's TD3 recipe names the delay optim.policy_update_delay; train.py renames it."""
    from .test_cli import train

    proc = train("td3", "--cfg", "job", "optim.policy_update_delay=3", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "policy_delay: 3" in proc.stdout


def test_an_lr_schedule_steps_both_optimizers(tiny_config, tmp_path):
    trainer = build_trainer(tiny_config("ddpg", ["lr_scheduler.kind=linear"]), tmp_path)
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    update = trainer.policy_update
    for hook in (update.actor, update.critic):
        assert hook.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
