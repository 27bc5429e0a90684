"""Adapters that let scripts written for other libraries run on rl_trainers.

The product (every other package of rl_trainers) never imports this package: import-linter's
``compat-is-an-adapter`` contract checks it. The alias modules at torchrl's import paths
(``rl_trainers.trainers.algorithms``, ``rl_trainers.trainers.helpers``...) re-export from
here and are the contract's only exceptions.
"""
