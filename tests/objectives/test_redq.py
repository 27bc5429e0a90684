"""REDQLoss: each term against its formula (random target subset, ensemble-mean actor),
gradient routing, torchrl's signature and outputs, a short Pendulum run."""

import math

import pytest
import torch
from _loss_helpers import (
    ACT_DIM,
    StubActor,
    assert_finite_history,
    batch,
    critic_q,
    qvalue,
    stub_loss,
    train_on_pendulum,
    trained_parts,
)

from rl_trainers.objectives import REDQLoss, SoftUpdate
from rl_trainers.objectives import redq as redq_module


def _loss(**kwargs):
    return stub_loss(REDQLoss, **kwargs)


def test_terms_match_their_formulas():
    actor, loss = _loss(num_qvalue_nets=5, sub_sample_len=3)
    td = batch()
    td["next", "terminated"][1] = True
    torch.manual_seed(11)
    out = loss(td)
    torch.manual_seed(11)  # the subset is the loss's only random draw (the stub actor has none)
    subset = torch.randperm(5)[:3].sort().values
    alpha = 0.5
    with torch.no_grad():
        obs, nobs = td["observation"], td["next", "observation"]
        a_pi, lp = actor.sample(obs)
        q_pi = critic_q(loss.qvalue_network_params, obs, a_pi)  # [5, B]
        a_next, lp_next = actor.sample(nobs)
        q_next = critic_q(loss.target_qvalue_network_params, nobs, a_next)[subset]
        v_next = q_next.min(0).values - alpha * lp_next
        not_term = (~td["next", "terminated"]).float().squeeze(-1)
        y = td["next", "reward"].squeeze(-1) + 0.9 * not_term * v_next
        q = critic_q(loss.qvalue_network_params, obs, td["action"])
    torch.testing.assert_close(out["loss_actor"], (alpha * lp - q_pi.mean(0)).mean())
    torch.testing.assert_close(out["loss_qvalue"], (q - y).pow(2).mean())
    both = torch.stack([lp, lp_next])
    torch.testing.assert_close(out["loss_alpha"], -(alpha * (both - ACT_DIM)).mean())
    torch.testing.assert_close(out["entropy"], -both.mean())
    torch.testing.assert_close(out["target_value"], y.mean())
    torch.testing.assert_close(out["next.state_value"], v_next.mean())
    torch.testing.assert_close(out["state_action_value_actor"], q_pi.mean())
    torch.testing.assert_close(out["action_log_prob_actor"], lp.mean())
    torch.testing.assert_close(td["td_error"], (q - y).pow(2).max(0).values)
    assert sorted(out.keys()) == sorted(loss.out_keys)


def test_target_subset_changes_between_batches_and_is_a_min_over_it(monkeypatch):
    _, loss = _loss(num_qvalue_nets=4, sub_sample_len=2)
    draws = []
    original = loss._subset

    def record():
        idx = original()
        draws.append(tuple(idx.tolist()))
        return idx

    monkeypatch.setattr(loss, "_subset", record)
    torch.manual_seed(0)
    td = batch()
    for _ in range(12):
        loss(td.clone())
    assert all(len(d) == 2 and len(set(d)) == 2 for d in draws)
    assert len(set(draws)) > 1
    # the full ensemble as "subset" gives a smaller (more pessimistic) target than one critic
    monkeypatch.setattr(loss, "_subset", lambda: torch.arange(4))
    low = loss(td.clone())["target_value"]
    monkeypatch.setattr(loss, "_subset", lambda: torch.tensor([0]))
    assert loss(td.clone())["target_value"] >= low


@pytest.mark.parametrize(
    ("term", "trained"),
    [
        ("loss_actor", {"actor"}),
        ("loss_qvalue", {"critics"}),
        ("loss_alpha", {"log_alpha"}),
    ],
)
def test_each_term_trains_only_its_parameters(term, trained):
    actor, loss = _loss()
    out = loss(batch())
    out[term].backward()
    assert trained_parts(actor, loss) == trained


def test_alpha_is_kept_within_its_bounds():
    _, loss = _loss()
    with torch.no_grad():
        loss.log_alpha.fill_(math.log(50.0))
    out = loss(batch())
    torch.testing.assert_close(out["alpha"], torch.tensor(10.0))
    torch.testing.assert_close(loss.log_alpha.detach(), torch.tensor(math.log(10.0)))


def test_signature_defaults_and_exports():
    assert redq_module.REDQLoss is REDQLoss
    torch.manual_seed(0)
    actor = StubActor()
    loss = REDQLoss(actor, qvalue())
    assert loss.num_qvalue_nets == 10 and loss.sub_sample_len == 2
    assert loss.loss_function == "smooth_l1"
    assert loss.qvalue_network_params.weight0.shape[0] == 10
    # the copies are initialised independently
    w = loss.qvalue_network_params.weight0
    assert not torch.equal(w[0], w[1])
    assert REDQLoss(actor, qvalue(), num_qvalue_nets=3, sub_sample_len=5).sub_sample_len == 2
    with pytest.raises(NotImplementedError, match="gSDE"):
        REDQLoss(actor, qvalue(), gSDE=True)
    loss.select_out_keys("loss_actor", "loss_qvalue")
    assert sorted(loss(batch()).keys()) == ["loss_actor", "loss_qvalue"]


def test_renamed_action_key():
    torch.manual_seed(0)
    loss = REDQLoss(StubActor(), qvalue("act")).set_keys(action="act")
    td = batch(action_key="act")
    assert torch.isfinite(loss(td)["loss_qvalue"]) and "act" in loss.in_keys


def test_short_pendulum_training_has_finite_losses():
    def make(actor, critic, env):
        loss = REDQLoss(actor, critic, num_qvalue_nets=4, action_spec=env.action_spec_unbatched)
        return loss, SoftUpdate(loss, tau=0.005)

    assert_finite_history(train_on_pendulum(make, frames=300, updates_per_batch=3), 9)
