"""``load_policy``, ``make_env`` and ``evaluate``: a trained policy outside the trainer."""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from rl_trainers.errors import RunError

__all__ = ["RunError", "TrainedPolicy", "evaluate", "load_policy", "make_env"]

CONFIG_FILE = Path(".hydra") / "config.yaml"
BEST_POLICY_FILE = "best_policy.pt"

#: Checkpoint metadata entries that shape the policy or its observations: a checkpoint
#: given with ``checkpoint=`` must agree with the run's config on these.
_POLICY_FIELDS = ("algorithm", "env.", "network.", "model.")
#: Entries that may differ (how many envs collected, how rewards were scaled for training).
_NOT_POLICY_FIELDS = ("env.num_envs", "env.normalize_rewards")


# ----------------------------------------------------------------------------- the run


def find_run(path: str | os.PathLike) -> tuple[Path, Path | None]:
    """The run directory of ``path`` (a run directory, or a checkpoint file inside one),
    and that checkpoint file (None for a directory)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise RunError(f"{path} does not exist: give a run directory (it holds .hydra/config.yaml)")
    if path.is_dir():
        if not (path / CONFIG_FILE).is_file():
            jobs = sorted(p.parents[1] for p in path.glob(f"*/{CONFIG_FILE}"))
            if jobs:  # e.g. a sweep directory: its numbered job directories are the runs
                trained = [j for j in jobs if any((j / "checkpoints").glob("*.pt"))] or jobs
                raise RunError(
                    f"{path} is not a run directory but holds {len(jobs)}: give one of them, "
                    f"e.g. {trained[0]} (rl-trainers results {path} --group-by run compares them)"
                )
            raise RunError(
                f"{path} is not a run directory: it has no {CONFIG_FILE} (give the directory a "
                "training run wrote, e.g. outputs/ppo/CartPole-v1/<date>_<time>)"
            )
        return path, None
    for parent in path.parents:
        if (parent / CONFIG_FILE).is_file():
            return parent, path
    raise RunError(
        f"{path} is not inside a run directory: no {CONFIG_FILE} above it (give the run "
        "directory, or one of its checkpoints: --checkpoint, or checkpoint= in Python; a "
        "Stable-Baselines3 .zip does not load here)"
    )


def run_config(run_dir: Path) -> DictConfig:
    """The run's resolved config (``.hydra/config.yaml``), checked against its schema."""
    from rl_trainers.configs.validation import typed_config
    from rl_trainers.errors import ConfigError

    try:
        cfg = OmegaConf.load(run_dir / CONFIG_FILE)
    except Exception as err:  # noqa: BLE001 - any unreadable YAML is one line
        raise RunError(f"{run_dir / CONFIG_FILE} cannot be read ({err})") from None
    if not isinstance(cfg, DictConfig) or "algorithm" not in cfg or "env" not in cfg:
        raise RunError(f"{run_dir / CONFIG_FILE} is not the config of an rl_trainers run")
    with open_dict(cfg):
        cfg.pop("hydra", None)
    try:
        return typed_config(cfg)
    except ConfigError as err:
        raise RunError(f"{run_dir / CONFIG_FILE}: {err}") from None


def _read_checkpoint(path: Path) -> dict[str, Any]:
    """The checkpoint's plain data, memory-mapped (its replay buffer is never read in)."""
    from rl_trainers.core import checkpoint as ckpt

    if path.is_dir():  # CKPT_BACKEND=torchsnapshot: a directory
        with _backend("torchsnapshot"):
            try:
                return ckpt.load_checkpoint(path)
            except (ckpt.CheckpointError, ImportError) as err:
                raise RunError(str(err).splitlines()[0]) from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - not a torch zip file: the checkpoint module says why
        with _backend("torch"):
            try:
                return ckpt.load_checkpoint(path)
            except ckpt.CheckpointError as err:
                raise RunError(str(err).splitlines()[0]) from None
    if not isinstance(state, dict) or state.get("format") != ckpt.CKPT_FORMAT:
        raise RunError(f"{path} is not an rl_trainers checkpoint")
    return state


class _backend:  # noqa: N801 - a context manager
    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        self.before = os.environ.get("CKPT_BACKEND")
        os.environ["CKPT_BACKEND"] = self.name

    def __exit__(self, *exc: Any) -> None:
        if self.before is None:
            os.environ.pop("CKPT_BACKEND", None)
        else:
            os.environ["CKPT_BACKEND"] = self.before


def choose_checkpoint(run_dir: Path, which: str, checkpoint: str | os.PathLike | None) -> Path:
    """The file to load: ``checkpoint`` if given, else the run's latest checkpoint
    (``which="latest"``) or its ``best_policy.pt`` (``which="best"``)."""
    from rl_trainers.core.checkpoint import CheckpointError, latest_checkpoint

    if checkpoint is not None:
        if which != "latest":
            raise RunError(f"which={which!r} and a checkpoint file: give one of the two")
        path = Path(checkpoint).expanduser()
        if not path.exists():
            raise RunError(f"checkpoint {path} does not exist")
        return path
    folder = run_dir / "checkpoints"
    if which == "best":
        best = folder / BEST_POLICY_FILE
        if not best.is_file():
            raise RunError(
                f"{run_dir} has no best policy ({folder / BEST_POLICY_FILE}): it is saved by "
                "runs with periodic evaluation (eval.interval>0); load the latest checkpoint "
                "instead (without --best, or which='latest' in Python)"
            )
        return best
    if which != "latest":
        raise RunError(f"which={which!r}: 'latest' or 'best'")
    found = None
    for backend in ("torch", "torchsnapshot"):
        with _backend(backend):
            try:
                found = latest_checkpoint(folder / "trainer.pt")
            except CheckpointError:
                found = None
        if found is not None:
            return found
    stopped = _last_launch_error(run_dir / "train.log")
    if stopped is not None:
        raise RunError(
            f"{run_dir} has no checkpoint: the run stopped on an error before its first ({stopped})"
        )
    raise RunError(
        f"{run_dir} has no checkpoint in {folder}: the run is still training, or was killed "
        "before its first save (a run saves when it ends, when Ctrl-C or SIGTERM stops it, "
        "and every trainer.save_trainer_interval frames when that is set)"
    )


def _last_launch_error(log: Path) -> str | None:
    """The ``Error:`` line (without its prefix) with which the last launch in a run's
    ``train.log`` stopped, or None (no log, or a launch still going)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    error = None
    for line in lines:
        if " started: " in line:
            error = None  # a later launch
        elif line.startswith("Error: "):
            error = line.removeprefix("Error: ")
    return error


def _check_belongs(cfg: DictConfig, state: dict[str, Any], path: Path) -> None:
    """A checkpoint of another algorithm, env or network than the run's is refused."""
    from rl_trainers.algorithms.build import checkpoint_metadata

    saved = state.get("meta") or {}
    ours = checkpoint_metadata(cfg)

    def relevant(key: str) -> bool:
        return key.startswith(_POLICY_FIELDS) and key not in _NOT_POLICY_FIELDS

    diffs = [
        f"{key}={saved.get(key, '<absent>')!r} (the run: {ours.get(key, '<absent>')!r})"
        for key in sorted(k for k in set(saved) | set(ours) if relevant(k))
        if key in saved and saved.get(key) != ours.get(key)
    ]
    if diffs:
        raise RunError(
            f"{path} does not belong to this run: it was made with {', '.join(diffs[:3])}"
        )


# ----------------------------------------------------------------------------- envs


def _env_cfg(cfg: DictConfig) -> DictConfig:
    """``cfg`` with TD3's/DDPG's OU ``InitTracker`` added as their trainer adds it."""
    if str(cfg.algorithm) in ("td3", "ddpg"):
        from rl_trainers.algorithms.td3 import add_ou_init_tracker

        add_ou_init_tracker(cfg)
    return cfg


def build_run_env(
    cfg: DictConfig, num_envs: int = 1, render_mode: str | None = None, sync: bool = True
):
    """The run's env as its evaluations build it (unscaled rewards, no reward normaliser),
    with ``num_envs`` sub-envs."""
    from rl_trainers.algorithms.build import build
    from rl_trainers.errors import ConfigError

    kwargs: dict[str, Any] = {
        "num_envs": num_envs,
        "reward_scale": 1.0,
        "normalize_rewards": False,
    }
    if sync:
        kwargs["vectorization"] = "sync"
    if render_mode is not None:
        make_kwargs = cfg.env.get("make_kwargs") or {}
        if isinstance(make_kwargs, DictConfig):
            make_kwargs = OmegaConf.to_container(make_kwargs, resolve=True)
        kwargs["make_kwargs"] = {**make_kwargs, "render_mode": render_mode}
    try:
        return build(_env_cfg(cfg), "env", **kwargs)
    except ConfigError as err:
        raise RunError(str(err)) from None


def _vecnorms(env) -> list:
    from rl_trainers.envs import VecNorm
    from rl_trainers.envs.transforms.transforms import running_statistics

    return [t for t in running_statistics(env) if isinstance(t, VecNorm)]


def _saved_vecnorm_states(env_state: dict[str, Any] | None) -> list[dict[str, torch.Tensor]]:
    """The state of each ``VecNorm`` in a saved env state dict, in order."""
    if not env_state:
        return []
    prefixes = sorted(
        {k[: -len("sum_0")] for k in env_state if k.endswith("sum_0")},
        key=lambda p: [int(x) if x.isdigit() else x for x in p.split(".")],
    )
    return [
        {k[len(p) :]: torch.as_tensor(v).clone() for k, v in env_state.items() if k.startswith(p)}
        for p in prefixes
    ]


def load_normalizers(env, states: list[dict[str, torch.Tensor]], source: str) -> None:
    """Give ``env``'s observation normalisers the saved statistics, frozen."""
    norms = _vecnorms(env)
    if norms and len(states) < len(norms):
        raise RunError(f"{source} holds no observation-normaliser statistics for this run")
    for norm, state in zip(norms, states, strict=False):
        norm.load_state_dict(state)
        norm.freeze()


def make_env(run_dir: str | os.PathLike, render_mode: str | None = None, **make_kwargs: Any):
    """The gymnasium env a run trained on, as it trained on it: the same id, ``make_kwargs``,
    time limit (``env.max_episode_steps``) and frame skip; its observations are what
    :meth:`TrainedPolicy.act` takes (the normaliser is the policy's part). The TensorDict
    transforms a run added with ``env.transforms`` are not gymnasium wrappers and are not
    applied here (a ``ConfigWarning`` says so); :func:`evaluate` and ``rl-trainers eval`` run
    the app's env, with them.

    Args:
        run_dir: the run directory (or a checkpoint inside it).
        render_mode: ``"human"``, ``"rgb_array"``... (None: no rendering).
        **make_kwargs: more ``gymnasium.make`` arguments.
    """
    from rl_trainers.envs.libs.gym import GymFactory

    run, _ = find_run(run_dir)
    cfg = run_config(run)
    env_cfg = cfg.env
    if env_cfg.get("from_pixels"):
        if make_kwargs or render_mode not in (None, "rgb_array"):
            raise RunError(
                "make_env: a run trained from pixels renders its own frames "
                "(render_mode='rgb_array'); other render modes and make_kwargs do not apply"
            )
        return PixelRunEnv(cfg)
    if env_cfg.get("transforms"):
        import warnings

        from rl_trainers.errors import ConfigWarning

        names = [str(t.get("_target_", t)).rpartition(".")[2] for t in env_cfg.transforms]
        warnings.warn(
            ConfigWarning(
                f"make_env: the run's env.transforms ({', '.join(names)}) are TensorDict "
                "transforms, not applied to this gymnasium env; evaluate() and "
                "rl-trainers eval run the env with them"
            ),
            stacklevel=2,
        )
    extra = env_cfg.get("make_kwargs")
    kwargs = dict(OmegaConf.to_container(extra, resolve=True) if extra is not None else {})
    if env_cfg.get("max_episode_steps") is not None:
        kwargs["max_episode_steps"] = int(env_cfg.max_episode_steps)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    kwargs.update(make_kwargs)
    factory = GymFactory(
        str(env_cfg.env_name), frame_skip=int(env_cfg.frame_skip), make_kwargs=kwargs
    )
    return factory()


class PixelRunEnv(gymnasium.Env):
    """A pixel run's env as it trained: the app's env (rendered frames resized, made grey
    and stacked as the run's ``env`` node says), one sub-env, as a gymnasium env. Its
    observations are the frames the policy reads (``"pixels"``, float32 ``[C, H, W]`` in
    ``[0, 1]``), its actions those of the gymnasium env underneath (what
    :meth:`TrainedPolicy.act` returns), its rewards raw. ``render()`` returns the last
    full-size frame."""

    metadata = {"render_modes": ["rgb_array"]}
    render_mode = "rgb_array"

    def __init__(self, cfg: DictConfig) -> None:
        from gymnasium import spaces

        self._env = build_run_env(cfg, num_envs=1)
        spec = self._env.observation_spec["pixels"]
        self.observation_space = spaces.Box(0.0, 1.0, tuple(spec.shape[1:]), np.float32)
        self.action_space = self._env.base_env.single_action_space
        self._td = None

    def _encode(self, action: Any) -> torch.Tensor:
        from rl_trainers.envs.specs import OneHot

        spec = self._env.action_spec
        if isinstance(spec, OneHot):
            return spec.to_one_hot(torch.as_tensor(action).reshape(spec.shape[:-1]))
        return spec.encode(np.asarray(action)).reshape(spec.shape)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._env.set_seed(seed)
        self._td = self._env.reset()
        return self._td.get("pixels")[0].numpy(), {}

    def step(self, action: Any):
        from rl_trainers.envs.utils import step_mdp

        if self._td is None:
            raise RuntimeError("PixelRunEnv.step before reset")
        td = self._td.set("action", self._encode(action))
        out = self._env.step(td)
        nxt = out.get("next")
        obs = nxt.get("pixels")[0].numpy()
        reward = float(nxt.get("reward")[0])
        terminated = bool(nxt.get("terminated")[0])
        truncated = bool(nxt.get("truncated", torch.zeros(1, dtype=torch.bool))[0])
        self._td = step_mdp(out)
        return obs, reward, terminated, truncated, {}

    def render(self):
        frames = self._env.base_env.render()  # one per sub-env
        return frames[0] if isinstance(frames, (list, tuple)) else frames

    def close(self) -> None:
        self._env.close()


# ----------------------------------------------------------------------------- the policy


@dataclass
class TrainedPolicy:
    """A trained policy: :meth:`act` maps gymnasium observations to actions.

    Attributes:
        module: the policy module (a TensorDict module reading normalised observations,
            writing ``"action"``), as the run's evaluations act with it.
        normalizers: the frozen observation normalisers (``VecNorm``) applied before it.
        config: the run's config.
        run_dir: the run directory.
        checkpoint: the file the weights came from.
        frames: the frames the run had trained for at that checkpoint.
    """

    module: Any
    normalizers: list
    config: DictConfig
    run_dir: Path
    checkpoint: Path
    frames: int | None
    actor: torch.nn.Module
    action_spec: Any
    action_space: Any
    observation_key: str
    observation_shape: tuple[int, ...]
    observation_dtype: torch.dtype
    _convert: Any = field(default=None, repr=False)
    _join: Any = field(default=None, repr=False)

    @property
    def algorithm(self) -> str:
        return str(self.config.algorithm)

    @property
    def env_name(self) -> str:
        return str(self.config.env.env_name)

    def normalize(self, tensordict):
        """Apply the frozen observation normalisers to ``tensordict`` (in place)."""
        for norm in self.normalizers:
            norm._call(tensordict)
        return tensordict

    def act(self, observation: Any, deterministic: bool = True) -> Any:
        """The action for ``observation`` (one gymnasium observation, or a batch of them with
        a leading dimension): an int for a Discrete space (an array of ints for a batch),
        an array within the bounds for a Box space.

        Args:
            observation: what :func:`make_env`'s env returns.
            deterministic: act with the policy's mode (greedy for DQN); False samples
                (epsilon-greedy for DQN, with the epsilon of the checkpoint).
        """
        from tensordict import TensorDict

        from rl_trainers.envs.utils import ExplorationType, set_exploration_type
        from rl_trainers.modules.models import torch_kernels

        if self._join is not None:
            observation = self._join(observation)
        obs = torch.as_tensor(np.asarray(observation), dtype=self.observation_dtype)
        single = tuple(obs.shape) == self.observation_shape
        if single:
            obs = obs.unsqueeze(0)
        elif tuple(obs.shape[1:]) != self.observation_shape:
            raise ValueError(
                f"observation of shape {tuple(obs.shape)}: expected {self.observation_shape} "
                f"or (batch, *{self.observation_shape})"
            )
        td = TensorDict({self.observation_key: obs}, batch_size=obs.shape[:1])
        mode = ExplorationType.DETERMINISTIC if deterministic else ExplorationType.RANDOM
        # torch's own kernels: the actions of an exported copy (export_policy), bit for bit
        with torch.no_grad(), set_exploration_type(mode), torch_kernels(), plain_gemm():
            td = self.module(self.normalize(td))
        action = self._convert(td.get("action"))
        if single:
            action = action[0]
            return int(action) if np.ndim(action) == 0 else action
        return action

    __call__ = act

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = False,
    ) -> tuple[Any, Any]:
        """Stable-Baselines3's ``model.predict``: ``(action, state)``, the action as
        :meth:`act` gives it. ``state`` comes back unchanged and ``episode_start`` is
        ignored (the policies here keep no recurrent state). As in SB3, ``deterministic``
        defaults to False (sampling), where :meth:`act` defaults to True."""
        del episode_start
        return self.act(observation, deterministic=deterministic), state


class plain_gemm:  # noqa: N801 - a context manager
    """MKL's matrix products for every size (as an exported graph computes them)."""

    def __enter__(self) -> None:
        from rl_trainers.fast import gemm

        self.before, gemm.USE_ONEDNN = gemm.USE_ONEDNN, False

    def __exit__(self, *exc: Any) -> None:
        from rl_trainers.fast import gemm

        gemm.USE_ONEDNN = self.before


def _exploration_state_resized(module: torch.nn.Module, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with the exploration buffers that are per training env (gSDE's noise
    matrices, listed in a module's ``rank_local_buffers``) replaced by ``module``'s own
    where their shapes differ: a policy rebuilt for one env acts with its own noise, not
    with the noise of the run's eight envs. Weights are never replaced."""
    own = module.state_dict()
    state = dict(state)
    for prefix, sub in module.named_modules():
        for buffer in getattr(sub, "rank_local_buffers", ()):
            key = f"{prefix}.{buffer}" if prefix else buffer
            if key in state and key in own and tuple(state[key].shape) != tuple(own[key].shape):
                state[key] = own[key]
    return state


def _module_state(state: dict[str, Any], name: str):
    from rl_trainers.core.checkpoint import decode

    modules = state.get("modules") or {}
    return decode(modules[name]) if name in modules else None


def _env_state(state: dict[str, Any]) -> dict[str, Any] | None:
    """The observation statistics a checkpoint holds: the training env's (from the
    collector), else the evaluation env's; a best-policy file's evaluation env's."""
    from rl_trainers.core.checkpoint import decode

    if state.get("kind") == "best_policy":
        return decode(state.get("env"))
    collector = state.get("collector")
    if isinstance(collector, dict) and collector.get("env"):
        return decode(collector["env"])
    eval_env = (state.get("modules") or {}).get("eval_env")
    if isinstance(eval_env, dict):
        return decode(eval_env.get("env"))
    return None


def load_policy(
    run_dir_or_checkpoint: str | os.PathLike,
    which: str = "latest",
    checkpoint: str | os.PathLike | None = None,
    device: str | torch.device = "cpu",
) -> TrainedPolicy:
    """The trained policy of a run, rebuilt from its config and a checkpoint.

    Args:
        run_dir_or_checkpoint: the run directory (``outputs/ppo/CartPole-v1/<date>``), or a
            checkpoint file inside it.
        which: ``"latest"`` (the latest checkpoint) or ``"best"`` (``best_policy.pt``, kept
            by runs with periodic evaluation).
        checkpoint: load this checkpoint instead (it must be of the run's algorithm, env
            and networks).
        device: where the policy acts (checkpoints load on CPU first, wherever they were
            trained).

    Raises:
        RunError: not a run, no checkpoint, a checkpoint of another run.
    """
    from rl_trainers.algorithms import TRAINERS
    from rl_trainers.envs.libs.gym import _action_converter

    run, given = find_run(run_dir_or_checkpoint)
    cfg = run_config(run)
    if checkpoint is None and given is not None:
        checkpoint = given
    path = choose_checkpoint(run, which, checkpoint)
    state = _read_checkpoint(path)
    _check_belongs(cfg, state, path)
    trainer_class = TRAINERS.get(str(cfg.algorithm))
    if trainer_class is None or not hasattr(trainer_class, "build_loss"):
        raise RunError(f"algorithm {cfg.algorithm!r} has no policy loader")
    with open_dict(cfg):
        cfg.device = str(device)
        cfg.env.device = str(device)
    env = build_run_env(cfg, num_envs=1)
    try:
        loss = trainer_class.build_loss(cfg, env)
        loss_state = _module_state(state, "loss_module")
        if loss_state is None:
            raise RunError(f"{path} holds no policy weights (no 'loss_module')")
        try:
            loss.load_state_dict(_exploration_state_resized(loss, loss_state))
        except RuntimeError as err:
            lines = [line.strip() for line in str(err).splitlines() if line.strip()]
            raise RunError(
                f"{path} does not fit this run's networks ({'; '.join(lines[1:3] or lines)})"
            ) from None
        loss.to(device)
        module = trainer_class.eval_policy_of(cfg, loss, env)
        exploration = _module_state(state, "exploration")
        explorer = getattr(module, "explorer", None)
        if (
            exploration is not None
            and explorer is not None
            and hasattr(explorer, "load_state_dict")
        ):
            explorer.load_state_dict(exploration)
        load_normalizers(env, _saved_vecnorm_states(_env_state(state)), str(path))
        norms = _vecnorms(env)
        key = "pixels" if cfg.env.get("from_pixels") else "observation"
        obs_spec = env.observation_spec[key]
        space = env.base_env.single_action_space if hasattr(env, "base_env") else None
        convert = _action_converter(env.action_spec, space, batched=True)
        join = _observation_joiner(env) if key == "observation" else None
    finally:
        env.close()
    for norm in norms:
        norm.to(device)
    actor = loss.actor_network if hasattr(loss, "actor_network") else loss.value_network
    frames = state.get("frames")
    if frames is None:
        frames = (state.get("counters") or {}).get("collected_frames")
    return TrainedPolicy(
        module=module,
        normalizers=norms,
        config=cfg,
        run_dir=run,
        checkpoint=path,
        frames=None if frames is None else int(frames),
        actor=actor,
        action_spec=env.action_spec,
        action_space=space,
        observation_key=key,
        observation_shape=tuple(obs_spec.shape[1:]),
        observation_dtype=obs_spec.dtype,
        _convert=convert,
        _join=join,
    )


def _observation_joiner(env) -> Any:
    """For an env whose gymnasium observations are not the vector the policy reads, a
    function turning one of them (or a batch: a leading dimension) into that vector as the
    env does: a ``Dict`` or ``Tuple`` observation joined by the env's ``CatTensors`` (a
    vector given instead passes through), a ``Discrete`` one (an int) one-hot. None for any
    other env."""
    from tensordict import TensorDict

    from rl_trainers.envs import CatTensors
    from rl_trainers.envs.specs import OneHot

    base = getattr(env, "base_env", None)
    to_tensors = getattr(base, "_obs_conv", None)
    if to_tensors is None:
        return None
    if getattr(base, "_leaf_obs", True):
        if not isinstance(base.observation_spec.get("observation", None), OneHot):
            return None
        return lambda observation: to_tensors(observation)["observation"]
    joins = [
        t
        for t in getattr(env, "transform", ())
        if isinstance(t, CatTensors) and list(t.out_keys) == ["observation"]
    ]
    if not joins:
        return None
    join = joins[0]

    def joined(observation: Any) -> Any:
        if not isinstance(observation, Mapping | tuple):
            return observation
        return join._call(TensorDict(to_tensors(observation), batch_size=[])).get("observation")

    return joined


# ----------------------------------------------------------------------------- evaluation


@dataclass
class Evaluation:
    """Returns and lengths of evaluation episodes, with how they were played."""

    returns: list[float]
    lengths: list[int]
    seed: int
    deterministic: bool
    checkpoint: Path

    def summary(self) -> dict[str, Any]:
        r = [float(x) for x in self.returns]
        n = [float(x) for x in self.lengths]
        return {  # correctly rounded, as the run's summary.json
            "eval_return_mean": statistics.fmean(r),
            "eval_return_std": statistics.pstdev(r),
            "eval_length_mean": statistics.fmean(n),
            "eval_length_std": statistics.pstdev(n),
            "eval_episodes": len(self.returns),
            "seed": self.seed,
            "deterministic": self.deterministic,
            "checkpoint": str(self.checkpoint),
            "returns": [float(x) for x in self.returns],
            "lengths": [int(x) for x in self.lengths],
        }


def evaluate(
    policy: TrainedPolicy | str | os.PathLike,
    episodes: int | None = None,
    seed: int | None = None,
    deterministic: bool | None = None,
) -> Evaluation:
    """Play ``episodes`` episodes as the run's own evaluations do: the same env (its
    ``eval.episodes`` sub-envs by default), seeded with ``seed`` (default: the run's
    evaluation seed, ``seed + 10000``), the torch RNG seeded alike. With the defaults the
    returns are those of the run's final evaluation (``summary.json``) for the same
    checkpoint. It plays on the run's torch thread count and gives the caller's back.

    Args:
        policy: a :class:`TrainedPolicy`, or a run directory (its latest checkpoint).
        episodes: episodes to play (default ``eval.episodes`` of the run).
        seed: the evaluation seed.
        deterministic: act with the mode (default: the run's ``eval.deterministic``).
    """
    from rl_trainers.algorithms.base import evaluation_seed
    from rl_trainers.algorithms.build import evaluate_episodes, set_num_threads

    if not isinstance(policy, TrainedPolicy):
        policy = load_policy(policy)
    cfg = policy.config
    n = int(episodes if episodes is not None else cfg.eval.episodes)
    if n < 1:
        raise RunError(f"episodes={n}: at least 1")
    seed = evaluation_seed(cfg) if seed is None else int(seed)
    if deterministic is None:
        deterministic = bool(cfg.eval.deterministic)
    # the run's thread count: the same matrix kernels, so the same actions; the caller's
    # count is back when this returns
    threads = torch.get_num_threads()
    set_num_threads(cfg.trainer.num_threads)
    env = None
    try:
        env = build_run_env(cfg, num_envs=n, sync=False)
        for norm, src in zip(_vecnorms(env), policy.normalizers, strict=False):
            norm.load_state_dict(src.state_dict())
            norm.freeze()
        lengths: list[int] = []
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            env.set_seed(seed)
            returns = evaluate_episodes(
                env, policy.module, n, deterministic=deterministic, lengths=lengths
            )
    finally:
        if env is not None:
            env.close()
        torch.set_num_threads(threads)
    return Evaluation(returns, lengths, seed, deterministic, policy.checkpoint)
