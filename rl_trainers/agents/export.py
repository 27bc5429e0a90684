"""A trained policy as one standalone file: torch alone (or onnxruntime) runs it.

The file maps a batch of observations ``[B, *obs_shape]`` (float32) to the deterministic
actions the env accepts: int64 indices for a Discrete space, float32 actions clipped to
the bounds for a Box space. The observation normaliser's statistics are baked in.

* ``exported`` (``.pt2``): ``torch.export`` (``torch.export.load(path).module()(obs)``);
* ``torchscript`` (``.ts``, ``.pt``): ``torch.jit.load(path)(obs)``;
* ``onnx`` (``.onnx``): ``onnxruntime.InferenceSession(path).run(None, {"observation": obs})``
  (needs ``pip install onnx onnxruntime onnxscript``).

Without a format the file's extension says which (:data:`SUFFIXES`). The weights are
constants of the file (they do not require grad): its actions are plain tensors.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rl_trainers.agents import EXPORT_FORMATS as FORMATS
from rl_trainers.agents import EXPORT_SUFFIXES as SUFFIXES
from rl_trainers.agents import export_format
from rl_trainers.agents.policy import RunError, TrainedPolicy

__all__ = ["FORMATS", "SUFFIXES", "PolicyGraph", "export_policy"]


class PolicyGraph(torch.nn.Module):
    """Observations in, deterministic env actions out: the normaliser (its frozen mean and
    std), the policy module in its deterministic mode, and the action conversion."""

    def __init__(self, policy: TrainedPolicy) -> None:
        super().__init__()
        from gymnasium import spaces

        from rl_trainers.envs.specs import Categorical, OneHot

        # gSDE's evaluation policy is a method of its actor: deterministic, the actor's mode
        module = policy.module
        self.policy = module if isinstance(module, torch.nn.Module) else policy.actor
        self.key = policy.observation_key
        self.obs_clips = []
        for i, norm in enumerate(policy.normalizers):
            mean, std = norm.mean_std(0)
            self.register_buffer(f"obs_mean_{i}", mean.clone())
            self.register_buffer(f"obs_std_{i}", std.clone())
            self.obs_clips.append(norm.clip)
        self.num_norms = len(self.obs_clips)
        spec, space = policy.action_spec, policy.action_space
        self.kind = (
            "onehot"
            if isinstance(spec, OneHot)
            else "index"
            if isinstance(spec, Categorical)
            else "box"
        )
        if self.kind == "box" and isinstance(space, spaces.Box):
            self.register_buffer("low", torch.as_tensor(space.low, dtype=torch.float32))
            self.register_buffer("high", torch.as_tensor(space.high, dtype=torch.float32))
        else:
            self.low = self.high = None

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        from tensordict import TensorDict

        from rl_trainers.envs.utils import ExplorationType, set_exploration_type

        x = observation.to(torch.float32)
        for i, clip in enumerate(self.obs_clips):
            # in float64, as the training env normalised
            x = (x.double() - getattr(self, f"obs_mean_{i}")) / getattr(self, f"obs_std_{i}")
            if clip is not None:
                x = x.clamp(-clip, clip)
            x = x.float()
        td = TensorDict({self.key: x}, batch_size=x.shape[:1])
        with set_exploration_type(ExplorationType.DETERMINISTIC):
            td = self.policy(td)
        action = td.get("action")
        if self.kind == "onehot":
            # the mode's index straight from the scores: no one-hot tensor of a traced size
            for scores in ("logits", "action_value"):
                if scores in td.keys():
                    return td.get(scores).argmax(-1)
            return action.to(torch.float32).argmax(-1)
        if self.kind == "index":
            return action.to(torch.int64)
        if self.low is not None:
            action = torch.minimum(torch.maximum(action.to(torch.float32), self.low), self.high)
        return action


def _example(policy: TrainedPolicy, batch: int = 2) -> torch.Tensor:
    return torch.zeros((batch, *policy.observation_shape), dtype=torch.float32)


def _exported_program(graph: PolicyGraph, policy: TrainedPolicy):
    from rl_trainers.fast import gemm

    batch = torch.export.Dim("batch", min=1, max=1 << 20)
    onednn, gemm.USE_ONEDNN = gemm.USE_ONEDNN, False  # plain matmuls in the graph
    try:
        with torch.no_grad():
            return torch.export.export(
                graph, (_example(policy),), dynamic_shapes=({0: batch},), strict=False
            )
    finally:
        gemm.USE_ONEDNN = onednn


@contextlib.contextmanager
def _frozen(module: torch.nn.Module) -> Iterator[None]:
    """The module's parameters without ``requires_grad`` while it is exported (the files
    keep them so, and their outputs need no grad), the policy's own flags back after."""
    flags = [(p, p.requires_grad) for p in module.parameters()]
    try:
        for param, _ in flags:
            param.requires_grad_(False)
        yield
    finally:
        for param, requires_grad in flags:
            param.requires_grad_(requires_grad)


def export_policy(policy: TrainedPolicy, out: str | os.PathLike, format: str | None = None) -> Path:
    """Write ``policy`` to ``out`` as a standalone file of ``format`` (:data:`FORMATS`);
    without one, of the format ``out``'s extension stands for (:data:`SUFFIXES`). An
    unknown format, an extension that says nothing without a format, or a format that
    contradicts the extension is a :class:`RunError`."""
    format = export_format(out, format)
    out = Path(out)
    if format == "onnx":
        _require_onnx()
    out.parent.mkdir(parents=True, exist_ok=True)
    graph = PolicyGraph(policy).eval()
    with _frozen(graph):
        program = _exported_program(graph, policy)
        if format == "exported":
            with open(out, "wb") as f:  # a file object: any name, without torch's warning
                torch.export.save(program, f)
        elif format == "torchscript":
            with torch.no_grad(), warnings.catch_warnings():
                # the trace of an exported program: torch's TracerWarnings concern its
                # guards, which hold for every batch of the traced shape's kind
                warnings.simplefilter("ignore", torch.jit.TracerWarning)
                scripted = torch.jit.trace(program.module(), (_example(policy),), check_trace=False)
            torch.jit.save(scripted, str(out))
        else:
            _export_onnx(program, policy, out)
    return out


def _require_onnx() -> None:
    missing = []
    for name in ("onnx", "onnxscript"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise RunError(
            f"--format onnx needs {' and '.join(missing)}: pip install 'rl_trainers[onnx]' "
            "(onnx, onnxscript and onnxruntime)"
        )


def _export_onnx(program, policy: TrainedPolicy, out: Path) -> None:
    import logging

    # the exporter also logs, through torch.onnx's loggers, that operators of packages not
    # installed (torchvision::nms...) are skipped: none of them is in a policy
    onnx_logger = logging.getLogger("torch.onnx")
    level = onnx_logger.level
    onnx_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            onnx_program = torch.onnx.export(
                program,
                (_example(policy),),
                input_names=["observation"],
                output_names=["action"],
                dynamo=True,
                verbose=False,
            )
    finally:
        onnx_logger.setLevel(level)
    onnx_program.save(str(out))


def run_exported(path: str | os.PathLike, format: str, observations: Any) -> np.ndarray:
    """Run an exported file on a batch of observations (what a deployment does)."""
    obs = np.asarray(observations, dtype=np.float32)
    if format == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path))
        return session.run(None, {session.get_inputs()[0].name: obs})[0]
    module = (
        torch.export.load(str(path)).module() if format == "exported" else torch.jit.load(str(path))
    )
    with torch.no_grad():
        return module(torch.from_numpy(obs)).numpy()
