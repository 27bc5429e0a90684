"""Train SAC with rl_trainers, as `rl-trainers sac` does: `python sota-implementations/sac_trainer/train.py --help`."""

from rl_trainers.app.cli import train_main

if __name__ == "__main__":
    train_main("sac")
