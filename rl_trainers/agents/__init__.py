"""The user's side of a finished run: load its policy, act, rebuild its env, evaluate it.

::

    import rl_trainers

    policy = rl_trainers.load_policy("outputs/ppo/CartPole-v1/2025-01-01_12-00-00")
    env = rl_trainers.make_env("outputs/ppo/CartPole-v1/2025-01-01_12-00-00")
    obs, _ = env.reset(seed=0)
    action = policy.act(obs)  # an action env.step accepts

The policy is rebuilt from the run's saved ``.hydra/config.yaml`` with the app's own
builders (the algorithm trainer's ``build_loss``) and the weights of its latest checkpoint
(or of ``checkpoints/best_policy.pt``, the best periodic evaluation's), with the training
env's observation normaliser frozen in front of it. Nothing of the trainer is built: no
collector, optimizer, logger or run directory.
"""

from __future__ import annotations

import os

from rl_trainers._lazy_attributes import lazy_attributes
from rl_trainers.errors import RunError

__all__ = [
    "EXPORT_FORMATS",
    "EXPORT_SUFFIXES",
    "RunError",
    "TrainedPolicy",
    "evaluate",
    "export_format",
    "load_policy",
    "make_env",
]

#: The file formats ``export_policy`` writes (``rl-trainers export --format``).
EXPORT_FORMATS = ("exported", "torchscript", "onnx")

#: The format a file's extension stands for: what is written when no format is given.
EXPORT_SUFFIXES = {".pt2": "exported", ".ts": "torchscript", ".pt": "torchscript", ".onnx": "onnx"}

_SUFFIXES_TEXT = ".pt2 (exported), .ts or .pt (torchscript), .onnx (onnx)"


def export_format(out: str | os.PathLike, format: str | None = None, *, cli: bool = False) -> str:
    """The format to write ``out`` in: ``format`` if given, else the one its extension
    stands for (:data:`EXPORT_SUFFIXES`). A format that is not one of :data:`EXPORT_FORMATS`,
    an extension that says nothing without a format, or a format that contradicts the
    extension is a :class:`RunError` (its message names ``--format`` when ``cli``)."""
    option = (lambda f: f"--format {f}") if cli else (lambda f: f"format={f!r}")
    choices = (
        f"--format {'|'.join(EXPORT_FORMATS)}"
        if cli
        else f"format= one of {', '.join(map(repr, EXPORT_FORMATS))}"
    )
    if format is not None and format not in EXPORT_FORMATS:
        raise RunError(f"{option(format)}: one of {', '.join(EXPORT_FORMATS)}")
    name = os.fspath(out)
    suffix = os.path.splitext(name)[1].lower()
    implied = EXPORT_SUFFIXES.get(suffix)
    if format is None:
        if implied is None:
            raise RunError(
                f"{name}: {f'the extension {suffix}' if suffix else 'a name without extension'} "
                f"does not say the format; name the file {_SUFFIXES_TEXT}, or give {choices}"
            )
        return implied
    if implied is not None and implied != format:
        wanted = " or ".join(s for s, f in EXPORT_SUFFIXES.items() if f == format)
        raise RunError(
            f"{option(format)} contradicts {name} ({suffix} is {implied}): name the file "
            f"{wanted}, or leave {'--format' if cli else 'format'} out to write {implied} "
            f"(extensions: {_SUFFIXES_TEXT})"
        )
    return format


#: Loaded on first use, so the commands' ``--help`` and ``rl-trainers results`` (which read
#: files only) do not import torch.
__getattr__ = lazy_attributes(
    __name__,
    dict.fromkeys(("TrainedPolicy", "evaluate", "load_policy", "make_env"), f"{__name__}.policy"),
)
