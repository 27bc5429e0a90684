"""A run's torch intra-op thread count: one by default (``trainer.num_threads=1``, and ``0``
means the same), as many as asked otherwise."""

from __future__ import annotations

import pytest

from rl_trainers.algorithms import build as build_steps

from .conftest import TINY, compose_config


def test_zero_means_one_thread_and_a_count_is_used_as_given(monkeypatch):
    picked = []
    monkeypatch.setattr(build_steps.torch, "set_num_threads", picked.append)
    assert [build_steps.set_num_threads(n) for n in (0, 1, 3)] == [1, 1, 3]
    assert picked == [1, 1, 3]


@pytest.mark.parametrize(
    ("algorithm", "overrides"),
    [(a, []) for a in sorted(TINY)]
    + [(a, [f"experiment={a}_halfcheetah"]) for a in ("ppo", "sac", "td3")],
)
def test_every_recipe_runs_on_one_thread_by_default(algorithm, overrides):
    assert compose_config(algorithm, overrides).trainer.num_threads == 1
