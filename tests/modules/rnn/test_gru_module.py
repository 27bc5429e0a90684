"""GRUModule: torchrl's keys; step-by-step and recurrent-mode outputs against nn.GRU run by
hand, with trajectories starting inside the [B, T] slices."""

from __future__ import annotations

import pytest
import torch
from _rnn_reference import run_by_hand
from tensordict import TensorDict
from torch import nn

from rl_trainers.modules import GRUModule, set_recurrent_mode
from rl_trainers.modules.tensordict_module.rnn import GRUModule as GRUModuleTorchrlPath

B, T, F_IN, H = 2, 6, 3, 4


def test_default_keys_and_torchrl_path():
    gru = GRUModule(input_size=F_IN, hidden_size=H, in_key="x", out_key="y")
    assert GRUModuleTorchrlPath is GRUModule
    assert gru.in_keys == ["x", "recurrent_state", "is_init"]
    assert gru.out_keys == ["y", ("next", "recurrent_state")]
    assert isinstance(gru.gru, nn.GRU)
    primer = gru.make_tensordict_primer()
    assert primer.primers["recurrent_state"].shape == (1, H)
    with pytest.raises(ValueError, match="expects 2 inputs"):
        GRUModule(F_IN, H, in_keys=["x", "h", "c"], out_key="y")
    with pytest.raises(ValueError, match="A GRU instance cannot be passed"):
        GRUModule(F_IN, H, gru=nn.GRU(F_IN, H, batch_first=True), in_key="x", out_key="y")


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("python_based", [False, True])
def test_step_by_step_and_recurrent_mode_match_nn_gru_by_hand(num_layers, python_based):
    torch.manual_seed(0)
    module = GRUModule(
        F_IN, H, num_layers=num_layers, python_based=python_based, in_key="x", out_key="y"
    )
    x = torch.randn(B, T, F_IN)
    is_init = torch.zeros(B, T, dtype=torch.bool)
    is_init[0, 0] = is_init[0, 4] = is_init[1, 2] = True
    h0 = torch.randn(B, num_layers, H)
    want_y, (want_h,) = run_by_hand(module.gru, x, is_init, [h0])

    td = TensorDict({"recurrent_state": h0}, [B])
    ys, roots = [], []
    for t in range(T):
        td.set("x", x[:, t])
        td.set("is_init", is_init[:, t, None])
        roots.append(td["recurrent_state"].clone())
        module(td)
        ys.append(td["y"])
        td.set("recurrent_state", td["next", "recurrent_state"])
    torch.testing.assert_close(torch.stack(ys, 1), want_y)
    torch.testing.assert_close(td["recurrent_state"], want_h[:, -1])

    seq = TensorDict(
        {"x": x, "is_init": is_init[..., None], "recurrent_state": torch.stack(roots, 1)}, [B, T]
    )
    module.set_recurrent_mode(True)(seq)
    torch.testing.assert_close(seq["y"], want_y)
    ends = torch.zeros(B, T, dtype=torch.bool)
    ends[:, -1] = ends[0, 3] = ends[1, 1] = True
    torch.testing.assert_close(seq["next", "recurrent_state"][ends], want_h[ends])
    assert not seq["next", "recurrent_state"][~ends].any()
    # the same under the context manager, and a single step in recurrent mode
    again = seq.exclude("y", "next")
    with set_recurrent_mode(True):
        module(again)
    torch.testing.assert_close(again["y"], want_y)
