"""Train PG with rl_trainers, as `rl-trainers pg` does: `python sota-implementations/pg_trainer/train.py --help`."""

from rl_trainers.app.cli import train_main

if __name__ == "__main__":
    train_main("pg")
