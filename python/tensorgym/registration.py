"""Gymnasium registration: gymnasium.make("tensorgym/schedule-v0", ...) and memory-v0.

Specs are deterministic; an environment made with a measured reward or observation
(runtime, gflops, ...) reports spec.nondeterministic = True (TensorGymEnv.spec)."""
import gymnasium

ENVS = ("schedule-v0", "memory-v0")


def register_envs() -> None:
    for name in ENVS:
        env_id = f"tensorgym/{name}"
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(id=env_id, entry_point="tensorgym.env:TensorGymEnv", kwargs={"env": name},
                           nondeterministic=False, disable_env_checker=True)
