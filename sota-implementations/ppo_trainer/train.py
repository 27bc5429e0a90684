"""Train PPO with rl_trainers, as `rl-trainers ppo` does: `python sota-implementations/ppo_trainer/train.py --help`."""

from rl_trainers.app.cli import train_main

if __name__ == "__main__":
    train_main("ppo")
