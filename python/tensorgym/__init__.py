"""TensorGym's Python client: Gymnasium environments for tensor-program optimization,
served by a TensorGym service over gRPC (docs/python.md).

    import tensorgym
    env = tensorgym.make("schedule-v0", benchmark="benchmark://ops-v0/gmm-1")
    obs, info = env.reset(seed=0)
"""
from . import batch
from .connection import Connection, connect
from .env import TensorGymEnv
from .errors import ServiceError, ServiceUnavailable
from .registration import register_envs
from .service import ManagedService, find_binary
from .vector import make_vec
from .state import EpisodeState, Validation, append_state, read_states, state_from_json, state_to_json, write_states

__version__ = "0.3.0"


def make(env: str = "schedule-v0", **kwargs) -> TensorGymEnv:
    """A TensorGym environment: tensorgym.make("schedule-v0", benchmark=...,
    observation_space=..., reward_space=..., service=None | "host:port" | ...).
    See TensorGymEnv for every argument."""
    return TensorGymEnv(env, **kwargs)


register_envs()

__all__ = ["Connection", "EpisodeState", "ManagedService", "ServiceError", "ServiceUnavailable", "TensorGymEnv",
           "Validation", "append_state", "connect", "find_binary", "make", "make_vec", "read_states", "register_envs",
           "state_from_json", "state_to_json", "write_states"]
__all__ += ["batch"]  # the Evaluate stream from Python (tensorgym.batch); tensorgym.ray is imported by name
