"""Train A2C with rl_trainers, as `rl-trainers a2c` does: `python sota-implementations/a2c_trainer/train.py --help`."""

from rl_trainers.app.cli import train_main

if __name__ == "__main__":
    train_main("a2c")
