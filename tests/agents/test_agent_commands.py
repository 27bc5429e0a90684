"""rl-trainers eval / enjoy / export / results, as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import rl_trainers

from .conftest import REPO, cli, env_with_package, train

#: Loads an exported file with torch (or onnxruntime) alone: rl_trainers cannot be imported.
STANDALONE = """
import sys
sys.modules["rl_trainers"] = None  # importing it now fails
import numpy as np
path, fmt, obs_file, out_file = sys.argv[1:]
obs = np.load(obs_file)
if fmt == "onnx":
    import onnxruntime
    s = onnxruntime.InferenceSession(path)
    out = s.run(None, {s.get_inputs()[0].name: obs})[0]
else:
    import torch
    torch.set_num_threads(1)  # as the test's side: products round alike on one thread
    m = torch.export.load(path).module() if fmt == "exported" else torch.jit.load(path)
    out = m(torch.from_numpy(obs))  # outside torch.no_grad(): plain tensors all the same
    assert not out.requires_grad, out
    out = out.numpy()
np.save(out_file, out)
"""


def test_eval_writes_eval_json_and_reproduces_summary(runs):
    run = runs["td3_pendulum"]
    summary_before = (run / "summary.json").read_text()
    done = cli("rl_trainers.eval", str(run))
    assert done.returncode == 0, done.stderr
    assert "return" in done.stdout and "±" in done.stdout and "length" in done.stdout
    result = json.loads((run / "eval.json").read_text())
    assert result["eval_return_mean"] == json.loads(summary_before)["eval_return_mean"]
    assert (run / "summary.json").read_text() == summary_before
    other = cli("rl_trainers.eval", str(run), "--episodes", "1", "--seed", "5", "--stochastic")
    assert other.returncode == 0, other.stderr
    assert json.loads((run / "eval.json").read_text())["eval_episodes"] == 1


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("ppo_cartpole", "exported"),
        ("ppo_pendulum", "torchscript"),
        ("td3_pendulum", "exported"),
        ("sac_hopper", "exported"),
        ("sac_hopper", "torchscript"),
        ("dqn_cartpole", "torchscript"),
        ("ppo_pendulum", "onnx"),
        ("ppo_cartpole_pixels", "exported"),
    ],
)
def test_export_round_trip_without_the_package(runs, name, fmt, tmp_path, one_thread):
    if fmt == "onnx":
        pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
        pytest.importorskip("onnxscript", reason="onnxscript is not installed")
    out = tmp_path / f"policy.{fmt}"
    done = cli("rl_trainers.export", str(runs[name]), "--format", fmt, str(out))
    assert done.returncode == 0, done.stderr
    policy = rl_trainers.load_policy(runs[name])
    env = rl_trainers.make_env(runs[name])
    obs = np.stack([env.reset(seed=i)[0] for i in range(6)]).astype(np.float32)
    np.save(tmp_path / "obs.npy", obs)
    script = tmp_path / "standalone.py"
    script.write_text(STANDALONE)
    alone = subprocess.run(
        [
            sys.executable,
            "-I",
            str(script),
            str(out),
            fmt,
            str(tmp_path / "obs.npy"),
            str(tmp_path / "act.npy"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert alone.returncode == 0, alone.stderr
    got, expected = np.load(tmp_path / "act.npy"), policy.act(obs)
    if fmt == "onnx":
        np.testing.assert_allclose(got, expected, atol=1e-5)
    else:
        assert got.dtype == expected.dtype
        assert np.array_equal(got, expected)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("policy.pt2", "exported"), ("policy.ts", "torchscript"), ("policy.pt", "torchscript")],
)
def test_export_format_follows_the_extension(runs, tmp_path, name, fmt):
    import torch

    out = tmp_path / name
    done = cli("rl_trainers.export", str(runs["ppo_pendulum"]), str(out))
    assert done.returncode == 0, done.stderr
    assert f"wrote {out} ({fmt})" in done.stdout
    assert "Expect archive file" not in done.stderr
    module = torch.export.load(str(out)).module() if fmt == "exported" else torch.jit.load(str(out))
    policy = rl_trainers.load_policy(runs["ppo_pendulum"])
    env = rl_trainers.make_env(runs["ppo_pendulum"])
    obs = np.stack([env.reset(seed=i)[0] for i in range(3)]).astype(np.float32)
    actions = module(torch.from_numpy(obs))  # no torch.no_grad() around it
    assert not actions.requires_grad
    assert np.array_equal(actions.numpy(), policy.act(obs))


def test_export_onnx_from_the_extension(runs, tmp_path):
    pytest.importorskip("onnxscript", reason="onnxscript is not installed")
    onnx = pytest.importorskip("onnx", reason="onnx is not installed")
    out = tmp_path / "policy.onnx"
    done = cli("rl_trainers.export", str(runs["ppo_pendulum"]), str(out))
    assert done.returncode == 0, done.stderr
    assert f"wrote {out} (onnx)" in done.stdout
    onnx.checker.check_model(onnx.load(str(out)))


def test_export_policy_python_api(runs, tmp_path):
    """export_policy follows the extension as the command does; the policy's own parameters
    keep requiring grad; a format that contradicts the extension writes nothing."""
    import torch

    from rl_trainers.errors import RunError

    policy = rl_trainers.load_policy(runs["dqn_cartpole"])
    before = [p.requires_grad for p in policy.module.parameters()]
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        out = rl_trainers.export_policy(policy, tmp_path / "q.ts")
    assert not [w for w in shown if issubclass(w.category, torch.jit.TracerWarning)]
    assert [p.requires_grad for p in policy.module.parameters()] == before
    obs = np.zeros((2, *policy.observation_shape), dtype=np.float32)
    actions = torch.jit.load(str(out))(torch.from_numpy(obs))
    assert not actions.requires_grad and np.array_equal(actions.numpy(), policy.act(obs))
    with pytest.raises(RunError, match=r"format='exported' contradicts .*q\.onnx.*\.pt2"):
        rl_trainers.export_policy(policy, tmp_path / "q.onnx", format="exported")
    with pytest.raises(ValueError, match=r"q\.bin.*\.pt2.*\.ts.*\.onnx.*format="):
        rl_trainers.export_policy(policy, tmp_path / "q.bin")
    with pytest.raises(RunError, match="format='jit': one of exported, torchscript, onnx"):
        rl_trainers.export_policy(policy, tmp_path / "q.ts", format="jit")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.ts"]
    kept = rl_trainers.export_policy(policy, tmp_path / "q.bin", format="torchscript")
    assert np.array_equal(torch.jit.load(str(kept))(torch.from_numpy(obs)).numpy(), policy.act(obs))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["q.bin"], ["q.bin", "--format exported|torchscript|onnx", ".pt2", ".ts", ".onnx"]),
        (["q"], ["--format exported|torchscript|onnx", ".pt2", ".ts", ".onnx"]),
        (["q.onnx", "--format", "exported"], ["--format exported contradicts", "q.onnx", ".pt2"]),
        (["q.pt2", "--format", "torchscript"], ["--format torchscript", ".ts or .pt", "exported"]),
        (["q.ts", "--format", "onnx"], ["--format onnx contradicts", ".onnx", "torchscript"]),
    ],
)
def test_export_format_mistakes_are_one_line(runs, tmp_path, args, says):
    out = tmp_path / "out"
    argv = [str(out / a) if i == 0 else a for i, a in enumerate(args)]
    line = _error(cli("rl_trainers.export", str(runs["ppo_cartpole"]), *argv))
    for text in says:
        assert text in line, line
    assert not out.exists()  # nothing written, not even the folder


@pytest.mark.parametrize("name", ["b", "agent.png"])
def test_enjoy_video_needs_a_video_extension(runs, tmp_path, name):
    video = tmp_path / "videos" / name
    done = cli("rl_trainers.enjoy", str(runs["ppo_cartpole"]), "--video", str(video))
    line = _error(done)
    assert f"--video {video}" in line and ".mp4" in line and ".gif" in line
    assert "episode" not in done.stdout
    assert not video.parent.exists()


def test_enjoy_writes_a_gif(runs, tmp_path):
    video = tmp_path / "agent.gif"
    done = cli(
        "rl_trainers.enjoy", str(runs["ppo_cartpole"]), "--video", str(video), "--max-steps", "5"
    )
    assert done.returncode == 0, done.stderr
    assert video.read_bytes()[:6] in (b"GIF87a", b"GIF89a")


def test_enjoy_writes_a_video(runs, tmp_path):
    pytest.importorskip("imageio_ffmpeg", reason="imageio[ffmpeg] is not installed")
    video = tmp_path / "agent.mp4"
    done = cli("rl_trainers.enjoy", str(runs["ppo_cartpole"]), "--video", str(video))
    assert done.returncode == 0, done.stderr
    assert video.stat().st_size > 0
    assert "episode 0: return" in done.stdout


def _error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    return lines[0]


def test_errors_are_one_line(runs, tmp_path):
    assert "not a run directory" in _error(cli("rl_trainers.eval", str(tmp_path)))
    bare = tmp_path / "bare"
    shutil.copytree(runs["ppo_cartpole"] / ".hydra", bare / ".hydra")
    assert "has no checkpoint" in _error(cli("rl_trainers.eval", str(bare)))
    foreign = runs["td3_pendulum"] / "checkpoints" / "trainer.pt"
    line = _error(cli("rl_trainers.eval", str(runs["ppo_pendulum"]), "--checkpoint", str(foreign)))
    assert "does not belong to this run" in line and "algorithm='td3'" in line
    line = _error(cli("rl_trainers.eval", str(runs["ppo_pendulum"]), "--best"))
    assert "no best policy" in line


def test_commands_on_a_sweep_directory_name_its_runs(ppo_sweep):
    for args in (["rl_trainers.eval"], ["rl_trainers.export", "--format", "exported", "p.pt2"]):
        line = _error(cli(args[0], str(ppo_sweep), *args[1:]))
        assert "is not a run directory but holds 4" in line
        assert f"e.g. {ppo_sweep / '0'}" in line and "--group-by run" in line


def test_onnx_export_prints_only_what_it_wrote(ppo_sweep, tmp_path):
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    pytest.importorskip("onnxscript", reason="onnxscript is not installed")
    out = tmp_path / "policy.onnx"
    done = cli("rl_trainers.export", str(ppo_sweep / "0"), str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out} (onnx)")
    assert done.stderr == ""  # no exporter chatter (skipped torchvision operators...)


@pytest.mark.parametrize("option", ["--episodes", "--max-steps"])
def test_enjoy_refuses_nothing_to_play(ppo_sweep, option, tmp_path):
    video = tmp_path / "agent.gif"
    line = _error(
        cli("rl_trainers.enjoy", str(ppo_sweep / "0"), option, "0", "--video", str(video))
    )
    assert line == f"Error: {option} 0: at least 1"
    assert not video.exists()


def test_eval_refuses_no_episodes_before_loading(ppo_sweep):
    line = _error(cli("rl_trainers.eval", str(ppo_sweep / "0"), "--episodes", "0"))
    assert line == "Error: --episodes 0: at least 1"  # the only line: nothing was loaded


def test_eval_of_a_run_still_training_before_its_first_checkpoint(tmp_path):
    run = tmp_path / "run"
    training = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "sota-implementations" / "ppo_trainer" / "train.py"),
            "trainer.total_frames=10000000",
            "trainer.progress_bar=false",
            f"hydra.run.dir={run}",
        ],
        env=env_with_package(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not (run / ".hydra" / "config.yaml").is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        line = _error(cli("rl_trainers.eval", str(run)))
    finally:
        training.kill()
        training.wait()
    assert "has no checkpoint" in line and "still training" in line
    assert "trainer.save_trainer_interval" in line


@pytest.mark.parametrize(
    ("blocked", "args", "needs"),
    [
        ("imageio", ["rl_trainers.enjoy", "{run}", "--video", "{tmp}/a.mp4"], "imageio[ffmpeg]"),
        (
            "onnx",
            ["rl_trainers.export", "{run}", "--format", "onnx", "{tmp}/p.onnx"],
            "pip install 'rl_trainers[onnx]'",
        ),
    ],
)
def test_missing_optional_dependency(runs, tmp_path, blocked, args, needs):
    """The optional package made unimportable (sys.modules[name] = None) before the command."""
    argv = [a.format(run=runs["ppo_cartpole"], tmp=tmp_path) for a in args]
    code = (
        f"import sys; sys.modules[{blocked!r}] = None; import runpy; sys.argv = {argv!r}; "
        f"runpy.run_module({argv[0]!r}, run_name='__main__')"
    )
    from .conftest import env_with_package

    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env_with_package(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = _error(done)
    assert needs in line


@pytest.fixture(scope="module")
def ppo_sweep(tmp_path_factory):
    """A sweep of 2 seeds for each of 2 learning rates."""
    sweep = tmp_path_factory.mktemp("results") / "sweep"
    train(
        "ppo",
        [
            "seed=0,1",
            "optimizer.lr=0.001,0.0003",
            "trainer.total_frames=256",
            "collector.frames_per_batch=128",
            "env.num_envs=2",
            "trainer.num_epochs=1",
            "trainer.minibatch_size=128",
            "eval.episodes=2",
        ],
        sweep,
        multirun=True,
    )
    return sweep


def test_results_table_of_a_sweep(ppo_sweep):
    sweep = ppo_sweep
    done = cli("rl_trainers.results", str(sweep), "--format", "csv")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 3  # header + one row per learning rate, seeds pooled
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:]]
    assert sorted(r["group"] for r in rows) == ["optimizer.lr=0.0003", "optimizer.lr=0.001"]
    jobs = sorted(sweep.glob("*/summary.json"))
    assert len(jobs) == 4
    for row in rows:
        assert row["seeds"] == "2"
        # rliable's interquartile mean (the dev install has it) within its 95% interval
        low, iqm, high = (float(row[k]) for k in ("iqm_low", "iqm", "iqm_high"))
        assert low <= iqm <= high
        assert row["frames"] == "256"
        returns = [
            json.loads(job.read_text())["eval_return_mean"]
            for job in jobs
            if row["group"] in (job.parent / ".hydra" / "overrides.yaml").read_text()
        ]
        assert len(returns) == 2
        assert float(row["return_mean"]) == pytest.approx(statistics.mean(returns))
        assert float(row["return_std"]) == pytest.approx(statistics.stdev(returns))  # n - 1
    text = cli("rl_trainers.results", str(sweep))
    assert text.returncode == 0 and "±" in text.stdout
    assert "IQM [95% CI]" in text.stdout and "Warning" not in text.stderr
    markdown = cli("rl_trainers.results", str(sweep), "--format", "markdown")
    assert markdown.stdout.startswith("| group")
    # the table reads files only: torch, seconds to import, is not loaded
    assert not _imports_torch("results", str(sweep))


def _csv_rows(done: subprocess.CompletedProcess) -> list[dict]:
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.strip().splitlines()
    return [dict(zip(header.split(","), line.split(","), strict=True)) for line in lines]


def test_results_one_row_per_run_to_compare_seeds(ppo_sweep):
    rows = _csv_rows(
        cli("rl_trainers.results", str(ppo_sweep), "--group-by", "run", "--format", "csv")
    )
    jobs = sorted(ppo_sweep.glob("*/summary.json"))
    assert len(rows) == len(jobs) == 4
    for row in rows:
        job = ppo_sweep / row["group"].split("/")[-1] / "summary.json"  # <sweep>/<job>
        assert row["seeds"] == "1"
        assert float(row["return_mean"]) == json.loads(job.read_text())["eval_return_mean"]
        assert row["return_std"] == ""  # no spread from one run, not a spread of 0
    text = cli("rl_trainers.results", str(ppo_sweep), "--group-by", "run")
    assert text.returncode == 0
    assert not any("±" in row for row in text.stdout.splitlines()[1:])  # the header's only
    by_seed = _csv_rows(
        cli("rl_trainers.results", str(ppo_sweep), "--group-by", "seed", "--format", "csv")
    )
    assert [(r["group"], r["seeds"], r["runs"]) for r in by_seed] == [
        ("seed=0", "1", "2"),  # one seed, run at each learning rate
        ("seed=1", "1", "2"),
    ]
    line = _error(cli("rl_trainers.results", str(ppo_sweep), "--group-by", "sed"))
    assert "--group-by sed" in line and "no run has this config key" in line


#: Runs ``rl-trainers <args>`` in this interpreter and says whether torch was imported.
WITHOUT_TORCH = """
import sys
from rl_trainers.app.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit_:
    assert not exit_.code, exit_.code
print("torch imported" if "torch" in sys.modules else "no torch")
"""


def _imports_torch(*args: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TORCH, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] == "torch imported"


@pytest.mark.parametrize("command", ["eval", "enjoy", "export", "results"])
def test_help_answers_without_importing_torch(command):
    assert not _imports_torch(command, "--help")


@pytest.mark.parametrize("command", ["eval", "enjoy", "export", "results"])
def test_help_describes_every_argument(command):
    done = subprocess.run(
        [sys.executable, "-m", "rl_trainers", command, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "%%" not in text
    listed = text.split("positional arguments:", 1)[1]
    # argparse puts an argument's help on its line, or on the next one when the name is long;
    # an argument without help stands alone with nothing indented deeper below it
    lines = [line for line in listed.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if not line.startswith("  ") or line.startswith("   "):
            continue  # a section title or a help line
        name, _, help_text = line.strip().partition("  ")
        following = lines[i + 1] if i + 1 < len(lines) else ""
        described = help_text.strip() or following.startswith("   ")
        assert described, f"rl-trainers {command} --help: {name} has no description"


def test_rl_zoo_options_name_the_run_directory(runs, tmp_path):
    """rl-zoo's enjoy finds a run by --algo, --env and -f: the error names the newest run of
    that algorithm and env under the folder, and the command it names works."""
    older, newer = (
        tmp_path / "outputs" / "td3" / "Pendulum-v1" / day for day in ("2026-01-01", "2026-01-02")
    )
    for run_dir in (older, newer):
        shutil.copytree(runs["td3_pendulum"], run_dir)
        (run_dir / "eval.json").unlink(missing_ok=True)  # another test's evaluation of the run
    done = cli("rl_trainers.eval", "--algo", "td3", "--env", "Pendulum-v1", cwd=tmp_path)
    assert done.returncode == 2
    line = done.stderr.splitlines()[0]
    assert line.startswith("Error: rl-zoo's --algo, --env and -f name a run"), done.stderr
    named = "rl-trainers eval outputs/td3/Pendulum-v1/2026-01-02 (the newest of 2"
    assert named in line
    named_run = cli("rl_trainers.eval", "outputs/td3/Pendulum-v1/2026-01-02", cwd=tmp_path)
    assert named_run.returncode == 0, named_run.stderr
    assert (newer / "eval.json").is_file() and not (older / "eval.json").exists()

    zoo = ["--algo=td3", "--env", "Pendulum-v1", "-f", "logs"]
    elsewhere = cli("rl_trainers.export", *zoo, "p.pt2", cwd=tmp_path)
    assert elsewhere.returncode == 2
    assert "rl-trainers export RUN_DIR p.pt2;" in elsewhere.stderr
    assert "no run under logs/td3/Pendulum-v1 here" in elsewhere.stderr
    assert not (tmp_path / "p.pt2").exists()

    # rl-zoo enjoy's own options, as enjoy spells them
    zoo = ["--algo", "td3", "--env", "Pendulum-v1", "--exp-id", "1", "--load-best", "-n", "1000"]
    enjoy = cli("rl_trainers.enjoy", *zoo, "--no-render", cwd=tmp_path)
    assert enjoy.returncode == 2
    assert "rl-trainers enjoy outputs/td3/Pendulum-v1/2026-01-02 --best (the newest" in enjoy.stderr


def test_a_run_that_stopped_on_an_error_says_so(tmp_path):
    """A run directory whose launch stopped on a mistake (an env that does not exist) has
    no checkpoint: eval names the run's error, not a run still training."""
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "sota-implementations" / "ppo_trainer" / "train.py"),
            "env.env_name=NoSuchEnv-v0",
            f"hydra.run.dir={tmp_path / 'bad'}",
        ],
        env=env_with_package(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    line = _error(cli("rl_trainers.eval", str(tmp_path / "bad")))
    assert "has no checkpoint: the run stopped on an error before its first" in line
    assert "Unknown environment id 'NoSuchEnv-v0'" in line


def test_which_and_a_checkpoint_file_are_one_or_the_other(runs):
    from rl_trainers.errors import RunError

    run = runs["ppo_cartpole"]
    with pytest.raises(RunError, match="which='best' and a checkpoint file: give one"):
        rl_trainers.load_policy(run, which="best", checkpoint=run / "checkpoints" / "trainer.pt")


def test_results_count_the_training_time_of_every_launch(tmp_path):
    """A resumed run's summary.json holds this launch's times and the total over launches:
    the table takes the total."""
    import yaml

    from rl_trainers.agents.cli import results_rows

    for seed, (total, last) in enumerate([(30.0, 10.0), (50.0, 50.0)]):
        run = tmp_path / f"seed{seed}"
        (run / ".hydra").mkdir(parents=True)
        config = {"algorithm": "ppo", "seed": seed, "env": {"env_name": "CartPole-v1"}}
        (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
        summary = {"algorithm": "ppo", "env": "CartPole-v1", "frames": 100, "wall_time_s": last}
        summary |= {"eval_return_mean": 1.0, "train_time_s": last, "total_train_time_s": total}
        (run / "summary.json").write_text(json.dumps(summary))
    (row,) = results_rows([str(tmp_path)])
    assert row["seeds"] == 2 and row["train_time_s"] == 40.0


def _finished_run(run, algorithm: str, env: str, seed: int, frames: int, **config) -> None:
    """A run directory as training leaves it, with only what ``rl-trainers results`` reads."""
    import yaml

    (run / ".hydra").mkdir(parents=True)
    config |= {"algorithm": algorithm, "seed": seed, "env": {"env_name": env}}
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    summary = {"algorithm": algorithm, "env": env, "frames": frames, "eval_return_mean": 1.0}
    (run / "summary.json").write_text(json.dumps(summary))


def _text_rows(done: subprocess.CompletedProcess) -> list[dict]:
    """The rows of ``rl-trainers results``' text table, by its header's columns."""
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    starts = [header.index(name) for name in ("group", "algorithm", "env", "seeds", "return")]
    starts += [header.index("frames"), header.index("train time")]
    names = ["group", "algorithm", "env", "seeds", "return", "frames", "train time"]
    return [
        {n: line[a:b].strip() for n, a, b in zip(names, starts, [*starts[1:], None], strict=True)}
        for line in lines
    ]


def test_results_rows_pooling_algorithms_name_each_and_the_frames_range(tmp_path):
    _finished_run(tmp_path / "a", "ppo", "CartPole-v1", seed=0, frames=1000)
    _finished_run(tmp_path / "b", "sac", "Pendulum-v1", seed=1, frames=3000)
    (row,) = _text_rows(cli("rl_trainers.results", str(tmp_path), "--group-by", "none"))
    assert row["algorithm"] == "ppo, sac" and row["env"] == "CartPole-v1, Pendulum-v1"
    assert row["frames"] == "1000-3000"  # no run has the mean, 2000
    rows = _text_rows(cli("rl_trainers.results", str(tmp_path), "--group-by", "run"))
    assert [(r["algorithm"], r["frames"]) for r in rows] == [("ppo", "1000"), ("sac", "3000")]


def test_results_count_distinct_seeds_and_say_when_a_seed_ran_twice(tmp_path):
    """A rerun of seed 0 in another directory is a second run, not a second seed."""
    _finished_run(tmp_path / "straight", "ppo", "CartPole-v1", seed=0, frames=1000)
    _finished_run(tmp_path / "rerun", "ppo", "CartPole-v1", seed=0, frames=1000)
    (row,) = _text_rows(cli("rl_trainers.results", str(tmp_path)))
    assert row["seeds"] == "1 (2 runs)"
    _finished_run(tmp_path / "other", "ppo", "CartPole-v1", seed=1, frames=1000)
    (row,) = _text_rows(cli("rl_trainers.results", str(tmp_path)))
    assert row["seeds"] == "2 (3 runs)"
    (row,) = _csv_rows(cli("rl_trainers.results", str(tmp_path), "--format", "csv"))
    assert (row["seeds"], row["runs"]) == ("2", "3")


def test_rl_zoo_options_to_export_name_a_command_that_exports(runs, tmp_path):
    """export takes the file to write, which rl-zoo's command line lacks: the command the
    error names has one, and it exports as printed."""
    run_dir = tmp_path / "outputs" / "td3" / "Pendulum-v1" / "2026-01-01"
    shutil.copytree(runs["td3_pendulum"], run_dir)
    line = _error(cli("rl_trainers.export", "--algo", "td3", "--env", "Pendulum-v1", cwd=tmp_path))
    named = line.split("takes its directory: ", 1)[1].split(" (the newest")[0]
    assert named == "rl-trainers export outputs/td3/Pendulum-v1/2026-01-01 policy.pt2"
    done = cli("rl_trainers", *named.split()[1:], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "policy.pt2").is_file()
