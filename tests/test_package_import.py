"""``import rl_trainers`` changes nothing in torch or in the import system.

It runs in a fresh interpreter that records, before and after the import, the import
system's hooks and the torch attributes that ``rl_trainers._lazy_dynamo.install()`` (the
Hydra app's opt-in) replaces, and which heavy modules got loaded.
"""

from __future__ import annotations

import json

_PROBE = """
import json, sys
import torch, torch.compiler, torch.optim

def state():
    optimizer_methods = {
        name: [id(getattr(value, "__wrapped__", value)),
               sorted(getattr(getattr(value, "__wrapped__", None), "__dict__", {}))]
        for name, value in vars(torch.optim.Optimizer).items() if callable(value)
    }
    return {
        "meta_path": [repr(type(f)) for f in sys.meta_path],
        "meta_path_ids": [id(f) for f in sys.meta_path],
        "path_hooks": [repr(h) for h in sys.path_hooks],
        "allow_in_graph": id(torch.compiler.allow_in_graph),
        "assume_constant_result": id(torch.compiler.assume_constant_result),
        "optimizer": optimizer_methods,
    }

before = state()
import rl_trainers
after = state()
loaded = [m for m in ("tensordict", "omegaconf", "hydra", "torch._dynamo") if m in sys.modules]
print(json.dumps({"before": before, "after": after, "loaded": loaded}))
"""


def test_import_rl_trainers_changes_nothing_in_torch_or_the_import_system(fresh_python):
    result = json.loads(fresh_python(_PROBE))
    assert result["after"] == result["before"]
    assert result["loaded"] == []


def test_the_app_opt_in_is_what_changes_them(fresh_python):
    """The probe sees the opt-in's changes (so the test above would catch them)."""
    probe = _PROBE.replace(
        "import rl_trainers\n",
        "import rl_trainers\nfrom rl_trainers import _lazy_dynamo\n_lazy_dynamo.install()\n",
    )
    result = json.loads(fresh_python(probe))
    before, after = result["before"], result["after"]
    assert after["meta_path"] != before["meta_path"]
    assert after["optimizer"] != before["optimizer"]
    assert "torch._dynamo" not in result["loaded"]


ENTRY_MODULES = [
    "rl_trainers.algorithms",
    "rl_trainers.trainers.algorithms",
    "rl_trainers.trainers",
    "rl_trainers.trainers.helpers",
    "rl_trainers.compat.torchrl.trainers",
    "rl_trainers.agents",
    "rl_trainers.app",
    "rl_trainers.app.run",
]


def test_each_entry_module_imports_first_in_a_fresh_interpreter(fresh_python):
    """Whichever of the packages a user imports first works (no import cycle that only a
    particular order of imports hides)."""
    for module in ENTRY_MODULES:
        assert fresh_python(f"import {module}\nprint('ok')") == "ok", module
