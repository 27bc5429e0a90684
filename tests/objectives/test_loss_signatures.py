"""torchrl's keyword arguments and key-renaming calls of the losses."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential
from torch import nn

from rl_trainers.modules import MLP, ProbabilisticActor, TanhModule, TanhNormal, ValueOperator
from rl_trainers.objectives import ClipPPOLoss, SACLoss, SoftUpdate, TD3Loss, ValueEstimators

B = 6


def _batch():
    return TensorDict(
        {
            "observation": torch.randn(B, 4),
            "action": torch.rand(B, 2) * 1.8 - 0.9,
            "sample_log_prob": torch.zeros(B),
            "next": {
                "observation": torch.randn(B, 4),
                "reward": torch.randn(B, 1),
                "done": torch.zeros(B, 1, dtype=torch.bool),
                "terminated": torch.zeros(B, 1, dtype=torch.bool),
            },
        },
        [B],
    )


def _actor_critic():
    net = nn.Sequential(MLP(in_features=4, out_features=4, num_cells=[8]), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        return_log_prob=True,
    )
    critic = ValueOperator(MLP(in_features=4, out_features=1, num_cells=[8]), ["observation"])
    return actor, critic


def test_ppo_takes_torchrl_coeff_spellings_and_bool_clip_value():
    actor, critic = _actor_critic()
    loss = ClipPPOLoss(
        actor, critic, clip_epsilon=0.3, entropy_coeff=0.05, critic_coeff=0.5, clip_value=True
    )
    assert float(loss.entropy_coef) == pytest.approx(0.05)
    assert float(loss.critic_coef) == 0.5
    assert loss.clip_value == 0.3
    with pytest.raises(ValueError, match="entropy_coeff"):
        ClipPPOLoss(actor, critic, entropy_coef=0.1, entropy_coeff=0.2)
    with pytest.raises(NotImplementedError, match="samples_mc_entropy"):
        ClipPPOLoss(actor, critic, samples_mc_entropy=4)
    quiet = ClipPPOLoss(actor, critic, log_explained_variance=False)
    assert "explained_variance" not in quiet(_batch()).keys()


def test_ppo_set_keys_reaches_the_value_estimator():
    actor, critic = _actor_critic()
    loss = ClipPPOLoss(actor, critic)
    loss.set_keys(advantage="adv", value_target="vt", sample_log_prob="old_lp")
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.9, lmbda=0.9)
    assert loss.tensor_keys.advantage == "adv"
    td = _batch().rename_key_("sample_log_prob", "old_lp")
    out = loss(td)
    assert "adv" in td.keys() and "vt" in td.keys() and "advantage" not in td.keys()
    assert torch.isfinite(out["loss_objective"])
    with pytest.raises(ValueError, match="unknown key"):
        loss.set_keys(advantages="x")


def test_sac_accepts_separate_losses():
    actor, _ = _actor_critic()
    q = ValueOperator(
        MLP(in_features=6, out_features=1, num_cells=[8]), in_keys=["observation", "action"]
    )
    loss = SACLoss(actor, q, separate_losses=True, num_qvalue_nets=2)
    assert torch.isfinite(loss(_batch())["loss_qvalue"])


def test_td3_with_a_tensordict_sequential_actor():
    # torchrl's TD3/DDPG examples: TensorDictSequential(net -> "param", TanhModule -> "action")
    net = TensorDictModule(
        MLP(in_features=4, out_features=2, num_cells=[8]), ["observation"], ["param"]
    )
    actor = TensorDictSequential(net, TanhModule(in_keys=["param"], out_keys=["action"]))
    q = ValueOperator(
        MLP(in_features=6, out_features=1, num_cells=[8]), in_keys=["action", "observation"]
    )
    loss = TD3Loss(actor_network=actor, qvalue_network=q, bounds=(-1.0, 1.0))
    out = loss(_batch())
    (out["loss_actor"] + out["loss_qvalue"]).backward()
    assert net.module[0].weight.grad is not None
    updater = SoftUpdate(loss, tau=0.5)
    before = [t.clone() for t in loss.target_pairs()[1]]
    with torch.no_grad():
        net.module[0].weight.add_(1.0)
    updater.step()
    assert any(not torch.equal(a, b) for a, b in zip(before, loss.target_pairs()[1]))
