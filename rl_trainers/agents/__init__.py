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

from rl_trainers._lazy_attributes import lazy_attributes
from rl_trainers.errors import RunError

__all__ = ["EXPORT_FORMATS", "RunError", "TrainedPolicy", "evaluate", "load_policy", "make_env"]

#: The file formats ``export_policy`` writes (``rl-trainers export --format``).
EXPORT_FORMATS = ("exported", "torchscript", "onnx")

#: Loaded on first use, so the commands' ``--help`` and ``rl-trainers results`` (which read
#: files only) do not import torch.
__getattr__ = lazy_attributes(
    __name__,
    dict.fromkeys(("TrainedPolicy", "evaluate", "load_policy", "make_env"), f"{__name__}.policy"),
)
