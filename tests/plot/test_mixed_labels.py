"""A folder of mixed runs: each curve is labelled by the config values that tell its group
from the others, and the legend sits below the axes, off the data."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
import yaml

from rl_trainers.plot import main
from rl_trainers.plot.cli import draw
from rl_trainers.plot.curves import aggregate, group_runs
from rl_trainers.plot.runs import find_runs

#: (algorithm, env, lr, batch size) of each group; two seeds each.
GROUPS = [
    ("ppo", "CartPole-v1", 3e-4, 64),
    ("ppo", "CartPole-v1", 1e-3, 64),
    ("ppo", "Pendulum-v1", 3e-4, 64),
    ("sac", "Pendulum-v1", 3e-4, 256),
    ("sac", "Pendulum-v1", 3e-4, 128),
    ("sac", "Pendulum-v1", 1e-3, 256),
]


def _config(algorithm: str, env: str, lr: float, batch: int, seed: int) -> dict:
    """What a saved config looks like: many keys, most alike, some only one algorithm has."""
    cfg = {
        "algorithm": algorithm,
        "seed": seed,
        "env": {"env_name": env, "num_envs": 1},
        "optimizer": {"lr": lr, "eps": 1e-8},
        "collector": {"frames_per_batch": 64 if algorithm == "ppo" else 1},
        "trainer": {"total_frames": 256, "num_threads": seed},
        "logger": {"exp_name": f"run{seed}"},
    }
    if algorithm == "ppo":
        cfg["trainer"].update(num_epochs=4, minibatch_size=batch)
    else:
        cfg["replay_buffer"] = {"batch_size": batch, "size": 1000}
    return cfg


@pytest.fixture
def mixed(tmp_path) -> Path:
    root = tmp_path / "runs"
    for g, group in enumerate(GROUPS):
        for seed in (0, 1):
            run = root / f"{g}_{seed}"
            (run / ".hydra").mkdir(parents=True)
            (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(_config(*group, seed)))
            (run / ".hydra" / "overrides.yaml").write_text("[]\n")
            scalars = run / "csv_logs" / "run" / "scalars" / "eval"
            scalars.mkdir(parents=True)
            rows = [f"{step},{g * 10 + seed + step / 64}" for step in (64, 128, 192, 256)]
            (scalars / "return_mean.csv").write_text("\n".join(rows) + "\n")
    return root


EXPECTED = [
    "algorithm=ppo, env.env_name=CartPole-v1, optimizer.lr=0.0003",
    "algorithm=ppo, env.env_name=CartPole-v1, optimizer.lr=0.001",
    "algorithm=ppo, env.env_name=Pendulum-v1, optimizer.lr=0.0003",
    "algorithm=sac, env.env_name=Pendulum-v1, optimizer.lr=0.0003, replay_buffer.batch_size=256",
    "algorithm=sac, env.env_name=Pendulum-v1, optimizer.lr=0.0003, replay_buffer.batch_size=128",
    "algorithm=sac, env.env_name=Pendulum-v1, optimizer.lr=0.001, replay_buffer.batch_size=256",
]


def test_labels_name_what_differs_between_groups(mixed):
    groups = group_runs(find_runs([mixed]))
    assert [g.label for g in groups] == EXPECTED
    assert all(len(g.runs) == 2 for g in groups)


def test_the_csv_output_carries_the_labels(mixed, tmp_path, capsys):
    out = tmp_path / "curves.csv"
    with pytest.raises(SystemExit) as done:
        main([str(mixed), "--out", str(tmp_path / "c.png"), "--csv", str(out)])
    assert done.value.code == 0, capsys.readouterr().err
    with open(out, newline="") as f:
        labels = list(dict.fromkeys(row["group"] for row in csv.DictReader(f)))
    assert labels == EXPECTED


def test_the_legend_is_below_the_axes(mixed, tmp_path):
    groups = group_runs(find_runs([mixed]))
    curves = [aggregate(g.label, [r.series()["eval/return_mean"] for r in g.runs]) for g in groups]
    fig = draw(curves, "return", tmp_path / "c.png", "std", "mixed runs")
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == EXPECTED
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # lays the figure out as saved
    renderer = canvas.get_renderer()
    legend_box = legend.get_window_extent(renderer)
    axes_box = fig.axes[0].get_tightbbox(renderer)
    assert legend_box.y1 <= axes_box.y0 + 1  # entirely below the axes and their labels
    assert not fig.axes[0].get_legend()


def _saved_run(root: Path, name: str, config: dict, env_option: str) -> None:
    """A run directory as the app leaves it: config, overrides, Hydra's choices, a CSV."""
    hydra = root / name / ".hydra"
    hydra.mkdir(parents=True)
    (hydra / "config.yaml").write_text(yaml.safe_dump(config))
    (hydra / "overrides.yaml").write_text("[]\n")
    choices = {"hydra": {"runtime": {"choices": {"env": env_option, "logger": "csv"}}}}
    (hydra / "hydra.yaml").write_text(yaml.safe_dump(choices))
    scalars = root / name / "logs" / "exp" / "scalars" / "eval"
    scalars.mkdir(parents=True)
    (scalars / "return_mean.csv").write_text("64,1.0\n128,2.0\n")


def _td3(seed: int, module: str, **trainer) -> dict:
    return {
        "algorithm": "td3",
        "seed": seed,
        "env": {"_target_": f"{module}.make_env", "env_name": "HalfCheetah-v5"},
        "loss": {"_target_": f"{module}.make_td3_loss", "gamma": 0.99},
        "trainer": {"total_frames": 300000, **trainer},
    }


def test_runs_saved_by_another_version_of_the_code_are_seeds_of_one_group(tmp_path):
    """The same settings, saved before the builders moved to another module and before a
    field (None by default) existed: one group of three seeds, not two groups."""
    _saved_run(tmp_path, "seed0", _td3(0, "rl_trainers.trainers.helpers"), "halfcheetah")
    for seed in (1, 2):
        config = _td3(seed, "rl_trainers.algorithms.components", new_field=None)
        _saved_run(tmp_path, f"seed{seed}", config, "halfcheetah")
    (group,) = group_runs(find_runs([tmp_path]))
    assert [r.path.name for r in group.runs] == ["seed0", "seed1", "seed2"]
    assert group.label == "TD3 HalfCheetah-v5"


def test_groups_whose_labels_would_coincide_are_told_apart_by_directory(tmp_path):
    """Two env builders under the same env option (a user's own ``_target_``): two groups,
    and their labels differ."""
    _saved_run(tmp_path, "ours", _td3(0, "rl_trainers.algorithms.components"), "halfcheetah")
    theirs = _td3(0, "rl_trainers.algorithms.components")
    theirs["env"]["_target_"] = "my_project.envs.make_noisy_env"
    _saved_run(tmp_path, "theirs", theirs, "halfcheetah")
    labels = [g.label for g in group_runs(find_runs([tmp_path]))]
    assert len(labels) == 2 and len(set(labels)) == 2, labels
    assert all(label.startswith("env=halfcheetah") for label in labels), labels


def test_labels_leave_out_the_overrides_grouping_ignores(tmp_path, capsys):
    """Runs that differ in a progress bar, a resume or a logger are seeds of one group: no
    label, in the plot's legend or in ``rl-trainers results``, names those overrides."""
    from rl_trainers.agents.cli import results_main

    runs = {  # directory: (learning rate, seed, the overrides typed)
        "a": (1e-3, 0, ["optimizer.lr=1e-3", "trainer.progress_bar=false"]),
        "b": (1e-3, 1, ["optimizer.lr=1e-3", "trainer.resume=true", "seed=1"]),
        "c": (3e-4, 0, ["optimizer.lr=3e-4", "logger=tensorboard"]),
    }
    for name, (lr, seed, overrides) in runs.items():
        run = tmp_path / name
        (run / ".hydra").mkdir(parents=True)
        config = _config("ppo", "CartPole-v1", lr, 64, seed)
        (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
        (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
        (run / "summary.json").write_text('{"eval_return_mean": 1.0, "frames": 256}')
    expected = ["optimizer.lr=1e-3", "optimizer.lr=3e-4"]
    assert [g.label for g in group_runs(find_runs([tmp_path]))] == expected
    assert results_main([str(tmp_path), "--format", "csv"]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert [row["group"] for row in rows] == expected
    shutil.rmtree(tmp_path / "b")  # each group's runs alike: the labels still leave them out
    assert [g.label for g in group_runs(find_runs([tmp_path]))] == expected
