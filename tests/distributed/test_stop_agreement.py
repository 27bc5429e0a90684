"""A stop requested on one rank after the ranks agreed to go on (a signal landing during a
checkpoint save) is taken by every rank after the next batch: no rank stops alone and
leaves the others waiting in a collective; and a rank's own copy of the signal, arriving
after that stop, does not kill it. Two ranks under torchrun (a plain Trainer, the app)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from .conftest import PPO, REPO


def _torchrun(script, args, pythonpath, timeout) -> subprocess.CompletedProcess:
    """``script`` with ``args`` on 2 ranks under torchrun, one thread each."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(map(str, pythonpath)),
    }
    return subprocess.run(
        [*launcher, str(script), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import torch
    from tensordict import TensorDict
    from torch import nn
    from rl_trainers.core.distributed import init_distributed
    from rl_trainers.core.loop import Trainer

    init_distributed()
    rank = int(os.environ["RANK"])

    class Collector:
        def __iter__(self):
            while True:
                yield TensorDict({"observation": torch.zeros(8, 2)}, batch_size=[8])

    trainer = Trainer(
        collector=Collector(),
        total_frames=10**6,
        frame_skip=1,
        loss_module=nn.Linear(2, 1),
        optim_steps_per_batch=0,
        progress_bar=False,
        save_trainer_file=os.path.join(sys.argv[1], "trainer.pt"),
    )
    save = trainer.save_trainer

    def save_then_a_late_request(*args, **kwargs):
        # rank 0 only, after the ranks decided to go on past batch 3
        if rank == 0 and trainer.iteration == 3:
            trainer.request_stop("late request")
        return save(*args, **kwargs)

    trainer.save_trainer = save_then_a_late_request
    trainer.train()
    # one file per rank: two ranks printing to one pipe can run their lines together
    with open(os.path.join(sys.argv[1], f"end_{rank}.json"), "w") as f:
        json.dump({"iteration": trainer.iteration, "interrupted": trainer.interrupted,
                   "frames": trainer.collected_frames}, f)
    """
)


def test_a_stop_requested_after_the_agreement_stops_every_rank_after_the_next_batch(tmp_path):
    script = tmp_path / "late_stop.py"
    script.write_text(SCRIPT)
    # a rank stopping alone would leave the other one waiting forever
    done = _torchrun(script, [str(tmp_path)], [REPO], timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    ends = [json.loads((tmp_path / f"end_{rank}.json").read_text()) for rank in (0, 1)]
    # every rank: 4 batches of 8 frames on each of the 2 ranks, interrupted with the reason
    assert ends == [{"iteration": 4, "interrupted": "late request", "frames": 64}] * 2


LATE_COPY = textwrap.dedent(
    """
    import os, signal, sys
    from app.conftest import compose_config
    from rl_trainers.app.run import run
    from rl_trainers.core.loop import Trainer

    rank = int(os.environ["RANK"])
    decide, train = Trainer._decide_stop, Trainer.train

    def decide_after_rank0s_copy(self):
        if rank == 0 and self.iteration == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return decide(self)

    def train_then_rank1s_copy(self):
        train(self)
        if rank == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    Trainer._decide_stop = decide_after_rank0s_copy
    Trainer.train = train_then_rank1s_copy
    run(compose_config("ppo", sys.argv[2:]), sys.argv[1])
    """
)


def test_a_forwarded_sigterm_reaching_a_rank_after_the_agreed_stop_does_not_kill_it(tmp_path):
    """torchrun forwards a SIGTERM to each rank in turn: rank 0's copy can stop both ranks
    (they agree after each batch) before rank 1's copy arrives. That late copy must not
    kill rank 1 while rank 0 waits for it to compare the parameters and exit."""
    script = tmp_path / "late_copy.py"
    script.write_text(LATE_COPY)
    overrides = [*PPO, "trainer.total_frames=100000", f"hydra.run.dir={tmp_path / 'run'}"]
    done = _torchrun(script, [str(tmp_path / "run"), *overrides], [REPO / "tests", REPO], 240)
    stopped = [line for line in done.stderr.splitlines() if line.startswith("Stopped by SIGTERM")]
    # rank 0 prints this line after comparing its parameters with rank 1's: rank 1 lived on
    assert len(stopped) == 1, done.stderr[-3000:]
    assert "parameters sha256" in done.stderr
