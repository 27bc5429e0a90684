"""TensorDictPrimer (torchrl's): specs, zero states at resets (partial resets too), states
carried across steps; env.step keeps the entries a policy wrote under "next"."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq

from rl_trainers.envs import (
    Compose,
    GymEnv,
    InitTracker,
    StepCounter,
    TensorDictPrimer,
    TransformedEnv,
    Unbounded,
)
from rl_trainers.envs.transforms.transforms import TensorDictPrimer as PrimerTorchrlPath
from rl_trainers.modules import LSTMModule, QValueModule, get_primers_from_module


def _lstm_policy(env, hidden: int = 6):
    torch.manual_seed(0)
    lstm = LSTMModule(input_size=4, hidden_size=hidden, in_key="observation", out_key="embed")
    head = Mod(torch.nn.Linear(hidden, 2), in_keys=["embed"], out_keys=["action_value"])
    return lstm, Seq(lstm, head, QValueModule(spec=env.action_spec))


def test_primer_puts_zero_states_in_resets_and_specs():
    env = TransformedEnv(GymEnv("CartPole-v1"), Compose(StepCounter(), InitTracker()))
    lstm, _ = _lstm_policy(env)
    primer = lstm.make_tensordict_primer()
    assert PrimerTorchrlPath is TensorDictPrimer and isinstance(primer, TensorDictPrimer)
    env.append_transform(primer)
    for key in ("recurrent_state_h", "recurrent_state_c"):
        assert env.observation_spec[key].shape == (1, 6)
    td = env.reset()
    assert td["recurrent_state_h"].shape == (1, 6) and not td["recurrent_state_h"].any()
    assert not td["recurrent_state_c"].any()
    assert "TensorDictPrimer" in repr(env)


def test_primer_partial_reset_and_batched_spec():
    env = TransformedEnv(
        GymEnv("CartPole-v1", num_envs=2),
        Compose(InitTracker(), TensorDictPrimer(h=Unbounded((1, 3)), expand_specs=True)),
    )
    assert env.observation_spec["h"].shape == (2, 1, 3)
    td = env.reset()
    assert td["h"].shape == (2, 1, 3)
    td["h"] = torch.ones(2, 1, 3)
    td["_reset"] = torch.tensor([[True], [False]])
    out = env.reset(td)
    assert not out["h"][0].any() and bool((out["h"][1] == 1).all())


def test_primer_options_and_errors():
    td = TensorDictPrimer(a=Unbounded((2,)), default_value=3.0)(TensorDict({}, [4]))
    assert td["a"].shape == (4, 2) and bool((td["a"] == 3).all())
    td = TensorDictPrimer({"a": Unbounded((2,))}, default_value={"a": lambda: torch.ones(2)})(
        TensorDict({}, [])
    )
    assert td["a"].tolist() == [1.0, 1.0]
    assert TensorDictPrimer(a=Unbounded((50,)), random=True)(TensorDict({}, []))["a"].std() > 0
    with pytest.raises(ValueError, match="incompatible"):
        TensorDictPrimer(a=Unbounded((2,)), random=True, default_value=1.0)
    with pytest.raises(ValueError, match="not both"):
        TensorDictPrimer({"a": Unbounded((2,))}, b=Unbounded((2,)))
    with pytest.raises(TypeError, match="must be a TensorSpec"):
        TensorDictPrimer(a=torch.zeros(2))


@pytest.mark.parametrize("with_primer", [True, False])
def test_rollout_carries_the_policy_state_from_step_to_step(with_primer):
    env = TransformedEnv(GymEnv("CartPole-v1"), InitTracker())
    lstm, policy = _lstm_policy(env)
    if with_primer:
        env.append_transform(get_primers_from_module(policy))
    env.set_seed(0)
    rollout = env.rollout(6, policy)
    h, next_h = rollout["recurrent_state_h"], rollout["next", "recurrent_state_h"]
    assert not h[0].any()  # a trajectory starts from zeros
    # the state the LSTM wrote at step t is its input at step t + 1 (was dropped by step())
    torch.testing.assert_close(h[1:], next_h[:-1])
    assert h[1:].abs().sum() > 0
    # and equals running nn.LSTM over the observations
    with torch.no_grad():
        want, _ = lstm.lstm(rollout["observation"][None])
    torch.testing.assert_close(rollout["embed"], want[0])


def test_step_keeps_next_entries_written_by_the_policy():
    env = GymEnv("CartPole-v1")
    td = env.reset()
    td["action"] = env.action_spec.rand()
    td["next", "memory"] = torch.ones(3)
    out = env.step(td)
    assert out["next", "memory"].tolist() == [1.0, 1.0, 1.0]
    assert out["next", "observation"].shape == (4,)


def test_get_primers_from_module_collects_every_recurrent_submodule():
    from rl_trainers.envs import Compose as ComposeT
    from rl_trainers.modules import GRUModule
    from rl_trainers.modules.utils import get_primers_from_module as from_utils

    lstm = LSTMModule(input_size=4, hidden_size=3, in_key="observation", out_key="a")
    gru = GRUModule(4, 5, in_keys=["observation", "vh"], out_keys=["b", ("next", "vh")])
    both = from_utils(Seq(lstm, gru))
    assert isinstance(both, ComposeT) and len(both) == 2
    env = TransformedEnv(GymEnv("CartPole-v1"), InitTracker()).append_transform(both)
    td = env.reset()
    assert td["recurrent_state_c"].shape == (1, 3) and td["vh"].shape == (1, 5)
    assert from_utils(torch.nn.Linear(2, 2)) is None
