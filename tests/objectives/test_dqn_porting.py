"""DQNLoss as torchrl's DQN examples build it: spec as action_space, an exploration sequence
or a QValueModule pipeline as the value network, torchrl's keyword options."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential

from rl_trainers.envs.specs import Composite, OneHot
from rl_trainers.modules import MLP, EGreedyModule, QValueActor, QValueModule
from rl_trainers.objectives import DQNLoss, HardUpdate

B = 6


def _batch():
    action = torch.nn.functional.one_hot(torch.randint(4, (B,)), 4).bool()
    return TensorDict(
        {
            "observation": torch.randn(B, 3),
            "action": action,
            "next": {
                "observation": torch.randn(B, 3),
                "reward": torch.randn(B, 1),
                "done": torch.zeros(B, 1, dtype=torch.bool),
                "terminated": torch.zeros(B, 1, dtype=torch.bool),
            },
        },
        [B],
    )


def _model():
    torch.manual_seed(0)
    return QValueActor(
        module=MLP(in_features=3, out_features=4, num_cells=[8]),
        spec=Composite(action=OneHot(4)),
        in_keys=["observation"],
    )


def test_action_space_as_a_spec_matches_the_name():
    batch = _batch()
    by_name = DQNLoss(_model(), action_space="one_hot", delay_value=False)(batch.clone())
    by_spec = DQNLoss(_model(), action_space=OneHot(4), delay_value=False)(batch.clone())
    assert torch.allclose(by_name["loss"], by_spec["loss"])


def test_exploration_sequence_and_qvalue_module_pipeline_as_value_network():
    batch = _batch()
    model = _model()
    reference = DQNLoss(model, delay_value=False)(batch.clone())["loss"]
    explore = TensorDictSequential(model, EGreedyModule(model.spec, annealing_num_steps=10))
    loss = DQNLoss(explore, delay_value=False)
    assert loss.value_network is model
    assert torch.allclose(loss(batch.clone())["loss"], reference)
    pipeline = TensorDictSequential(
        TensorDictModule(model.module, ["observation"], ["action_value"]),
        QValueModule(spec=OneHot(4)),
    )
    loss = DQNLoss(pipeline, delay_value=True, double_dqn=True, loss_function="smooth_l1")
    assert loss.action_space == "one_hot"
    out = loss(batch.clone())
    out["loss"].backward()
    assert model.module[0].weight.grad is not None
    HardUpdate(loss, value_network_update_interval=1).step()
    with pytest.raises(ValueError, match="action_space"):
        DQNLoss(TensorDictModule(model.module, ["observation"], ["action_value"]))


def test_torchrl_keyword_options():
    loss = DQNLoss(_model(), reduction="mean", priority_key="td_error")
    assert loss.priority_key == "td_error"
    with pytest.raises(NotImplementedError, match="reduction"):
        DQNLoss(_model(), reduction="sum")
