"""rl-zoo's command line in this app's terms.

An rl-zoo user types ``python train.py --algo sac --env Hopper-v5 -n 300000 --seed 1``;
here that is ``rl-trainers sac experiment=sac_halfcheetah env=hopper
trainer.total_frames=300000 seed=1``. :func:`option_overrides` gives the overrides one of
rl-zoo's options stands for, :func:`command_here` the whole command line: the ``Error:``
line of an argparse-style option names both, where Hydra printed its usage.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

#: rl-zoo's one-dash options, by their long name
SHORT_OPTIONS = {
    "n": "n-timesteps",
    "f": "log-folder",
    "i": "trained-agent",
    "tb": "tensorboard-log",
    "P": "progress",
    "params": "hyperparams",
    "conf": "conf-file",
    "optimize": "optimize-hyperparameters",
    "tags": "wandb-tags",
}

#: rl-zoo's Optuna options: a study here is a ``hparams_search`` recipe run with ``-m``
_STUDY_OPTIONS = (
    "optimize-hyperparameters",
    "optimize",  # argparse's abbreviation
    "n-trials",
    "max-total-trials",
    "n-jobs",
    "sampler",
    "pruner",
    "n-startup-trials",
    "n-evaluations",
    "storage",
    "study-name",
)


#: what an option's overrides leave unsaid, by rl-zoo's option name
NOTES = {
    "trained-agent": "a checkpoint of this app's runs, not an SB3 .zip",
    "save-replay-buffer": "checkpoints hold the replay buffer already",
    "log-interval": "counted in frames here",
    "conf-file": "the tuned settings are presets, listed by --help",
    **{name: "an Optuna study, docs/scaling.md" for name in _STUDY_OPTIONS},
}


def split_options(args: Sequence[str]) -> list[tuple[str, str, list[str]]]:
    """The argparse-style options of ``args``: (the option as typed, its long name without
    dashes, the words it takes). ``--name=value`` takes its value; ``--name a b`` takes the
    words up to the next option or Hydra override (``field=value``); a negative number is a
    value, not an option."""
    options: list[tuple[str, str, list[str]]] = []
    for arg in args:
        if arg.startswith("-") and not _is_number(arg):
            dashes = "--" if arg.startswith("--") else "-"
            name, eq, value = arg.removeprefix(dashes).partition("=")
            if dashes == "-":
                name = SHORT_OPTIONS.get(name, name)
            options.append((arg, name, [value] if eq else []))
        elif options and not _is_override(arg) and "=" not in options[-1][0]:
            options[-1][2].append(arg)
    return options


def option_overrides(algorithm: str, name: str, values: Sequence[str]) -> str | None:
    """The overrides (or what to do) that rl-zoo's option ``--<name> <values>`` stands for
    in ``algorithm``'s app (an option named after a field, ``--n-envs 4``, sets the field);
    ``""`` for an option with nothing to set here, None for an option with no counterpart."""
    from rl_trainers.configs.field_names import suggest_field

    value = values[0] if values else "<value>"
    if name == "algo":
        from .cli import algorithms

        if value in algorithms():
            return ""  # the algorithm is the command: command_here names it
        return f"no {value} here: the algorithms are {', '.join(algorithms())}"
    if name == "env":
        return _env_overrides(algorithm, value)
    if name == "tensorboard-log":
        return "logger=tensorboard"
    if name == "track":
        return "logger=wandb"
    if name == "wandb-project-name":
        return f"logger=wandb logger.project={value}"
    if name == "trained-agent":
        if value.endswith(".zip"):  # an SB3 model: not a checkpoint of this app
            return "trainer.resume_from=<run dir>/checkpoints/trainer_<frames>.pt"
        return f"trainer.resume_from={value}"
    if name == "eval-freq":
        return f"eval.interval={0 if _is_number(value) and float(value) < 0 else value}"
    if name == "log-folder":  # the app's layout under that folder, where eval --algo looks
        layout = "${algorithm}/${env.env_name}/${now:%Y-%m-%d_%H-%M-%S}"
        return f"'hydra.run.dir={value.rstrip('/')}/{layout}'"  # quoted: a shell expands $
    if name == "vec-env":
        return "env.vectorization=" + {"dummy": "sync", "subproc": "async"}.get(value, "sync|async")
    if name == "log-interval":
        return "trainer.log_interval=<frames>"
    if name == "progress":
        return "trainer.progress_bar=true"
    if name == "save-replay-buffer":
        return ""  # checkpoints hold the replay buffer
    if name == "env-kwargs":
        # one key at a time: a dict given whole would merge into an env option's own keys
        # (env=ant's), where a new key needs the '+'
        return " ".join(
            f"+env.make_kwargs.{key}={value}"
            for key, _, value in (v.partition(":") for v in values)
        )
    if name == "hyperparams":
        return " ".join(hyperparam_overrides(algorithm, values)[0])
    if name in _STUDY_OPTIONS:
        return "-m +hparams_search=<study>"
    if name == "conf-file":
        return "experiment=<preset>"
    if name == "n-timesteps" and _is_number(value):
        return f"trainer.total_frames={_int(value)}"
    field = {
        "eval-episodes": "eval.episodes",
        "save-freq": "trainer.save_trainer_interval",
        "num-threads": "trainer.num_threads",
        "seed": "seed",
        "device": "device",
    }.get(name) or suggest_field(algorithm, name.replace("-", "_"))  # --n-envs: env.num_envs
    return f"{field}={value}" if field else None


def hyperparam_overrides(algorithm: str, pairs: Sequence[str]) -> tuple[list[str], list[str]]:
    """rl-zoo's ``--hyperparams key:value ...`` (SB3's names, rl-zoo's ``lin_`` schedules):
    the overrides here, and the keys with no counterpart (``policy_kwargs.<key>`` for an
    entry of ``policy_kwargs``)."""
    given = dict(pair.partition(":")[::2] for pair in pairs)
    overrides: list[str] = []
    unmapped: list[str] = []
    for key, value in given.items():
        if key == "policy_kwargs":
            words, left = _policy_kwargs(algorithm, value)
            unmapped += [f"{key}.{name}" if name else key for name in left]
        else:
            words = _hyperparam(algorithm, key, value, given)
            if words is None:
                unmapped.append(key)
        overrides += [word for word in words or [] if word not in overrides]
    return overrides, unmapped


#: SB3 hyperparameters that are one field here, by algorithm kind (``on``: PPO, A2C, PG)
_ONE_FIELD = {
    "gamma": "loss.gamma",
    "gae_lambda": "loss.lmbda",
    "n_epochs": "trainer.num_epochs",
    "vf_coef": "loss.critic_coef",
    "max_grad_norm": "trainer.clip_norm",
    "normalize_advantage": "loss.normalize_advantage",
    "target_kl": "trainer.target_kl",
    "buffer_size": "replay_buffer.size",
    "tau": "trainer.tau",
    "policy_delay": "trainer.policy_delay",
    "target_policy_noise": "loss.policy_noise",
    "target_noise_clip": "loss.noise_clip",
    "noise_std": "trainer.noise_std",
    "exploration_fraction": "trainer.exploration_fraction",
    "exploration_initial_eps": "trainer.eps_init",
    "exploration_final_eps": "trainer.eps_end",
    "n_envs": "env.num_envs",
}


def _hyperparam(algorithm: str, key: str, value: str, given: dict[str, str]) -> list[str] | None:
    """The overrides for SB3's ``key: value`` (``given``: every pair of the option)."""
    on_policy = algorithm in ("ppo", "a2c", "pg")
    schedule, _, start = value.partition("lin_")
    linear = not schedule and bool(start)  # "lin_3e-4": from 3e-4 down to 0
    if key == "n_timesteps":
        return [f"trainer.total_frames={_int(value)}"]
    if key == "learning_rate":
        return (
            [f"optimizer.lr={start}", "lr_scheduler.kind=linear"]
            if linear
            else [f"optimizer.lr={value}"]
        )
    if key == "clip_range":
        if linear:
            return [f"loss.clip_epsilon={start}", "trainer.anneal_clip_epsilon=true"]
        return [f"loss.clip_epsilon={value}"]
    if key == "batch_size":
        return [f"{'trainer.minibatch_size' if on_policy else 'replay_buffer.batch_size'}={value}"]
    if key == "n_steps" and on_policy:  # per env in SB3; a batch holds every env's steps here
        n_envs = given.get("n_envs")
        frames = _int(value) * _int(n_envs) if n_envs else f"<{value} x env.num_envs>"
        return [f"collector.frames_per_batch={frames}"]
    if key == "ent_coef":
        if on_policy:
            return [f"loss.entropy_coef={value}"]
        if algorithm != "sac":  # SAC's temperature: TD3, DDPG and DQN have none
            return None
        if value.startswith("auto"):  # "auto", "auto_0.1": tuned from that start
            return [f"loss.alpha_init={value.partition('_')[2] or 1.0}"]
        return ["loss.fixed_alpha=true", f"loss.alpha_init={value}"]
    if key == "learning_starts" and not on_policy:  # random actions until then, as SB3
        return [f"collector.init_random_frames={value}", f"trainer.learning_starts={value}"]
    if key in ("train_freq", "gradient_steps") and not on_policy:
        frames = _int(given.get("train_freq", "1")) * _int(given.get("n_envs", "1"))
        steps = _int(given.get("gradient_steps", "1"))
        utd = 1.0 if steps < 0 else steps / frames  # -1: as many updates as frames
        return [f"collector.frames_per_batch={frames}", f"trainer.utd_ratio={utd:g}"]
    if key == "noise_type":
        noise = {"normal": "gaussian", "ornstein-uhlenbeck": "ou"}.get(value)
        return [f"trainer.exploration_noise={noise}"] if noise else None
    if key == "normalize":  # rl-zoo's VecNormalize: true, false, or its keywords
        if value.lower() == "false":
            return []
        kwargs = {} if value.lower() == "true" else _literal(value)
        if not isinstance(kwargs, dict) or not set(kwargs) <= set(_VEC_NORMALIZE):
            return None
        kwargs = {"norm_obs": True, "norm_reward": True, **kwargs}  # VecNormalize's defaults
        return [f"env.{_VEC_NORMALIZE[name]}={str(arg).lower()}" for name, arg in kwargs.items()]
    field = _ONE_FIELD.get(key)
    return [f"{field}={value}"] if field else None


#: SB3's ``VecNormalize`` keywords, by the ``env`` field each is
_VEC_NORMALIZE = {
    "norm_obs": "normalize_observations",
    "norm_reward": "normalize_rewards",
    "clip_obs": "obs_norm_clip",
    "clip_reward": "reward_norm_clip",
    "gamma": "reward_norm_gamma",
}


def _policy_kwargs(algorithm: str, value: str) -> tuple[list[str], list[str]]:
    """SB3's ``policy_kwargs`` (``dict(net_arch=[400, 300], activation_fn=nn.ReLU)``): the
    overrides here, and the keywords with no counterpart (``""``: a value not read)."""
    kwargs = _literal(value)
    if not isinstance(kwargs, dict):
        return [], [""]
    overrides: list[str] = []
    left: list[str] = []
    for name, arg in kwargs.items():
        words = _policy_kwarg(algorithm, name, arg)
        if words is None:
            left.append(name)
        else:
            overrides += words
    return overrides, left


#: SB3's ``net_arch`` networks, by the ``network`` entry each is
_NETWORKS = {"pi": "policy", "vf": "value", "qf": "value"}

#: torch's activation modules (``nn.ReLU``), by the ``network.*.activation`` each is
_ACTIVATIONS = {
    "Tanh": "tanh",
    "ReLU": "relu",
    "ELU": "elu",
    "GELU": "gelu",
    "SiLU": "silu",
    "LeakyReLU": "leaky_relu",
}


def _policy_kwarg(algorithm: str, name: str, arg: object) -> list[str] | None:
    """The overrides for ``policy_kwargs``' ``name=arg``; None for one with no counterpart."""
    if name == "net_arch":
        if isinstance(arg, list) and len(arg) == 1 and isinstance(arg[0], dict):
            arg = arg[0]  # older SB3's [dict(pi=[64, 64], vf=[64, 64])]
        if isinstance(arg, list):  # the same layers for each network
            arg = {"qf": arg} if algorithm == "dqn" else {"pi": arg, "vf": arg}
        if not isinstance(arg, dict) or not set(arg) <= set(_NETWORKS):
            return None
        if not all(_widths(layers) for layers in arg.values()):
            return None
        cells = {_NETWORKS[net]: ",".join(map(str, layers)) for net, layers in arg.items()}
        return [f"network.{net}.num_cells=[{layers}]" for net, layers in cells.items()]
    if name == "activation_fn" and str(arg).rpartition(".")[2] in _ACTIVATIONS:
        activation = _ACTIVATIONS[str(arg).rpartition(".")[2]]
        return [f"network.{net}.activation={activation}" for net in ("policy", "value")]
    if name == "ortho_init" and isinstance(arg, bool):
        return [f"network.orthogonal_init={str(arg).lower()}"]
    return None


def _widths(layers: object) -> bool:
    """Whether ``layers`` is a list of layer widths (``[400, 300]``)."""
    return isinstance(layers, list) and all(isinstance(width, int) for width in layers)


def _literal(text: str) -> object:
    """rl-zoo's Python value written in a string (``dict(net_arch=[64, 64])``,
    ``{'norm_obs': True}``, ``nn.ReLU`` as its dotted name); None where it is not one."""

    def value(node: ast.expr) -> object:
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
            return {kw.arg: value(kw.value) for kw in node.keywords}
        if isinstance(node, ast.List):
            return [value(element) for element in node.elts]
        if isinstance(node, ast.Attribute | ast.Name):
            return ast.unparse(node)
        return ast.literal_eval(node)

    try:
        return value(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, TypeError):
        return None


def _int(word: str) -> int:
    """rl-zoo's counts, written ``1e6`` or ``1000000``, as the integer fields take them."""
    return int(float(word))


def command_here(algorithm: str, args: Sequence[str], command: str) -> str | None:
    """The command line that runs what ``args`` (rl-zoo's options, maybe with overrides)
    asks of rl-zoo, in ``algorithm``'s app started by ``command``, leaving out what has no
    counterpart here (:func:`without_counterpart`); None when ``--algo`` names no algorithm
    here. ``--algo`` names the app: the command of ``command``'s form for that algorithm."""
    from .cli import algorithms

    options = split_options(args)
    algo = next((values[0] for _, name, values in options if name == "algo" and values), None)
    if algo is not None and algo != algorithm:
        if algo not in algorithms():
            return None
        command = command.replace(f"{algorithm}_trainer", f"{algo}_trainer")
        if command.endswith(f" {algorithm}"):
            command = command.removesuffix(algorithm) + algo
        algorithm = algo
    words = [command]
    for _, name, values in options:
        overrides = option_overrides(algorithm, name, values) or ""
        words += [word for word in overrides.split(" ") if word and word not in words]
    words += [arg for arg in args if _is_override(arg) and not arg.startswith("-")]
    return " ".join(words)


def rl_zoo_hint(algorithm: str, args: Sequence[str], command: str, said: str = "") -> str:
    """For an ``Error:`` line on rl-zoo's options in ``args``: ``; rl-zoo's command line
    here: <the command>`` (unless it is ``command said``, which the line names already),
    then ``; no counterpart here: <what that command leaves out>``."""
    hint = ""
    whole = command_here(algorithm, args, command)
    if whole is not None and whole != " ".join(filter(None, [command, said])):
        hint += f"; rl-zoo's command line here: {whole}"
    missing = without_counterpart(algorithm, args)
    if missing:
        hint += f"; no counterpart here: {', '.join(missing)}"
    return hint


def without_counterpart(algorithm: str, args: Sequence[str]) -> list[str]:
    """The options of ``args`` (and ``--hyperparams`` keys) that have no counterpart here."""
    missing = []
    for arg, name, values in split_options(args):
        if option_overrides(algorithm, name, values) is None:
            missing.append(arg.partition("=")[0])
        elif name == "hyperparams":
            missing += hyperparam_overrides(algorithm, values)[1]
    return missing


def _env_overrides(algorithm: str, env_id: str) -> str:
    """rl-zoo's ``--env <id>`` picks the env's tuned settings: the algorithm's MuJoCo preset
    for a MuJoCo env when it has one, else the env option (or ``env.env_name``)."""
    from .help_page import group_options
    from .mujoco_presets import (
        env_option_id,
        env_option_of,
        env_override,
        is_mujoco,
        mujoco_preset,
        preset_command,
    )

    option = env_option_of(env_id) or (env_id if env_option_id(env_id) else None)
    env_name = env_option_id(option) or env_id
    preset = mujoco_preset(algorithm)
    if is_mujoco(env_name) and preset in group_options(algorithm).get("experiment", []):
        return preset_command(preset, option, env_name)
    return env_override(env_id)


def _is_override(word: str) -> bool:
    """Whether ``word`` is a Hydra override (``field=value``), not one of rl-zoo's
    ``key:value`` words holding an ``=`` (``policy_kwargs:dict(net_arch=[64, 64])``)."""
    key, eq, _ = word.partition("=")
    return bool(eq) and ":" not in key


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True
