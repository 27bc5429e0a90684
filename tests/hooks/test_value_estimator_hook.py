"""``ValueEstimatorHook``: advantages computed over the whole batch at ``pre_epoch``."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch import nn
from trainer_fakes import Loss, make_trainer

from rl_trainers.hooks import ValueEstimatorHook
from rl_trainers.modules import ValueOperator
from rl_trainers.objectives.value import GAE


def constant_critic(value: float) -> ValueOperator:
    linear = nn.Linear(3, 1)
    with torch.no_grad():
        linear.weight.zero_()
        linear.bias.fill_(value)
    return ValueOperator(linear, in_keys=["observation"])


def two_step_batch() -> TensorDict:
    obs = torch.zeros(1, 2, 3)
    no = torch.zeros(1, 2, 1, dtype=torch.bool)
    return TensorDict(
        {
            "observation": obs,
            "next": {
                "observation": obs,
                "reward": torch.ones(1, 2, 1),
                "done": no,
                "terminated": no.clone(),
            },
        },
        batch_size=[1, 2],
    )


def test_gae_by_hand():
    # value 0.5 everywhere, reward 1, gamma 0.9, lambda 0.8:
    # delta = 1 + 0.9 * 0.5 - 0.5 = 0.95; A1 = 0.95; A0 = 0.95 + 0.72 * 0.95 = 1.634
    hook = ValueEstimatorHook(GAE(gamma=0.9, lmbda=0.8, value_network=constant_critic(0.5)))
    out = hook(two_step_batch())
    assert out["advantage"].flatten().tolist() == pytest.approx([1.634, 0.95])
    assert out["value_target"].flatten().tolist() == pytest.approx([2.134, 1.45])


class RecordingLoss(Loss):
    def __init__(self) -> None:
        super().__init__()
        self.advantages: list[float] = []

    def forward(self, td):
        self.advantages.append(td["advantage"][0, 0, 0].item())
        return super().forward(td)


def test_registered_at_pre_epoch_and_refreshed_each_epoch():
    critic = constant_critic(0.0)
    loss = RecordingLoss()
    trainer = make_trainer([1.0], loss_module=loss, num_epochs=2, optim_steps_per_batch=1)
    ValueEstimatorHook(GAE(gamma=0.0, lmbda=1.0, value_network=critic)).register(trainer)
    # the critic changes between the two epochs: its bias moves from 0 to 0.25
    trainer.register_op("post_epoch", lambda: critic.module.bias.data.fill_(0.25))
    trainer.train()
    assert trainer._ops["pre_epoch"]
    # gamma 0: advantage = reward - value = 1 - 0, then 1 - 0.25
    assert loss.advantages == pytest.approx([1.0, 0.75])


def test_empty_batch_or_none_passes_through():
    calls = []
    hook = ValueEstimatorHook(lambda td: calls.append(td))
    empty = TensorDict()
    assert hook(empty) is empty and hook(None) is None and calls == []


def test_value_estimator_must_be_callable():
    with pytest.raises(TypeError, match="value_estimator must be callable"):
        ValueEstimatorHook("gae")
