"""A transform that renders the parent env and writes the frame to the tensordict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, TensorDictBase
from tensordict.utils import NestedKey

from rl_trainers.envs.transforms import Transform

__all__ = ["PixelRenderTransform"]


def _find_render(env: Any, method: str = "render") -> Callable[..., Any]:
    """Returns the ``method`` (``render``) of ``env`` or of the env it wraps (``base_env``,
    ``env``)."""
    seen = set()
    while env is not None and id(env) not in seen:
        seen.add(id(env))
        if getattr(type(env), method, None) is not None:
            return getattr(env, method)
        inner = getattr(env, "base_env", None)
        env = inner if inner is not None else getattr(env, "env", None)
    raise RuntimeError(
        f"PixelRenderTransform found no {method}() on its parent env nor on the env it wraps; "
        "create the env with render_mode='rgb_array'."
    )


class PixelRenderTransform(Transform):
    """Calls ``render()`` on the parent env after each reset and step and stores the frame.

    Useful when the env was not built with ``from_pixels=True`` but frames are wanted for a
    :class:`~rl_trainers.record.VideoRecorder` placed after this transform.

    Args:
        out_keys: where the frame goes (a key or a one-key list); defaults to ``["pixels"]``.
        preproc: applied to the rendered array (e.g. a resize) before it is stored.
        as_non_tensor: store the frame as non-tensor data instead of a uint8 tensor (None,
            torchrl's default, means False).
        render_method: the name of the env's render method.
        pass_tensordict: pass the tensordict to the render method (stateless envs).
        **kwargs: forwarded to the render method.

    :meth:`switch` turns rendering off and on (e.g. ``env.apply(...)`` to render only
    during evaluation); :attr:`enabled` tells which.
    """

    def __init__(
        self,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        preproc: Callable[[np.ndarray], np.ndarray | torch.Tensor] | None = None,
        as_non_tensor: bool | None = False,
        render_method: str = "render",
        pass_tensordict: bool = False,
        **kwargs: Any,
    ) -> None:
        if out_keys is None:
            out_keys = ["pixels"]
        elif isinstance(out_keys, str | tuple):
            out_keys = [out_keys]
        if len(out_keys) != 1:
            raise ValueError(f"PixelRenderTransform writes one key, got out_keys={out_keys}.")
        super().__init__()  # reads nothing: the base requires len(in_keys) == len(out_keys)
        self.out_keys = list(out_keys)
        self.preproc = preproc
        self.as_non_tensor = bool(as_non_tensor)
        self.render_method = render_method
        self.pass_tensordict = pass_tensordict
        self.render_kwargs = kwargs
        self._enabled = True
        self._reset_seen = False  # a batched env is rendered only after its first reset
        self._spec_pending = False  # the frame spec waits for the first rendered frame

    @property
    def enabled(self) -> bool:
        """Whether frames are rendered."""
        return self._enabled

    def switch(self, mode: str | bool | None = None) -> None:
        """Turn rendering on or off: ``True``/``"on"``, ``False``/``"off"``, or (None) the
        opposite of the current state."""
        if mode is None:
            mode = not self._enabled
        elif not isinstance(mode, bool):
            if mode not in ("on", "off"):
                raise ValueError(f"mode must be a bool, 'on' or 'off', got {mode!r}.")
            mode = mode == "on"
        self._enabled = mode

    def _owner_env(self) -> Any:
        """The env holding this transform (cheaper than ``parent`` inside a Compose)."""
        container = self.container
        while isinstance(container, Transform):
            container = container.container
        return container

    def _render(self, tensordict: TensorDictBase | None = None) -> Any:
        env = self._owner_env()
        if env is None:
            raise RuntimeError("PixelRenderTransform needs a parent env to render.")
        render = _find_render(env, self.render_method)
        if self.pass_tensordict:
            frame = render(tensordict, **self.render_kwargs)
        else:
            frame = render(**self.render_kwargs)
        if isinstance(frame, list | tuple):  # vector envs render one frame per sub-env
            frame = np.stack(frame)
        if self.preproc is not None:
            frame = self.preproc(frame)
        return frame

    def _write(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self._enabled:
            return tensordict
        frame = self._render(tensordict)
        if frame is None:
            return tensordict
        key = self.out_keys[0]
        if self.as_non_tensor:
            tensordict.set(key, NonTensorData(frame, batch_size=tensordict.batch_size))
        else:
            tensordict.set(key, torch.as_tensor(np.ascontiguousarray(frame)))
        if self._spec_pending:
            self._refresh_owner_specs()
        return tensordict

    def _refresh_owner_specs(self) -> None:
        """Recompute the owner env's specs now that a frame exists (the probe at
        construction could not render: gymnasium envs refuse to render before a reset)."""
        self._spec_pending = False
        self.reset_parent()

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._write(tensordict)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        self._reset_seen = True
        return self._write(tensordict_reset)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        """Adds a uint8 spec for the frame (shape from one render) when a parent env exists.

        Gymnasium envs cannot render before their first reset, and a failed render stops the
        worker processes of a ``ParallelEnv``: a batched env is only probed once it was reset.
        When no frame can be rendered yet, the spec is added at the first reset instead.
        """
        owner = self._owner_env()
        if self.as_non_tensor or owner is None:
            return observation_spec
        from rl_trainers.envs.specs import Unbounded

        rendered = None
        if self._reset_seen or not len(getattr(owner, "batch_size", ())):
            try:
                rendered = self._render()
            except Exception:
                rendered = None
        if rendered is None:
            self._spec_pending = True
            return observation_spec
        frame = torch.as_tensor(np.ascontiguousarray(rendered))
        observation_spec[self.out_keys[0]] = Unbounded(
            shape=frame.shape, dtype=frame.dtype, device=getattr(observation_spec, "device", None)
        )
        return observation_spec

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Renders the parent env into ``tensordict``."""
        return self._write(tensordict)
