"""LSTMModule: torchrl's keys and errors; step-by-step and recurrent-mode outputs against
nn.LSTM run by hand, with trajectories starting inside the [B, T] slices."""

from __future__ import annotations

import pytest
import torch
from _rnn_reference import run_by_hand
from tensordict import TensorDict
from torch import nn

from rl_trainers.modules import LSTMModule, recurrent_mode, set_recurrent_mode

B, T, F_IN, H = 3, 7, 4, 5


def _data(num_layers: int = 1, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, F_IN, generator=g)
    is_init = torch.zeros(B, T, dtype=torch.bool)
    is_init[0, 0] = True  # row 0 starts a trajectory, and another at t=3
    is_init[0, 3] = True
    is_init[2, 1] = True  # row 2 continues a trajectory, then a new one at t=1 and t=5
    is_init[2, 5] = True  # row 1 continues one trajectory from a stored state
    h0 = [torch.randn(B, num_layers, H, generator=g) for _ in range(2)]
    return x, is_init, h0


def _step_by_step(module: LSTMModule, x, is_init, h0):
    td = TensorDict({"recurrent_state_h": h0[0], "recurrent_state_c": h0[1]}, [B])
    ys, roots = [], []
    for t in range(T):
        td.set("obs", x[:, t])
        td.set("is_init", is_init[:, t, None])
        roots.append(td.select("recurrent_state_h", "recurrent_state_c").clone())
        module(td)
        ys.append(td["embed"])
        td.set("recurrent_state_h", td["next", "recurrent_state_h"])
        td.set("recurrent_state_c", td["next", "recurrent_state_c"])
    return torch.stack(ys, 1), torch.stack(roots, 1), td


def test_default_keys_are_torchrls():
    lstm = LSTMModule(input_size=3, hidden_size=8, in_key="embed", out_key="embed")
    assert lstm.in_keys == ["embed", "recurrent_state_h", "recurrent_state_c", "is_init"]
    assert lstm.out_keys == [
        "embed",
        ("next", "recurrent_state_h"),
        ("next", "recurrent_state_c"),
    ]
    assert isinstance(lstm.lstm, nn.LSTM) and lstm.lstm.batch_first
    assert lstm.recurrent_mode is False


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("python_based", [False, True])
def test_step_by_step_and_recurrent_mode_match_nn_lstm_by_hand(num_layers, python_based):
    torch.manual_seed(0)
    module = LSTMModule(
        input_size=F_IN,
        hidden_size=H,
        num_layers=num_layers,
        python_based=python_based,
        in_key="obs",
        out_key="embed",
    )
    x, is_init, h0 = _data(num_layers)
    want_y, want_states = run_by_hand(module.lstm, x, is_init, h0)

    ys, roots, last = _step_by_step(module, x, is_init, h0)
    torch.testing.assert_close(ys, want_y)
    torch.testing.assert_close(last["recurrent_state_h"], want_states[0][:, -1])
    torch.testing.assert_close(last["recurrent_state_c"], want_states[1][:, -1])

    seq = TensorDict({"obs": x, "is_init": is_init[..., None], **roots}, [B, T])
    with set_recurrent_mode(True):
        module(seq)
    torch.testing.assert_close(seq["embed"], want_y)
    # ("next", state): the state after the last step of each trajectory piece, else zeros
    ends = torch.zeros(B, T, dtype=torch.bool)
    ends[:, -1] = True
    ends[0, 2] = ends[2, 0] = ends[2, 4] = True
    for key, want in zip(("recurrent_state_h", "recurrent_state_c"), want_states):
        got = seq["next", key]
        torch.testing.assert_close(got[ends], want[ends])
        assert not got[~ends].any()


def test_recurrent_mode_zeroes_the_stored_state_where_is_init():
    torch.manual_seed(1)
    module = LSTMModule(input_size=F_IN, hidden_size=H, in_key="obs", out_key="embed")
    x, is_init, h0 = _data()
    # stored states that are not zero at trajectory starts (e.g. written by hand)
    states = [h.unsqueeze(1).expand(B, T, 1, H).clone() for h in h0]
    seq = TensorDict(
        {
            "obs": x,
            "is_init": is_init[..., None],
            "recurrent_state_h": states[0],
            "recurrent_state_c": states[1],
        },
        [B, T],
    )
    with set_recurrent_mode(True):
        module(seq)
    want_y, _ = run_by_hand(module.lstm, x, is_init, h0)
    torch.testing.assert_close(seq["embed"], want_y)
    # row 0 starts a trajectory at t=0: its stored state was ignored
    alone = seq[0:1, :3].exclude("embed", "next").clone()
    alone.set("recurrent_state_h", torch.zeros(1, 3, 1, H))
    alone.set("recurrent_state_c", torch.zeros(1, 3, 1, H))
    with set_recurrent_mode(True):
        module(alone)
    torch.testing.assert_close(alone["embed"], seq["embed"][0:1, :3])


def test_recurrent_mode_on_more_batch_dims_and_gradients():
    torch.manual_seed(2)
    module = LSTMModule(input_size=F_IN, hidden_size=H, in_key="obs", out_key="embed")
    x, is_init, h0 = _data()
    states = [h.unsqueeze(1).expand(B, T, 1, H).clone() for h in h0]
    td = TensorDict(
        {
            "obs": x,
            "is_init": is_init[..., None],
            "recurrent_state_h": states[0],
            "recurrent_state_c": states[1],
        },
        [B, T],
    )
    twice = torch.stack([td, td.clone()], 0)  # [2, B, T]
    with set_recurrent_mode(True):
        module(twice)
        module(td)
    torch.testing.assert_close(twice["embed"][1], td["embed"])
    assert twice["next", "recurrent_state_h"].shape == (2, B, T, 1, H)
    # gradients flow through the packed path as through the Python loop
    with set_recurrent_mode(True):
        module(td.exclude("embed", "next"))["embed"].square().sum().backward()
    grads = [p.grad.clone() for p in module.parameters()]
    module.zero_grad()
    module.make_python_based()
    with set_recurrent_mode(True):
        module(td.exclude("embed", "next"))["embed"].square().sum().backward()
    for g, p in zip(grads, module.parameters()):
        torch.testing.assert_close(g, p.grad)
        assert g.abs().sum() > 0


def test_set_recurrent_mode_method_context_manager_and_decorator():
    module = LSTMModule(input_size=F_IN, hidden_size=H, in_key="obs", out_key="embed")
    training = module.set_recurrent_mode(True)
    assert training is not module and training.lstm is module.lstm  # shared weights
    assert training.recurrent_mode and not module.recurrent_mode
    assert module.set_recurrent_mode(False) is module
    assert recurrent_mode() is None
    with set_recurrent_mode(True):
        assert module.recurrent_mode and recurrent_mode() is True
        with set_recurrent_mode("sequential"):
            assert not training.recurrent_mode
        assert module.recurrent_mode
    assert recurrent_mode() is None

    @set_recurrent_mode("recurrent")
    def inside():
        return module.recurrent_mode

    assert inside() is True and module.recurrent_mode is False
    assert LSTMModule(
        input_size=F_IN, hidden_size=H, in_key="obs", out_key="e", default_recurrent_mode=True
    ).recurrent_mode
    with pytest.raises(RuntimeError, match="cannot be changed in-place"):
        module.recurrent_mode = True
    with pytest.raises(ValueError, match="'recurrent' or 'sequential'"):
        set_recurrent_mode("time")


def test_wrapping_an_nn_lstm_and_constructor_errors():
    lstm = nn.LSTM(F_IN, H, batch_first=True)
    module = LSTMModule(
        lstm=lstm,
        in_keys=["obs", "h", "c"],
        out_keys=["embed", ("next", "h"), ("next", "c")],
    )
    assert module.lstm is lstm and module.in_keys[-1] == "is_init"
    primer = module.make_tensordict_primer()
    assert set(primer.primers.keys()) == {"h", "c"}
    with pytest.raises(ValueError, match="batch_first=True"):
        LSTMModule(lstm=nn.LSTM(F_IN, H), in_key="obs", out_key="embed")
    with pytest.raises(ValueError, match="batch_first=True"):
        LSTMModule(F_IN, H, batch_first=False, in_key="obs", out_key="embed")
    with pytest.raises(ValueError, match="cannot be bidirectional"):
        LSTMModule(F_IN, H, bidirectional=True, in_key="obs", out_key="embed")
    with pytest.raises(ValueError, match="cannot be passed along"):
        LSTMModule(F_IN, H, lstm=lstm, in_key="obs", out_key="embed")
    with pytest.raises(ValueError, match="not both or none"):
        LSTMModule(F_IN, H, in_key="obs", in_keys=["obs", "h", "c"], out_key="embed")
    with pytest.raises(ValueError, match="expects 3 inputs"):
        LSTMModule(F_IN, H, in_keys=["obs", "h"], out_key="embed")
    with pytest.raises(RuntimeError, match=r"\('next', <in_key>\)"):
        LSTMModule(
            F_IN, H, in_keys=["obs", "h", "c"], out_keys=["embed", "h2", "c2"]
        ).make_tensordict_primer()


def test_missing_is_init_names_init_tracker_and_missing_state_starts_at_zero():
    torch.manual_seed(3)
    module = LSTMModule(input_size=F_IN, hidden_size=H, in_key="obs", out_key="embed")
    x = torch.randn(2, F_IN)
    with pytest.raises(KeyError, match=r"InitTracker\(\)"):
        module(TensorDict({"obs": x}, [2]))
    td = module(TensorDict({"obs": x, "is_init": torch.zeros(2, 1, dtype=torch.bool)}, [2]))
    # no state yet: zeros are used and written, so rollout steps all hold the same keys
    assert td["recurrent_state_h"].shape == (2, 1, H) and not td["recurrent_state_h"].any()
    with torch.no_grad():
        want, _ = module.lstm(x[:, None])
    torch.testing.assert_close(td["embed"], want[:, 0])
    with pytest.raises(ValueError, match=r"expected \[\*batch, num_layers, hidden_size\]"):
        module(
            TensorDict(
                {
                    "obs": x,
                    "is_init": torch.zeros(2, 1, dtype=torch.bool),
                    "recurrent_state_h": torch.zeros(2, H),
                    "recurrent_state_c": torch.zeros(2, H),
                },
                [2],
            )
        )


def test_torchrl_style_calls_keyword_tensors_and_positional_lstm():
    torch.manual_seed(4)
    module = LSTMModule(
        nn.LSTM(F_IN, H, batch_first=True),  # torchrl scripts pass the nn.LSTM first
        in_keys=["obs", "h", "c"],
        out_keys=["embed", ("next", "h"), ("next", "c")],
    )
    x, is_init, h0 = _data()
    states = [h.unsqueeze(1).expand(B, T, 1, H).clone() for h in h0]
    with set_recurrent_mode(True):
        y, h, c = module(obs=x, h=states[0], c=states[1], is_init=is_init)
    want_y, want_states = run_by_hand(module.lstm, x, is_init, h0)
    torch.testing.assert_close(y, want_y)
    torch.testing.assert_close(h[:, -1], want_states[0][:, -1])
    # a TensorDict without batch dims: the time dim is read from the input entry
    flat = TensorDict({"obs": x, "h": states[0], "c": states[1], "is_init": is_init[..., None]})
    with set_recurrent_mode(True):
        module(flat)
    torch.testing.assert_close(flat["embed"], want_y)
    with pytest.raises(ValueError, match="recurrent_backend"):
        LSTMModule(F_IN, H, in_key="obs", out_key="embed", recurrent_backend="triton")
