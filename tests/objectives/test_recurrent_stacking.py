"""stack_current_next / current_and_next: the one way losses and value estimators run a
network on the current and the next steps of a batch at once, recurrent networks included."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq

from rl_trainers.modules import LSTMModule, set_recurrent_mode
from rl_trainers.objectives.common import current_and_next, stack_current_next

T = 6


pytestmark = pytest.mark.usefixtures("one_thread")


def _lstm_critic() -> Seq:
    torch.manual_seed(0)
    lstm = LSTMModule(input_size=3, hidden_size=5, in_key="observation", out_key="embed")
    return Seq(lstm, Mod(torch.nn.Linear(5, 1), ["embed"], ["state_value"]))


def _sequence() -> TensorDict:
    """One [T] sequence whose next observations are its observations shifted by one."""
    torch.manual_seed(1)
    obs = torch.randn(T + 1, 3)
    zeros = torch.zeros(T, 1, 5)
    is_init = torch.zeros(T, 1, dtype=torch.bool)
    is_init[0] = True
    state = {"recurrent_state_h": zeros, "recurrent_state_c": zeros}
    nxt = {"observation": obs[1:], "is_init": torch.zeros_like(is_init), **state}
    return TensorDict({"observation": obs[:-1], "is_init": is_init, **state, "next": nxt}, [T])


def _value(critic, td):
    return critic(td.clone()).get("state_value")


KEYS = ["observation", "recurrent_state_h", "recurrent_state_c", "is_init"]


def test_plain_network_stacks_along_the_first_dim():
    net = Mod(torch.nn.Linear(3, 2), ["observation"], ["out"])
    td = TensorDict(
        {"observation": torch.randn(4, 5, 3), ("next", "observation"): torch.randn(4, 5, 3)},
        [4, 5],
    )
    stacked = stack_current_next(td, ["observation"], net)
    assert stacked.batch_size == (8, 5)
    now, nxt = current_and_next(lambda s: net(s).get("out"), td, ["observation"], net)
    torch.testing.assert_close(now, net(td.clone()).get("out"))
    torch.testing.assert_close(nxt, net(td["next"].clone()).get("out"))


def test_a_batch_without_dims_gives_halves_of_one_row():
    net = Mod(torch.nn.Linear(3, 2), ["observation"], ["out"])
    td = TensorDict({"observation": torch.randn(3), ("next", "observation"): torch.randn(3)}, [])
    now, nxt = current_and_next(lambda s: net(s).get("out"), td, ["observation"], net)
    assert now.shape == nxt.shape == (1, 2)
    torch.testing.assert_close(nxt[0], net(td["next"].clone()).get("out"))


def test_recurrent_critic_on_one_sequence_reads_current_and_next_as_two_rows():
    critic, td = _lstm_critic(), _sequence()
    with set_recurrent_mode(True), torch.no_grad():
        assert stack_current_next(td, KEYS, critic).batch_size == (2, T)
        now, nxt = current_and_next(lambda s: critic(s).get("state_value"), td, KEYS, critic)
        # each half is the critic run on its own sequence
        torch.testing.assert_close(now, _value(critic, td))
        torch.testing.assert_close(nxt, _value(critic, td["next"]))
        # one [2T] sequence would have carried the state of step T-1 into the next steps
        assert stack_current_next(td, KEYS).batch_size == (2 * T,)
        merged = critic(stack_current_next(td, KEYS)).get("state_value")[T:]
        assert not torch.allclose(merged, nxt)


def test_recurrent_critic_outside_recurrent_mode_stacks_steps():
    critic, td = _lstm_critic(), _sequence()
    with set_recurrent_mode(False), torch.no_grad():
        assert stack_current_next(td, KEYS, critic).batch_size == (2 * T,)
        now, nxt = current_and_next(lambda s: critic(s).get("state_value"), td, KEYS, critic)
    assert now.shape == nxt.shape == (T, 1)


def test_recurrent_critic_on_rows_keeps_them():
    critic, td = _lstm_critic(), _sequence().unsqueeze(0)
    with set_recurrent_mode(True), torch.no_grad():
        assert stack_current_next(td, KEYS, critic).batch_size == (2, T)
        now, nxt = current_and_next(lambda s: critic(s).get("state_value"), td, KEYS, critic)
        torch.testing.assert_close(nxt, _value(critic, td["next"]))
    assert now.shape == (1, T, 1)
