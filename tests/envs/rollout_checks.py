"""Checks shared by the env transform tests (imported by module name: tests/envs is on
sys.path while its tests run)."""


def specs_hold(env, td):
    """Every observation/reward entry of a rollout is in the env's spec (root and next)."""
    batch = env.batch_size
    for composite, where in (
        (env.observation_spec, ((), ("next",))),
        (env.full_reward_spec, (("next",),)),
    ):
        for key in composite.keys(True, True):
            spec = composite[key]
            for prefix in where:
                value = td.get((*prefix, key))
                # the rollout adds a time dim after the env's batch dims
                value = value.movedim(len(batch), 0)
                for step in value:
                    assert spec.is_in(step), (key, prefix, spec, step.dtype, step.shape)
