"""Train DDPG with rl_trainers, as `rl-trainers ddpg` does: `python sota-implementations/ddpg_trainer/train.py --help`."""

from rl_trainers.app.cli import train_main

if __name__ == "__main__":
    train_main("ddpg")
