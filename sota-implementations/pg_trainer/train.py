"""Train the vanilla policy gradient (REINFORCE) with rl_trainers: `python sota-implementations/pg_trainer/train.py --help`."""

import sys

import hydra

from rl_trainers import _lazy_dynamo

# before tensordict is imported: torch.compile's front end (~70 MiB) stays unloaded until
# something compiles
_lazy_dynamo.install()

from rl_trainers.trainers.algorithms.app import run, translate_torchrl_overrides, user_errors  # noqa: E402
from rl_trainers.trainers.algorithms.compose_errors import composition_errors  # noqa: E402


@hydra.main(config_path="../../configs", config_name="pg_trainer", version_base=None)
def main(cfg) -> float:
    with user_errors():
        return run(cfg)


if __name__ == "__main__":
    sys.argv = translate_torchrl_overrides(sys.argv)  # torchrl's override names
    with composition_errors():  # unknown fields, options or presets: one line, exit 2
        main()
