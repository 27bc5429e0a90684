"""Train SAC with rl_trainers: `python sota-implementations/sac_trainer/train.py --help`."""

import hydra

from rl_trainers.trainers.algorithms.app import run, user_errors


@hydra.main(config_path="../../configs", config_name="sac_trainer", version_base=None)
def main(cfg) -> float:
    with user_errors():
        return run(cfg)


if __name__ == "__main__":
    main()
