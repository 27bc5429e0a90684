"""Train TD3 with rl_trainers, as `rl-trainers td3` does: `python sota-implementations/td3_trainer/train.py --help`."""

from rl_trainers.app.cli import train_main

if __name__ == "__main__":
    train_main("td3")
