"""With ``rl_trainers._lazy_dynamo.install()`` (the Hydra app's opt-in, made by every
``train.py``) torch._dynamo stays unloaded until something compiles, and a later import sets
up what an eager import would have.

Each case runs in a fresh interpreter: whether torch._dynamo is loaded is process state.
"""

from __future__ import annotations

import json

_INSTALL = "from rl_trainers import _lazy_dynamo; _lazy_dynamo.install()"

# what torch._dynamo knows about tensordict and torch.optim once it is loaded
_FINGERPRINT = """
import json, sys, torch
import torch._dynamo
import tensordict, tensordict.nn
from torch._dynamo import trace_rules
allowed = set()
constant = set()
for name, module in list(sys.modules.items()):
    if not name.startswith("tensordict") or module is None:
        continue
    for attr, value in list(vars(module).items()):
        if id(value) in trace_rules._allowed_callable_ids:
            allowed.add(f"{name}.{attr}")
        if getattr(value, "_dynamo_marked_constant", False):
            constant.add(f"{name}.{attr}")
p = torch.nn.Parameter(torch.zeros(2))
opt = torch.optim.Adam([p], fused=True)
opt.zero_grad()
opt.load_state_dict(opt.state_dict())
disabled = sorted(
    name
    for name, method in vars(torch.optim.Optimizer).items()
    if getattr(getattr(method, "__wrapped__", None), "__dynamo_disable", None) is not None
    and getattr(method.__wrapped__.__dynamo_disable, "_torchdynamo_disable", False)
)
print(json.dumps({"allowed": sorted(allowed), "constant": sorted(constant), "disabled": disabled}))
"""


def test_eager_training_and_checkpoints_do_not_load_dynamo(fresh_python, tmp_path) -> None:
    """A SAC run (optimiser built, first and later steps, checkpoint saved and resumed) and
    a PPO run through their Hydra recipes, without torch._dynamo."""
    code = f"""
import sys, runpy
def run(algo, *overrides):
    sys.argv = ["train.py", "trainer.progress_bar=false", "eval.episodes=1", *overrides]
    try:
        runpy.run_path(f"sota-implementations/{{algo}}_trainer/train.py", run_name="__main__")
    except SystemExit as exit:
        assert not exit.code, exit.code
out = {str(tmp_path)!r}
run("sac", "trainer.total_frames=300", "trainer.save_trainer_interval=200",
    f"hydra.run.dir={{out}}/sac")
run("sac", "trainer.total_frames=400", "trainer.resume=true", f"hydra.run.dir={{out}}/sac")
run("ppo", "trainer.total_frames=512", f"hydra.run.dir={{out}}/ppo")
print("torch._dynamo" in sys.modules)
"""
    assert fresh_python(code) == "False"


def test_a_later_import_sets_up_what_an_eager_import_does(fresh_python) -> None:
    eager = json.loads(fresh_python("import torch._dynamo, rl_trainers" + _FINGERPRINT))
    deferred = json.loads(fresh_python(_INSTALL + _FINGERPRINT))
    assert eager["allowed"] and eager["constant"] and "zero_grad" in eager["disabled"]
    assert deferred == eager


def test_compiling_after_the_deferral_works(fresh_python) -> None:
    code = """
import sys, torch
from rl_trainers import _lazy_dynamo
_lazy_dynamo.install()
from tensordict import TensorDict
assert "torch._dynamo" not in sys.modules
net = torch.nn.Linear(3, 2)
opt = torch.optim.Adam(net.parameters(), fused=True)

@torch.compile(backend="eager")
def loss_of(td):
    return net(td["x"]).pow(2).mean()

td = TensorDict({"x": torch.ones(4, 3)}, batch_size=[4])
loss_of(td).backward()
opt.step()
opt.zero_grad()
print(round(float(loss_of(td)), 6) == round(float(net(td["x"]).pow(2).mean()), 6))
"""
    assert fresh_python(code) == "True"
