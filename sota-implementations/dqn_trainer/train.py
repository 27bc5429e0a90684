"""Train DQN with rl_trainers, as `rl-trainers dqn` does: `python sota-implementations/dqn_trainer/train.py --help`."""

from rl_trainers.app.cli import train_main

if __name__ == "__main__":
    train_main("dqn")
