"""torchrl's names and forms on rl_trainers' product.

* :mod:`.trainers`: the algorithm trainers with torchrl's constructor form
  (``optim_steps_per_batch``, ``replay_buffer``, ``gamma``, the logging flags...) as well
  as rl_trainers' own, exported at torchrl's paths (``rl_trainers.trainers.algorithms``);
* :mod:`.trainer_arguments`: the translation of torchrl's arguments into the product's and
  the hooks torchrl's trainers register;
* :mod:`.config_factories`: the factories torchrl's config nodes name in ``_target_``,
  exported at torchrl's config module paths (``rl_trainers.trainers.algorithms.configs.*``).
"""
