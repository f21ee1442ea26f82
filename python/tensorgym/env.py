"""TensorGym environments as `gymnasium.Env`s over gRPC.

    env = tensorgym.make("schedule-v0", benchmark="benchmark://ops-v0/gmm-1",
                         observation_space="features_flat", reward_space="est_cycles")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample(mask=info["action_mask"]))

An episode's state is (benchmark, actions), so the client keeps the episode's history:
when the service dies or forgets the session, the next call restarts or reconnects
(Connection.recover) and replays the episode in a new session, and the episode goes on
in the identical state (measured rewards are measured again).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Union

import grpc
import gymnasium as gym
import numpy as np
from gymnasium import spaces as gs

from . import _step_stream
from .connection import Connection, connect
from .errors import ServiceError, ServiceUnavailable, from_rpc_error, status_code
from .proto import pb
from .spaces import from_event, to_event, to_gym_space
from .state import Validation

DEFAULTS = {
    "schedule-v0": {"benchmark": "benchmark://ops-v0/gmm-1", "observation": "features_flat",
                    "reward": "est_cycles"},
    "memory-v0": {"benchmark": "benchmark://graphs-v0/mobilenet_v2", "observation": "candidate_features",
                  "reward": "arena"},
}
_MAX_ATTEMPTS = 8


def _session_not_found(error) -> bool:
    """Whether a failed call (grpc.RpcError) or a step's RpcStatus says the session is unknown."""
    status = None
    if isinstance(error, pb.RpcStatus):
        status = error
    else:
        for key, value in (error.trailing_metadata() or ()):
            if key == "grpc-status-details-bin":
                status = pb.RpcStatus.FromString(value)
    return status is not None and any(d.type_url.endswith("/tensorgym.proto.SessionNotFound")
                                      for d in status.details)


def _as_mask(value):
    return value.astype(np.int8) if isinstance(value, np.ndarray) else value


class _Entry:
    __slots__ = ("actions", "rewards", "key", "value")

    def __init__(self, actions=None, rewards=(), key=None, value=None):
        self.actions = actions  # the step's encoded actions (_encode_actions); None: a session parameter
        self.rewards = list(rewards)
        self.key = key
        self.value = value


_ACTION_BYTES: Dict[int, bytes] = {}  # action index -> its encoded StepRequest.action field
_ACTION_BYTES_MAX = 1 << 16


def _encode_actions(actions) -> bytes:
    """The actions as StepRequest bytes holding only their `action` fields. Protobuf
    parses concatenated messages as one message with repeated fields appended, so a
    request is its cached prefix (_Request.prefix) followed by these."""
    out = b""
    for a in actions:
        if type(a) is int:
            encoded = _ACTION_BYTES.get(a)
            if encoded is None:
                encoded = pb.StepRequest(action=[to_event(a)]).SerializeToString()
                if len(_ACTION_BYTES) < _ACTION_BYTES_MAX:
                    _ACTION_BYTES[a] = encoded
        else:
            encoded = pb.StepRequest(action=[to_event(a)]).SerializeToString()
        out += encoded
    return out


class _Request:
    """One kind of step request: the observations and rewards it asks for, whether it
    can go on the step stream, and its bytes but for the actions (made once a session)."""
    __slots__ = ("observations", "rewards", "cheap", "_session_id", "_prefix")

    def __init__(self, observations: List[str], rewards: List[str], cheap: bool):
        self.observations = observations
        self.rewards = rewards
        self.cheap = cheap
        self._session_id = None
        self._prefix = b""

    def prefix(self, session_id: str) -> bytes:
        if session_id != self._session_id:
            self._prefix = pb.StepRequest(session_id=session_id, observation_space=self.observations,
                                          reward_space=self.rewards, error_in_response=True).SerializeToString()
            self._session_id = session_id
        return self._prefix


class _StepPlan:
    """How multistep asks for given observations and rewards and reads the answer."""
    __slots__ = ("request", "custom_obs", "custom_rewards", "convert")

    def __init__(self, request: _Request, custom_obs: bool, custom_rewards: bool, convert):
        self.request = request
        self.custom_obs = custom_obs
        self.custom_rewards = custom_rewards
        self.convert = convert  # the env's observation, as Gymnasium holds it, from the values; None: custom


class ObservationView:
    """`env.observation["features"]`: any named observation of the current state, computed
    on request (a step without actions). `env.observation.spaces` maps names to spaces."""

    def __init__(self, env: "TensorGymEnv"):
        self._env = env

    @property
    def spaces(self) -> Dict[str, gs.Space]:
        return dict(self._env._obs_gym)

    def __getitem__(self, name: str) -> Any:
        return self._env._observe([name])[0]

    def __call__(self, *names: str) -> List[Any]:
        return self._env._observe(list(names))

    def __contains__(self, name: str) -> bool:
        return name in self._env._obs_gym

    def keys(self):
        return self._env._obs_gym.keys()


class TensorGymEnv(gym.Env):
    """One environment of a TensorGym service (a session per episode).

    env: "schedule-v0" or "memory-v0". benchmark: a URI, a dataset ("benchmark://ops-v0")
    or a list of URIs; with several, reset() picks one with the env's seeded generator.
    observation_space: a name, a list of names (a Dict observation) or None (no
    observation). reward_space: a name or None (reward 0). action_space: the service's
    name of it ("primitives", "cursor"; memory-v0: "order", "inplace", "placement", "rewrite"),
    None for the default. service: None (a managed local service), "host:port", a
    ManagedService or a Connection; other keyword arguments go to Connection (binary,
    auth_token, auth_token_file, tls, tls_ca_file, reconnect_timeout_s, ...).
    action_mask: request the action mask each step, as info["action_mask"].
    target: the backend episodes compile for and are measured on ("cpu", the default,
    "cuda" or "fpga"; schedule-v0 only). On cuda the default reward is est_gpu_time; on
    fpga runtime, simulated cycles at the design's clock (deterministic).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, env: str = "schedule-v0", benchmark: Union[None, str, Sequence[str]] = None,
                 observation_space: Union[None, str, Sequence[str]] = "default",
                 reward_space: Optional[str] = "default", action_space: Optional[str] = None,
                 service: Any = None, max_episode_steps: Optional[int] = None,
                 parameters: Optional[Dict[str, str]] = None, action_mask: bool = True,
                 render_mode: Optional[str] = None, timeout_s: Optional[float] = None,
                 target: Optional[str] = None, **connection_options):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not one of {self.metadata['render_modes']}")
        defaults = dict(DEFAULTS.get(env, {}))
        if target == "cuda" and env == "schedule-v0":
            defaults["reward"] = "est_gpu_time"  # est_cycles models the cpu
        if target == "fpga" and env == "schedule-v0":
            defaults["reward"] = "runtime"  # simulated: deterministic
        self._target = target or ""
        self.render_mode = render_mode
        self.env_name = env
        self._conn: Connection = connect(service, **connection_options)
        self._owns_conn = not isinstance(service, Connection)
        self._timeout = timeout_s
        try:
            spaces = self._conn.spaces(env)
        except ServiceError:
            self._release()
            raise
        self._action_spaces = {s.name: s for s in spaces.action_space}
        self._obs_spaces = {s.name: s for s in spaces.observation_space}
        self._reward_spaces = {s.name: s for s in spaces.reward_space}
        self._action_space_name = action_space or spaces.action_space[0].name
        self._obs_gym: Dict[str, gs.Space] = {}
        try:
            self._use_action_space(self._action_space_name)
            self._configure(env, defaults, observation_space, reward_space)
        except BaseException:
            self._release()
            raise
        self._mask = action_mask and "action_mask" in self._obs_spaces
        self._benchmark_arg = benchmark if benchmark is not None else defaults.get("benchmark")
        self._benchmark_pool: Optional[List[str]] = None
        self._max_episode_steps = int(max_episode_steps or 0)
        self._parameters = dict(parameters or {})
        self.observation = ObservationView(self)
        # The episode.
        self.benchmark: Optional[str] = None
        self._episode_action_space = self._action_space_name
        self._episode_target = self._target
        self._session_id = ""
        self._epoch = -1
        self._history: List[_Entry] = []
        self._requests: Dict[Any, _Request] = {}
        self._step_count = 0
        self._last_mask: Optional[np.ndarray] = None
        self._spec_value = None

    def _use_action_space(self, name: str) -> None:
        """Makes `name` the action space (memory-v0's may carry settings after ';':
        "placement;memory_limit=1000000"): action_space, action_names, the mask's size."""
        base = name.split(";", 1)[0]
        if base not in self._action_spaces:
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT,
                               f"{self.env_name} has no action space {base!r} "
                               f"(its action spaces: {', '.join(self._action_spaces)})")
        action = self._action_spaces[base]
        self.action_space = to_gym_space(action)
        self.action_names = list(action.named_discrete.name) if action.WhichOneof("value") == "named_discrete" else None
        n_actions = int(self.action_space.n)
        self._obs_gym = {name: to_gym_space(s, n_actions) for name, s in self._obs_spaces.items()}
        self._plans: Dict[Any, _StepPlan] = {}  # they convert observations to these spaces

    def _configure(self, env, defaults, observation_space, reward_space) -> None:
        if observation_space == "default":
            observation_space = defaults.get("observation")
        if reward_space == "default":
            reward_space = defaults.get("reward")
        self._obs_names: List[str] = ([] if observation_space is None else
                                      [observation_space] if isinstance(observation_space, str) else
                                      list(observation_space))
        self._dict_obs = observation_space is not None and not isinstance(observation_space, str)
        self._check_names(self._obs_names, self._obs_spaces, "observation")
        self.reward_space_name = reward_space
        if reward_space is not None:
            self._check_names([reward_space], self._reward_spaces, "reward")
        self._set_observation_space()
        self.reward_range = (-np.inf, np.inf)

    def _set_observation_space(self) -> None:
        if not self._obs_names:
            self.observation_space = None
        elif self._dict_obs:
            self.observation_space = gs.Dict({n: self._obs_gym[n] for n in self._obs_names})
        else:
            self.observation_space = self._obs_gym[self._obs_names[0]]

    # -- metadata ---------------------------------------------------------------------

    @property
    def deterministic(self) -> bool:
        """Whether the reward and observations replay exactly (no measured ones)."""
        names = [(n, self._obs_spaces) for n in self._obs_names]
        if self.reward_space_name:
            names.append((self.reward_space_name, self._reward_spaces))
        return all(spaces[n].deterministic for n, spaces in names)

    @property
    def spec(self):
        # Registered specs say nondeterministic when the chosen reward or an observation is
        # measured: the flag follows the env's spaces, whichever way it was made.
        spec = self._spec_value
        if spec is not None and not self.deterministic and not spec.nondeterministic:
            spec = dataclasses.replace(spec, nondeterministic=True)
        return spec

    @spec.setter
    def spec(self, value):
        self._spec_value = value

    @property
    def connection(self) -> Connection:
        return self._conn

    @property
    def service_address(self) -> str:
        """Where this environment's calls go ("127.0.0.1:PORT" for a managed service)."""
        return self._conn.address

    @property
    def session_id(self) -> str:
        return self._session_id

    def _check_names(self, names, spaces, kind):
        for n in names:
            if n not in spaces:
                raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT,
                                   f"unknown {kind} space {n!r} for {self.env_name} "
                                   f"(its {kind} spaces: {', '.join(spaces)})")

    # -- the episode ------------------------------------------------------------------

    def _benchmarks(self) -> List[str]:
        if self._benchmark_pool is None:
            arg = self._benchmark_arg
            if isinstance(arg, str):
                rest = arg.split("://", 1)[-1]
                self._benchmark_pool = self._conn.benchmarks(arg) if "/" not in rest else [arg]
            else:
                self._benchmark_pool = list(arg)
            if not self._benchmark_pool:
                raise ServiceError(grpc.StatusCode.NOT_FOUND, f"no benchmarks in {arg!r}")
        return self._benchmark_pool

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        """Starts an episode. options: "benchmark" (a URI), "action_space",
        "max_episode_steps", "target" ("cpu", "cuda", "fpga": this episode's backend), "state" (an
        EpisodeState to continue from: its benchmark, action space, target and actions)."""
        super().reset(seed=seed)
        options = dict(options or {})
        state = options.pop("state", None)
        benchmark = options.pop("benchmark", None)
        action_space = options.pop("action_space", None)
        max_steps = options.pop("max_episode_steps", None)
        target = options.pop("target", None)
        if options:
            raise ValueError(f"unknown reset options: {', '.join(options)} "
                             "(known: benchmark, action_space, max_episode_steps, target, state)")
        if state is not None:
            if state.env and state.env != self.env_name:
                raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT,
                                   f"the state is of {state.env}, this environment is {self.env_name}")
            benchmark = state.benchmark
            action_space = action_space or state.action_space or None
            target = target or state.target or None
        if benchmark is None:
            pool = self._benchmarks()
            benchmark = pool[int(self.np_random.integers(len(pool)))] if len(pool) > 1 else pool[0]
        if max_steps is not None:
            self._max_episode_steps = int(max_steps)
        episode_action_space = action_space or self._action_space_name
        if episode_action_space.split(";", 1)[0] not in self._action_spaces:
            self._use_action_space(episode_action_space)  # raises, naming the known ones
        names = self._obs_names + (["action_mask"] if self._mask else [])
        request = pb.StartSessionRequest(env=self.env_name, benchmark=benchmark,
                                         action_space=episode_action_space, observation_space=names,
                                         reward_space=[self.reward_space_name] if self.reward_space_name else [],
                                         max_episode_steps=self._max_episode_steps, parameter=self._parameters,
                                         target=target or self._target)
        # The new session first: a refused reset leaves the episode as it was.
        response = self._conn.call("StartSession", request, timeout=self._timeout)
        self._end_session()
        if episode_action_space.split(";", 1)[0] != self._episode_action_space.split(";", 1)[0]:
            self._use_action_space(episode_action_space)
            self._set_observation_space()
        self._episode_action_space = episode_action_space
        self._episode_target = target or self._target
        self.benchmark = benchmark
        self._session_id = response.session_id
        self._epoch = self._conn.epoch
        self._history = []
        self._step_count = 0
        values = [from_event(e) for e in response.observation]
        if state is not None and len(state.actions):
            # One action a step, as states are recorded, so cumulative rewards sum alike.
            rewards = [self.reward_space_name] if self.reward_space_name else []
            for i, action in enumerate(state.actions):
                last = i + 1 == len(state.actions)
                result = self._step_events(_encode_actions([action]), self._request(names if last else [], rewards))
                if result.status.code:
                    raise ServiceError(status_code(result.status.code),
                                       f"replaying the state's action {i + 1} ({action}): {result.status.message}")
            values = [from_event(e) for e in result.observation]
        return self._package(values, {"benchmark": benchmark})

    def _package(self, values, info):
        if self._mask:
            mask = _as_mask(values.pop())
            self._last_mask = mask if isinstance(mask, np.ndarray) else None
            info["action_mask"] = mask
        return self._gym_observation(values), info

    def _gym_observation(self, values):
        return self._plan(None, None).convert(values)

    def _converter(self):
        """A function from the env's observation values to the observation as Gymnasium
        holds it: scalars of Box spaces become 0-d arrays, the action mask int8."""
        def one(name):
            space = self._obs_gym[name]
            if name == "action_mask":
                return _as_mask
            if isinstance(space, gs.Box):
                dtype = space.dtype
                return lambda v: np.asarray(v, dtype=dtype) if isinstance(v, (int, float)) else v
            return lambda v: v

        names = list(self._obs_names)
        if not names:
            return lambda values: None
        converts = [one(n) for n in names]
        if self._dict_obs:
            return lambda values: {n: f(v) for n, f, v in zip(names, converts, values)}
        first = converts[0]
        return lambda values: first(values[0])

    def _plan(self, observations, rewards) -> _StepPlan:
        """The plan of a step asking for these (None: the env's own), made on first use;
        an unknown name raises the service's error."""
        key = (None if observations is None else tuple(observations), None if rewards is None else tuple(rewards))
        plan = self._plans.get(key)
        if plan is None:
            obs_names = self._obs_names if observations is None else list(observations)
            reward_names = (list(rewards) if rewards is not None else
                            [self.reward_space_name] if self.reward_space_name else [])
            for n in obs_names:
                if n not in self._obs_spaces:
                    self._raise_service_error(observation=n)
            for n in reward_names:
                if n not in self._reward_spaces:
                    self._raise_service_error(reward=n)
            request = self._request(obs_names + (["action_mask"] if self._mask else []), reward_names)
            plan = _StepPlan(request, observations is not None, rewards is not None,
                             None if observations is not None else self._converter())
            self._plans[key] = plan
        return plan

    def _request(self, observations: Sequence[str], rewards: Sequence[str]) -> _Request:
        key = (tuple(observations), tuple(rewards))
        request = self._requests.get(key)
        if request is None:
            request = _Request(list(observations), list(rewards), self._cannot_measure(observations, rewards))
            self._requests[key] = request
        return request

    def step(self, action, observations: Optional[Sequence[str]] = None, rewards: Optional[Sequence[str]] = None):
        """Applies one action (an index or its text). With `observations` or `rewards`
        (lists of names) the observation or reward returned is the list of those values
        instead of the env's own. info: "action_had_no_effect", "action_mask", and
        "error" / "error_code" when the service refused the action (the state is then
        unchanged and the reward 0). An action outside the action space, or text that
        does not parse, raises ServiceError."""
        return self.multistep([action], observations, rewards)

    def multistep(self, actions: Sequence[Any], observations: Optional[Sequence[str]] = None,
                  rewards: Optional[Sequence[str]] = None):
        """Several actions in one call, applied in order (a failing one stops the rest)."""
        if not self._session_id:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, "no episode: call reset() first")
        plan = self._plan(observations, rewards)
        response = self._step_events(_encode_actions(actions), plan.request)
        info: Dict[str, Any] = {"action_had_no_effect": response.action_had_no_effect}
        status = response.status
        if status.code:
            code = status_code(status.code)
            malformed = any(not self._in_action_space(a) for a in actions) or (
                code == grpc.StatusCode.INVALID_ARGUMENT and any(isinstance(a, str) for a in actions))
            if malformed:
                raise ServiceError(code, status.message)
            info["error"] = status.message
            info["error_code"] = code.name
        values = [from_event(e) for e in response.observation]
        if self._mask:
            mask = _as_mask(values.pop())
            self._last_mask = mask if isinstance(mask, np.ndarray) else None
            info["action_mask"] = mask
        obs = values if plan.custom_obs else plan.convert(values)
        if plan.custom_rewards:
            reward = list(response.reward)
        else:
            reward = response.reward[0] if response.reward else 0.0
        return obs, reward, response.terminated, response.truncated, info

    def _in_action_space(self, action) -> bool:
        if isinstance(action, str):
            return True
        try:
            return bool(self.action_space.contains(int(action)))
        except (TypeError, ValueError):
            return False

    def _raise_service_error(self, observation=None, reward=None):
        """Asks the service about an unknown name so the error is the service's own."""
        request = pb.StepRequest(session_id=self._session_id, observation_space=[observation] if observation else [],
                                 reward_space=[reward] if reward else [])
        try:
            self._conn.raw("Step", request, timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        kind, name = ("observation", observation) if observation else ("reward", reward)
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, f"unknown {kind} space {name!r}")

    def _observe(self, names: List[str]) -> List[Any]:
        for n in names:
            if n not in self._obs_spaces:
                self._raise_service_error(observation=n)
        response = self._step_events(b"", self._request(names, []))
        if response.status.code:
            raise ServiceError(status_code(response.status.code), response.status.message)
        return [from_event(e) for e in response.observation]

    # -- calls on the session, with recovery ------------------------------------------

    def _step_events(self, actions: bytes, request: _Request) -> "pb.StepResponse":
        """One Step: `actions` from _encode_actions, asking for what `request` names."""
        for _ in range(_MAX_ATTEMPTS):
            if self._epoch != self._conn.epoch:
                self._ensure_session()
            epoch = self._conn.epoch
            data = request.prefix(self._session_id) + actions
            stream = self._open_step_stream() if request.cheap else None
            try:
                if stream is not None:
                    response = stream.step(data, self._timeout or self._conn.call_timeout_s)
                else:
                    response = self._conn.raw("Step", pb.StepRequest.FromString(data), timeout=self._timeout)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE:
                    self._conn.recover(epoch)
                    self._settle_lost_step()
                    continue
                if _session_not_found(e):
                    self._epoch = -1
                    continue
                if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    # Not applied, unless the deadline struck after it was: the step count says.
                    self._settle_lost_step()
                raise from_rpc_error(e, "Step") from None
            if response.status.code and _session_not_found(response.status):
                self._epoch = -1
                continue
            if response.step_count:
                self._step_count = response.step_count
            if actions or request.rewards:
                self._history.append(_Entry(actions, request.rewards))
            return response
        raise ServiceUnavailable(f"the step did not go through after {_MAX_ATTEMPTS} recoveries")

    def _cannot_measure(self, observations, rewards) -> bool:
        """Whether a step asking for these can be answered without a measurement (such
        steps go on the step stream; one that may measure stays unary, with its deadline)."""
        obs, rew = self._obs_spaces, self._reward_spaces
        return (all(n in obs and not obs[n].platform_dependent for n in observations)
                and all(n in rew and not rew[n].platform_dependent for n in rewards))

    def _open_step_stream(self):
        """This environment's Session stream (opened on first use, and again after it
        broke or the connection moved), or None: then steps are unary."""
        stream = self.__dict__.get("_step_stream")
        if stream is not None and stream.usable_by(self, self._conn):
            return stream
        if stream is not None and stream.channel is not self._conn.channel:
            stream.close()  # on a channel a recovery replaced (a fork's copy leaves its original's alone)
        return _step_stream.open_stream(self, self._conn)

    def _settle_lost_step(self) -> None:
        """After a step whose answer was lost on a server that is still there: if it was
        applied, its session is dropped and the episode replayed without it."""
        if self._epoch != self._conn.epoch:
            return  # a new server: replayed before the next call anyway
        try:
            state = self._conn.raw("GetState", pb.GetStateRequest(session_id=self._session_id), timeout=self._timeout)
        except grpc.RpcError:
            self._epoch = -1
            return
        if state.step_count != self._step_count:
            self._end_session()
            self._epoch = -1

    def _ensure_session(self) -> None:
        if self._epoch == self._conn.epoch:
            return
        for _ in range(_MAX_ATTEMPTS):
            epoch = self._conn.epoch
            try:
                self._replay()
                self._conn.stats["replays"] += 1
                return
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE:
                    self._conn.recover(epoch)
                    continue
                if _session_not_found(e):
                    continue
                raise from_rpc_error(e, "replaying the episode after the service was lost") from None
        raise ServiceUnavailable("could not replay the episode after the service was lost")

    def _replay_rewards(self) -> List[List[str]]:
        # Deterministic rewards at every step; a measured one only at the last step that
        # asked for it, so the reward bookkeeping ends where it was with one measurement.
        last: Dict[str, int] = {}
        for i, e in enumerate(self._history):
            for r in e.rewards:
                last[r] = i
        out = []
        for i, e in enumerate(self._history):
            out.append([r for r in e.rewards if self._reward_spaces[r].deterministic or last[r] == i])
        return out

    def _replay(self) -> None:
        conn = self._conn
        start = pb.StartSessionRequest(env=self.env_name, benchmark=self.benchmark,
                                       action_space=self._episode_action_space,
                                       max_episode_steps=self._max_episode_steps, parameter=self._parameters,
                                       target=self._episode_target)
        session_id = conn.raw("StartSession", start, timeout=self._timeout).session_id
        rewards = self._replay_rewards()
        steps = 0
        for entry, entry_rewards in zip(self._history, rewards):
            if entry.actions is None:
                conn.raw("SendSessionParameter", pb.SendSessionParameterRequest(
                    session_id=session_id, key=entry.key, value=entry.value), timeout=self._timeout)
            else:
                request = pb.StepRequest(session_id=session_id, reward_space=entry_rewards, error_in_response=True)
                request.MergeFromString(entry.actions)
                response = conn.raw("Step", request, timeout=self._timeout)
                steps = response.step_count
        self._session_id = session_id
        self._epoch = conn.epoch
        self._step_count = steps

    def _session_call(self, method: str, make_request):
        for _ in range(_MAX_ATTEMPTS):
            if not self._session_id:
                raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, "no episode: call reset() first")
            self._ensure_session()
            epoch = self._conn.epoch
            try:
                return self._conn.raw(method, make_request(self._session_id), timeout=self._timeout)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE:
                    self._conn.recover(epoch)
                    continue
                if _session_not_found(e):
                    self._epoch = -1
                    continue
                raise from_rpc_error(e, method) from None
        raise ServiceUnavailable(f"{method} did not go through after {_MAX_ATTEMPTS} recoveries")

    # -- state, fork, validation ------------------------------------------------------

    @property
    def state(self) -> "pb.EpisodeState":
        """The episode's EpisodeState (benchmark, actions, cumulative rewards, provenance)."""
        return self._session_call("GetState", lambda sid: pb.GetStateRequest(session_id=sid)).state

    def validate(self, state: Optional["pb.EpisodeState"] = None, tolerance: float = 0.25) -> Validation:
        """Replays a state (this episode's by default) on the service and checks it."""
        return self._conn.validate(state if state is not None else self.state, tolerance)

    def fork(self) -> "TensorGymEnv":
        """An independent environment at the same state (ForkSession), with this episode's
        history, so it recovers on its own."""
        response = self._session_call("ForkSession", lambda sid: pb.ForkSessionRequest(session_id=sid))
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._history = list(self._history)
        other._plans, other._requests = {}, {}
        other._session_id = response.session_id
        other.observation = ObservationView(other)
        other._owns_conn = True
        self._conn.acquire()
        return other

    def set_parameter(self, key: str, value: str) -> None:
        """A session parameter ("runner.repeat" = "3", ...): now when an episode runs, and
        for every later reset."""
        if self._session_id:
            self._session_call("SendSessionParameter", lambda sid: pb.SendSessionParameterRequest(
                session_id=sid, key=key, value=str(value)))
            self._history.append(_Entry(None, (), key, str(value)))
        self._parameters[key] = str(value)

    def action_masks(self) -> np.ndarray:
        """The last action mask as booleans (sb3-contrib's MaskablePPO calls this)."""
        if self._last_mask is None or len(self._last_mask) != self.action_space.n:
            return np.ones(int(self.action_space.n), dtype=bool)
        return self._last_mask.astype(bool)

    def render(self):
        if self.render_mode != "ansi" or not self._session_id:
            return None
        name = "loop_nest" if "loop_nest" in self._obs_spaces else "decision"
        return self.observation[name]

    # -- life -------------------------------------------------------------------------

    def _end_session(self) -> None:
        if not self._session_id:
            return
        if self._epoch == self._conn.epoch:
            try:
                self._conn.raw("EndSession", pb.EndSessionRequest(session_id=self._session_id), timeout=5)
            except grpc.RpcError:
                pass
        self._session_id = ""

    def _release(self) -> None:
        if self._owns_conn and self._conn is not None:
            self._conn.release()
        self._conn = None

    def close(self) -> None:
        if getattr(self, "_conn", None) is None:
            return
        try:
            self._end_session()
        finally:
            self._release()
        super().close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
