"""Recurrent tensordict modules: ``LSTMModule``, ``GRUModule`` and ``set_recurrent_mode``.

The modules read an input entry, the recurrent state(s) and ``"is_init"`` (written by
:class:`~rl_trainers.envs.InitTracker`), and write an output entry and the new state(s)
under ``("next", ...)``, so that ``step_mdp`` hands them to the next policy call.

Two modes:

- step by step (default, for collection): each element of the batch is one step; the state
  is zeroed where ``is_init`` is True, i.e. at the start of a trajectory;
- recurrent (``set_recurrent_mode(True)``, for losses on ``[*B, T]`` slices from a replay
  buffer): the last batch dim is time. The state stored at ``t = 0`` starts each sequence
  (zeros if ``is_init``), and a new trajectory starting inside a slice (``is_init`` True at
  ``t > 0``) starts again from zeros. The outputs equal the step-by-step ones on the same
  trajectories. As in torchrl, the ``("next", state)`` outputs hold the state after the
  last step of each trajectory piece and zeros elsewhere.

Shapes: states are ``[*B, num_layers, hidden_size]`` (``[*B, T, num_layers, hidden_size]``
in recurrent mode); :meth:`make_tensordict_primer` declares them to the env so that resets
write zeros and collectors carry them.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase, unravel_key_list
from tensordict.nn import TensorDictModuleBase, dispatch
from torch import nn

from rl_trainers.modules.device import module_device

__all__ = [
    "LSTMModule",
    "GRUModule",
    "set_recurrent_mode",
    "recurrent_mode",
    "get_primers_from_module",
    "runs_recurrent",
]

_MODES = threading.local()  # per thread: a collector thread keeps its own mode


def recurrent_mode() -> bool | None:
    """The mode set by the innermost :class:`set_recurrent_mode`, or None outside any."""
    stack = getattr(_MODES, "stack", None)
    return stack[-1] if stack else None


class set_recurrent_mode(contextlib.ContextDecorator):  # noqa: N801 (torchrl's name)
    """Context manager / decorator setting the mode of recurrent modules (torchrl's).

    Args:
        mode: True or ``"recurrent"`` (the last batch dim is time), False or
            ``"sequential"`` (independent steps). None leaves each module's
            ``default_recurrent_mode``.

    Example:
        >>> with set_recurrent_mode(True):  # doctest: +SKIP
        ...     loss_vals = loss_fn(sample)  # the LSTM runs over the [B, T] slices
    """

    def __init__(self, mode: bool | str | None = True) -> None:
        if isinstance(mode, str):
            names = {"recurrent": True, "sequential": False}
            if mode not in names:
                raise ValueError(
                    f"set_recurrent_mode: mode must be a bool, 'recurrent' or 'sequential', "
                    f"got {mode!r}."
                )
            mode = names[mode]
        self.mode = None if mode is None else bool(mode)

    def __enter__(self) -> set_recurrent_mode:
        stack = getattr(_MODES, "stack", None)
        if stack is None:
            stack = _MODES.stack = []
        stack.append(self.mode if self.mode is not None else (stack[-1] if stack else None))
        return self

    def __exit__(self, *exc: Any) -> None:
        _MODES.stack.pop()


def _lengths_to_ends(starts: torch.Tensor) -> torch.Tensor:
    """``[N, T]`` mask of the last step of each piece, given the mask of first steps."""
    ends = torch.ones_like(starts)
    ends[:, :-1] = starts[:, 1:]
    return ends


class _RecurrentModule(TensorDictModuleBase):
    """Keys, modes, primer and the time loop shared by LSTMModule and GRUModule."""

    DEFAULT_IN_KEYS: list[str] = []
    DEFAULT_OUT_KEYS: list[tuple[str, str]] = []
    _kind = ""  # "LSTM" or "GRU"

    def _check_rnn(self, rnn: nn.RNNBase) -> None:
        name = self._kind.lower()
        if not rnn.batch_first:
            raise ValueError(f"The input {name} must have batch_first=True.")
        if rnn.bidirectional:
            raise ValueError(f"The input {name} cannot be bidirectional.")

    def _setup(
        self,
        rnn: nn.RNNBase | None,
        sizes: dict[str, Any],
        batch_first: bool,
        bidirectional: bool,
        recurrent_backend: str,
        keys: tuple[Any, Any, Any, Any],
        recurrent_mode: bool,
        python_based: bool,
    ) -> nn.RNNBase:
        """The constructors' shared body: checks the torch RNN given (or builds one from
        ``sizes``), sets the keys and the modes, and returns the RNN."""
        rnn_class = nn.LSTM if self._kind == "LSTM" else nn.GRU
        name, article = self._kind.lower(), "An" if self._kind == "LSTM" else "A"
        _check_backend(recurrent_backend)
        if rnn is not None:
            if not isinstance(rnn, rnn_class):
                raise TypeError(
                    f"{name} must be a torch.nn.{self._kind}, got {type(rnn).__name__}."
                )
            if sizes["input_size"] is not None or sizes["hidden_size"] is not None:
                raise ValueError(
                    f"{article} {self._kind} instance cannot be passed along with class argument."
                )
        else:
            if not batch_first:
                raise ValueError(f"The input {name} must have batch_first=True.")
            if bidirectional:
                raise ValueError(f"The input {name} cannot be bidirectional.")
            if sizes["input_size"] is None or sizes["hidden_size"] is None:
                raise ValueError(
                    f"{type(self).__name__} needs input_size and hidden_size (or {name}=...)."
                )
            rnn = rnn_class(**sizes, batch_first=True, bidirectional=False)
        self._check_rnn(rnn)
        self._set_keys(*keys)
        self._recurrent_mode = recurrent_mode
        self.python_based = bool(python_based)
        return rnn

    def _set_keys(self, in_key: Any, in_keys: Any, out_key: Any, out_keys: Any) -> None:
        cls, n = type(self).__name__, 1 + len(self.DEFAULT_IN_KEYS)
        if (in_key is None) == (in_keys is None):
            raise ValueError(
                "Either in_keys or in_key must be specified but not both or none. Got "
                f"{in_keys} and {in_key} respectively."
            )
        if (out_key is None) == (out_keys is None):
            raise ValueError(
                "Either out_keys or out_key must be specified but not both or none. Got "
                f"{out_keys} and {out_key} respectively."
            )
        in_keys = [in_key, *self.DEFAULT_IN_KEYS] if in_key is not None else in_keys
        out_keys = [out_key, *self.DEFAULT_OUT_KEYS] if out_key is not None else out_keys
        in_keys = list(unravel_key_list(list(in_keys)))
        out_keys = list(unravel_key_list(list(out_keys)))
        if len(in_keys) == n + 1 and in_keys[-1] == "is_init":
            in_keys = in_keys[:-1]
        states = "two hidden states" if n == 3 else "a hidden state"
        if len(in_keys) != n:
            raise ValueError(
                f"{cls} expects {n} inputs: a value, and {states} (and potentially an "
                f"'is_init' marker). Got in_keys {in_keys} instead."
            )
        if len(out_keys) != n:
            raise ValueError(
                f"{cls} expects {n} outputs: a value, and {states}. Got out_keys {out_keys} "
                "instead."
            )
        self.in_keys = [*in_keys, "is_init"]
        self.out_keys = out_keys

    # --- the wrapped torch module --------------------------------------------------------------
    @property
    def _rnn(self) -> nn.RNNBase:
        raise NotImplementedError

    def _state_sizes(self) -> list[int]:
        raise NotImplementedError

    # --- modes -------------------------------------------------------------------------------
    @property
    def recurrent_mode(self) -> bool:
        """Whether the last batch dim is time (see :class:`set_recurrent_mode`)."""
        mode = recurrent_mode()
        return bool(self._recurrent_mode) if mode is None else mode

    @recurrent_mode.setter
    def recurrent_mode(self, value: bool) -> None:
        raise RuntimeError(
            "recurrent_mode cannot be changed in-place. Use the set_recurrent_mode context "
            "manager, or module.set_recurrent_mode(mode), which returns a copy sharing the "
            "weights."
        )

    def set_recurrent_mode(self, mode: bool = True) -> _RecurrentModule:
        """A copy of this module with the same weights and ``default_recurrent_mode=mode``.

        torchrl < 0.8's API, used by its recurrent DQN tutorial to build the loss policy:
        ``Seq(feature, lstm.set_recurrent_mode(True), mlp, qval)``. The
        :class:`set_recurrent_mode` context manager overrides it.
        """
        if bool(mode) == bool(self._recurrent_mode):
            return self
        out = type(self)(
            **{self._kind.lower(): self._rnn},
            in_keys=self.in_keys,
            out_keys=self.out_keys,
            default_recurrent_mode=bool(mode),
        )
        out.python_based = self.python_based
        return out

    def make_python_based(self) -> _RecurrentModule:
        """Run the recurrence as a Python loop over time steps (same weights); returns self."""
        self.python_based = True
        return self

    def make_cudnn_based(self) -> _RecurrentModule:
        """Run the recurrence with the torch kernels (the default); returns self."""
        self.python_based = False
        return self

    # --- primer ------------------------------------------------------------------------------
    def make_tensordict_primer(self) -> Any:
        """A :class:`~rl_trainers.envs.TensorDictPrimer` writing zero states at env resets.

        Append it to the env (``env.append_transform(module.make_tensordict_primer())``) so
        that the states are in the env specs, in every reset and in collected batches.
        """
        from rl_trainers.envs.specs import Unbounded
        from rl_trainers.envs.transforms.primer import TensorDictPrimer

        def as_tuple(key: Any) -> tuple:
            return key if isinstance(key, tuple) else (key,)

        state_in = self.in_keys[1:-1]
        state_out = self.out_keys[1:]
        if any(as_tuple(o) != ("next", *as_tuple(i)) for i, o in zip(state_in, state_out)):
            raise RuntimeError(
                "make_tensordict_primer is supposed to work with in_keys/out_keys that have "
                "compatible names, ie. the out_keys should be named after ('next', <in_key>). "
                f"Got in_keys={self.in_keys} and out_keys={self.out_keys} instead."
            )
        rnn = self._rnn
        return TensorDictPrimer(
            {
                key: Unbounded(shape=(rnn.num_layers, size), device=module_device(rnn))
                for key, size in zip(state_in, self._state_sizes())
            },
            expand_specs=True,
        )

    # --- forward -----------------------------------------------------------------------------
    @dispatch
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        cls = type(self).__name__
        value = tensordict.get(self.in_keys[0], None)
        if value is None:
            raise KeyError(
                f"{cls}: input {self.in_keys[0]!r} not found; keys present: "
                f"{list(tensordict.keys(True, True))}."
            )
        state_keys = self.in_keys[1:-1]
        states = [tensordict.get(k, None) for k in state_keys]
        if any(s is None for s in states) and not all(s is None for s in states):
            missing = [k for k, s in zip(state_keys, states) if s is None]
            raise KeyError(f"{cls}: recurrent state {missing} missing while others are given.")
        is_init = tensordict.get("is_init", None)
        if is_init is None:
            raise KeyError(
                f"{cls}: 'is_init' not found in the input; add InitTracker() to the env: it "
                "marks the first step of each trajectory, where the recurrent state restarts "
                "from zeros."
            )
        bs = value.shape[:-1]  # the batch (and time) dims: all but the features
        rnn = self._rnn
        sizes = [(rnn.num_layers, s) for s in self._state_sizes()]
        recurrent = self.recurrent_mode
        if recurrent:
            T = bs[-1] if len(bs) else 1
            N = math.prod(bs[:-1]) if len(bs) else 1
        else:
            N, T = math.prod(bs), 1
        x = value.reshape(N, T, value.shape[-1])
        init = is_init.reshape(N, T).bool()
        if states[0] is None:
            # no state yet (env without a primer): start from zeros, and write them so
            # that every step of a rollout holds the same entries
            h0 = [x.new_zeros(N, *size) for size in sizes]
            for key, size in zip(state_keys, sizes):
                tensordict.set(key, x.new_zeros(*bs, *size))
        else:
            h0 = []
            for key, state, size in zip(state_keys, states, sizes):
                if tuple(state.shape[len(bs) :]) != size:
                    raise ValueError(
                        f"{cls}: recurrent state {key!r} has shape {tuple(state.shape)}; "
                        f"expected [*batch, num_layers, hidden_size] = [*{list(bs)}, "
                        f"{size[0]}, {size[1]}]."
                    )
                h0.append(state.reshape(N, T, *size)[:, 0])
        y, outs = self._run(x, h0, init)
        tensordict.set(self.out_keys[0], y.reshape(*bs, y.shape[-1]))
        for key, out, size in zip(self.out_keys[1:], outs, sizes):
            tensordict.set(key, out.reshape(*bs, *size))
        return tensordict

    def _run(
        self, x: torch.Tensor, h0: list[torch.Tensor], is_init: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Run ``[N, T]`` sequences from ``h0`` (``[N, L, H]`` each), restarting from zeros
        where ``is_init``; returns the outputs and the ``[N, T, L, H]`` states (zero except
        at the last step of each piece)."""
        N, T = is_init.shape
        h0 = [torch.where(is_init[:, 0, None, None], torch.zeros_like(h), h) for h in h0]
        if self.python_based:
            return self._run_python(x, h0, is_init)
        if T == 1 or not bool(is_init[:, 1:].any()):
            y, hn = self._call_rnn(x, h0)
            ends = _lengths_to_ends(torch.zeros_like(is_init))
            return y, [_place(h.unsqueeze(1).expand(N, T, *h.shape[1:]), ends) for h in hn]
        # trajectories starting inside the slice: one padded sequence per trajectory piece
        starts = is_init.clone()
        starts[:, 0] = True
        flat = starts.reshape(-1)
        first = flat.nonzero().squeeze(-1)  # flat index of each piece's first step
        piece = flat.long().cumsum(0) - 1
        lengths = torch.diff(first, append=first.new_tensor([N * T]))
        pos = torch.arange(N * T, device=x.device) - first[piece]
        padded = x.new_zeros(first.numel(), int(lengths.max()), x.shape[-1])
        padded = padded.index_put((piece, pos), x.reshape(N * T, -1))
        row_pieces = piece.reshape(N, T)[:, 0]
        h0_pieces = [
            h.new_zeros(first.numel(), *h.shape[1:]).index_copy(0, row_pieces, h) for h in h0
        ]
        packed = nn.utils.rnn.pack_padded_sequence(
            padded, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        y_packed, hn = self._call_rnn(packed, h0_pieces)
        y_pad, _ = nn.utils.rnn.pad_packed_sequence(
            y_packed, batch_first=True, total_length=padded.shape[1]
        )
        y = y_pad[piece, pos].reshape(N, T, -1)
        last = first + lengths - 1
        outs = [
            h.new_zeros(N * T, *h.shape[1:]).index_copy(0, last, h).reshape(N, T, *h.shape[1:])
            for h in hn
        ]
        return y, outs

    def _run_python(
        self, x: torch.Tensor, h0: list[torch.Tensor], is_init: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The recurrence as a loop over time steps and layers, from the torch weights."""
        rnn = self._rnn
        T = x.shape[1]
        state = [list(h.unbind(1)) for h in h0]  # per state kind, per layer: [N, H]
        ys, history = [], []
        for t in range(T):
            if t:
                reset = is_init[:, t, None]
                state = [
                    [torch.where(reset, torch.zeros_like(s), s) for s in kind] for kind in state
                ]
            inp = x[:, t]
            for layer in range(rnn.num_layers):
                new = self._cell(inp, [kind[layer] for kind in state], layer)
                for kind, value in zip(state, new):
                    kind[layer] = value
                inp = new[0]
                if layer < rnn.num_layers - 1 and rnn.dropout:
                    inp = F.dropout(inp, p=rnn.dropout, training=self.training)
            ys.append(inp)
            history.append([torch.stack(kind, 1) for kind in state])
        starts = is_init.clone()
        starts[:, 0] = True
        ends = _lengths_to_ends(starts)
        outs = [_place(torch.stack(per_kind, 1), ends) for per_kind in zip(*history)]
        return torch.stack(ys, 1), outs

    def _weights(self, layer: int) -> tuple[torch.Tensor | None, ...]:
        rnn = self._rnn
        b_ih = getattr(rnn, f"bias_ih_l{layer}", None) if rnn.bias else None
        b_hh = getattr(rnn, f"bias_hh_l{layer}", None) if rnn.bias else None
        return getattr(rnn, f"weight_ih_l{layer}"), getattr(rnn, f"weight_hh_l{layer}"), b_ih, b_hh

    def _call_rnn(self, x: Any, h0: list[torch.Tensor]) -> tuple[Any, list[torch.Tensor]]:
        raise NotImplementedError

    def _cell(self, x: torch.Tensor, state: list[torch.Tensor], layer: int) -> list[torch.Tensor]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(\n    {self._kind.lower()}={self._rnn!r},\n"
            f"    in_keys={self.in_keys},\n    out_keys={self.out_keys},\n"
            f"    recurrent_mode={self.recurrent_mode})"
        )


def _place(states: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    """Keep ``states`` (``[N, T, L, H]``) at the ``ends`` mask (``[N, T]``), zeros elsewhere."""
    return torch.where(ends[:, :, None, None], states, torch.zeros_like(states))


def _check_backend(backend: str) -> None:
    if backend not in ("auto", "pad", "scan"):
        raise ValueError(
            f"recurrent_backend must be one of 'auto', 'pad' or 'scan', got {backend!r} "
            "('triton' is not available in rl_trainers)."
        )


def _default_mode(default_recurrent_mode: bool | None, recurrent_mode: bool | None) -> bool:
    if default_recurrent_mode is not None and recurrent_mode is not None:
        if bool(default_recurrent_mode) != bool(recurrent_mode):
            raise ValueError(
                "recurrent_mode is the former name of default_recurrent_mode; give one of them."
            )
    mode = default_recurrent_mode if default_recurrent_mode is not None else recurrent_mode
    return bool(mode)


class LSTMModule(_RecurrentModule):
    """An :class:`torch.nn.LSTM` reading and writing TensorDict entries (torchrl's).

    Args:
        input_size: features of the input entry.
        hidden_size: features of the hidden state (and of the output).
        num_layers: stacked LSTM layers.
        bias: use bias weights.
        batch_first: must be True (TensorDict batch dims come first).
        dropout: dropout between layers.
        proj_size: LSTM projection size (0: none).
        bidirectional: must be False (not usable online).
        python_based: run the recurrence as a Python loop over the same weights.
        recurrent_backend: ``"pad"``, ``"scan"`` or ``"auto"``: accepted, one implementation
            (trajectory pieces packed for the torch kernel, or the Python loop).
        recurrent_compute_dtype: accepted for torchrl compatibility (the input's dtype is used).

    Keyword Args:
        in_key: the input entry; the states are then ``"recurrent_state_h"`` and
            ``"recurrent_state_c"``. Exclusive with ``in_keys``.
        in_keys: ``[value, hidden_h, hidden_c]`` (optionally followed by ``"is_init"``).
        out_key: the output entry; the states are written to ``("next",
            "recurrent_state_h")`` and ``("next", "recurrent_state_c")``.
        out_keys: ``[value, next_h, next_c]``.
        device: device of a new LSTM.
        lstm: an existing ``nn.LSTM`` (``batch_first=True``) to wrap, instead of the size
            arguments.
        default_recurrent_mode: the mode outside :class:`set_recurrent_mode` (False).
        recurrent_mode: former name of ``default_recurrent_mode``.

    Example:
        >>> env = TransformedEnv(GymEnv("CartPole-v1"), InitTracker())  # doctest: +SKIP
        >>> lstm = LSTMModule(input_size=4, hidden_size=32, in_key="observation",
        ...                   out_key="embed")  # doctest: +SKIP
        >>> env.append_transform(lstm.make_tensordict_primer())  # doctest: +SKIP
        >>> rollout = env.rollout(10, Seq(lstm, Mod(head, ["embed"], ["action"])))  # doctest: +SKIP
    """

    DEFAULT_IN_KEYS = ["recurrent_state_h", "recurrent_state_c"]
    DEFAULT_OUT_KEYS = [("next", "recurrent_state_h"), ("next", "recurrent_state_c")]
    _kind = "LSTM"

    def __init__(
        self,
        input_size: int | None = None,
        hidden_size: int | None = None,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0,
        proj_size: int = 0,
        bidirectional: bool = False,
        python_based: bool = False,
        recurrent_backend: str = "pad",
        recurrent_compute_dtype: torch.dtype = torch.float32,
        *,
        in_key: Any = None,
        in_keys: Sequence[Any] | None = None,
        out_key: Any = None,
        out_keys: Sequence[Any] | None = None,
        device: Any = None,
        lstm: nn.LSTM | None = None,
        default_recurrent_mode: bool | None = None,
        recurrent_mode: bool | None = None,
    ) -> None:
        super().__init__()
        if isinstance(input_size, nn.LSTM) and lstm is None:  # LSTMModule(nn.LSTM(...), ...)
            lstm, input_size = input_size, None
        sizes = dict(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        sizes.update(bias=bias, dropout=dropout, proj_size=proj_size, device=device)
        self.lstm = self._setup(
            lstm,
            sizes,
            batch_first,
            bidirectional,
            recurrent_backend,
            (in_key, in_keys, out_key, out_keys),
            _default_mode(default_recurrent_mode, recurrent_mode),
            python_based,
        )

    @property
    def _rnn(self) -> nn.LSTM:
        return self.lstm

    def _state_sizes(self) -> list[int]:
        h = self.lstm.proj_size if self.lstm.proj_size > 0 else self.lstm.hidden_size
        return [h, self.lstm.hidden_size]

    def _call_rnn(self, x: Any, h0: list[torch.Tensor]) -> tuple[Any, list[torch.Tensor]]:
        h, c = (s.transpose(0, 1).contiguous() for s in h0)
        y, (hn, cn) = self.lstm(x, (h, c))
        return y, [hn.transpose(0, 1), cn.transpose(0, 1)]

    def _cell(self, x: torch.Tensor, state: list[torch.Tensor], layer: int) -> list[torch.Tensor]:
        h, c = state
        w_ih, w_hh, b_ih, b_hh = self._weights(layer)
        gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
        i, f, g, o = gates.chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        if self.lstm.proj_size > 0:
            h = F.linear(h, getattr(self.lstm, f"weight_hr_l{layer}"))
        return [h, c]


class GRUModule(_RecurrentModule):
    """An :class:`torch.nn.GRU` reading and writing TensorDict entries (torchrl's).

    Args:
        input_size: features of the input entry.
        hidden_size: features of the hidden state (and of the output).
        num_layers: stacked GRU layers.
        bias: use bias weights.
        batch_first: must be True (TensorDict batch dims come first).
        dropout: dropout between layers.
        bidirectional: must be False (not usable online).
        python_based: run the recurrence as a Python loop over the same weights.
        recurrent_backend: ``"pad"``, ``"scan"`` or ``"auto"``: accepted, one implementation
            (trajectory pieces packed for the torch kernel, or the Python loop).
        recurrent_compute_dtype: accepted for torchrl compatibility (the input's dtype is used).

    Keyword Args:
        in_key: the input entry; the state is then ``"recurrent_state"``. Exclusive with
            ``in_keys``.
        in_keys: ``[value, hidden]`` (optionally followed by ``"is_init"``).
        out_key: the output entry; the state is written to ``("next", "recurrent_state")``.
        out_keys: ``[value, next_hidden]``.
        device: device of a new GRU.
        gru: an existing ``nn.GRU`` (``batch_first=True``) to wrap, instead of the size
            arguments.
        default_recurrent_mode: the mode outside :class:`set_recurrent_mode` (False).
        recurrent_mode: former name of ``default_recurrent_mode``.
    """

    DEFAULT_IN_KEYS = ["recurrent_state"]
    DEFAULT_OUT_KEYS = [("next", "recurrent_state")]
    _kind = "GRU"

    def __init__(
        self,
        input_size: int | None = None,
        hidden_size: int | None = None,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0,
        bidirectional: bool = False,
        python_based: bool = False,
        recurrent_backend: str = "pad",
        recurrent_compute_dtype: torch.dtype = torch.float32,
        *,
        in_key: Any = None,
        in_keys: Sequence[Any] | None = None,
        out_key: Any = None,
        out_keys: Sequence[Any] | None = None,
        device: Any = None,
        gru: nn.GRU | None = None,
        default_recurrent_mode: bool | None = None,
        recurrent_mode: bool | None = None,
    ) -> None:
        super().__init__()
        if isinstance(input_size, nn.GRU) and gru is None:  # GRUModule(nn.GRU(...), ...)
            gru, input_size = input_size, None
        sizes = dict(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        sizes.update(bias=bias, dropout=dropout, device=device)
        self.gru = self._setup(
            gru,
            sizes,
            batch_first,
            bidirectional,
            recurrent_backend,
            (in_key, in_keys, out_key, out_keys),
            _default_mode(default_recurrent_mode, recurrent_mode),
            python_based,
        )

    @property
    def _rnn(self) -> nn.GRU:
        return self.gru

    def _state_sizes(self) -> list[int]:
        return [self.gru.hidden_size]

    def _call_rnn(self, x: Any, h0: list[torch.Tensor]) -> tuple[Any, list[torch.Tensor]]:
        y, hn = self.gru(x, h0[0].transpose(0, 1).contiguous())
        return y, [hn.transpose(0, 1)]

    def _cell(self, x: torch.Tensor, state: list[torch.Tensor], layer: int) -> list[torch.Tensor]:
        (h,) = state
        w_ih, w_hh, b_ih, b_hh = self._weights(layer)
        gi_r, gi_z, gi_n = F.linear(x, w_ih, b_ih).chunk(3, -1)
        gh_r, gh_z, gh_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
        r = torch.sigmoid(gi_r + gh_r)
        z = torch.sigmoid(gi_z + gh_z)
        n = torch.tanh(gi_n + r * gh_n)
        return [(1 - z) * n + z * h]


def get_primers_from_module(module: nn.Module) -> Any:
    """The :class:`~rl_trainers.envs.TensorDictPrimer` s that the recurrent submodules of
    ``module`` need (torchrl's ``torchrl.modules.utils.get_primers_from_module``).

    Returns:
        None if no submodule has a ``make_tensordict_primer`` method, the primer if one
        has, else a :class:`~rl_trainers.envs.Compose` of them.
    """
    from rl_trainers.envs.transforms import Compose

    primers = [
        m.make_tensordict_primer()
        for m in module.modules()
        if callable(getattr(m, "make_tensordict_primer", None))
    ]
    if not primers:
        return None
    return primers[0] if len(primers) == 1 else Compose(*primers)


def runs_recurrent(module: Any) -> bool:
    """Whether ``module`` holds an LSTMModule/GRUModule now reading the last batch dim as
    time (so callers must not merge current and next steps along that dim)."""
    modules = getattr(module, "modules", None)
    if modules is None:
        return False
    return any(isinstance(m, _RecurrentModule) and m.recurrent_mode for m in modules())
