"""``torchrl.objectives.value.functional`` names: the estimators on plain tensors."""

from rl_trainers.objectives.value import (
    generalized_advantage_estimate,
    reward2go,
    td0_return_estimate,
    td_lambda_return_estimate,
    vec_td_lambda_return_estimate,
    vtrace_advantage_estimate,
)

__all__ = [
    "generalized_advantage_estimate",
    "td_lambda_return_estimate",
    "vec_td_lambda_return_estimate",
    "td0_return_estimate",
    "vtrace_advantage_estimate",
    "reward2go",
]
