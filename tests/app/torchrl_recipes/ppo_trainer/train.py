import hydra
from rl_trainers.trainers.algorithms.configs import PPOTrainerConfig  # noqa: F401


@hydra.main(config_path="config", config_name="config", version_base="1.3")
def main(cfg):
    trainer = hydra.utils.instantiate(cfg.trainer)
    trainer.train()


if __name__ == "__main__":
    main()
