"""The service's self-describing spaces as Gymnasium spaces, and its Event values as
Python and numpy values.

| service space | Gymnasium space | value |
| --- | --- | --- |
| Discrete(n), NamedDiscrete(names) | Discrete(n) | int |
| Int64Range, DoubleRange | Box(shape=()) int64 / float64 | int / float |
| Box with fixed shape | Box | numpy array |
| Box whose first dimension varies | Sequence(Box(rest), stack=True) | numpy array |
| String | Text | str |
| Boolean | Discrete(2) | bool |
| Dict, Sequence | Dict, Sequence | dict, tuple |
"""
from __future__ import annotations

import string
from typing import Any, Optional

import numpy as np
from gymnasium import spaces as gs

from .proto import pb

_INT64_MIN = np.iinfo(np.int64).min
_INT64_MAX = np.iinfo(np.int64).max
# Program text, loop nests and IR: printable ASCII with tabs and newlines.
TEXT_CHARSET = "".join(sorted(set(string.printable)))
_TEXT_MAX = 1 << 24


def _bounds(rng, dtype):
    lo = rng.min if rng.HasField("min") else None
    hi = rng.max if rng.HasField("max") else None
    if dtype == np.int64:
        return (_INT64_MIN if lo is None else int(max(lo, _INT64_MIN)),
                _INT64_MAX if hi is None else int(min(hi, _INT64_MAX)))
    return (-np.inf if lo is None else float(lo), np.inf if hi is None else float(hi))


def to_gym_space(space: "pb.Space", action_count: Optional[int] = None) -> gs.Space:
    """The Gymnasium space of a service space. `action_count` fixes the length of an
    `action_mask` (its service space varies with the action space)."""
    kind = space.WhichOneof("value")
    if kind == "discrete":
        return gs.Discrete(int(space.discrete.n))
    if kind == "named_discrete":
        return gs.Discrete(len(space.named_discrete.name))
    if kind == "int64_range":
        lo, hi = _bounds(space.int64_range, np.int64)
        return gs.Box(low=lo, high=hi, shape=(), dtype=np.int64)
    if kind == "double_range":
        lo, hi = _bounds(space.double_range, np.float64)
        return gs.Box(low=lo, high=hi, shape=(), dtype=np.float64)
    if kind == "boolean":
        return gs.Discrete(2)
    if kind == "string":
        hi = space.string.length.max if space.string.length.HasField("max") else _TEXT_MAX
        lo = space.string.length.min if space.string.length.HasField("min") else 0
        return gs.Text(max_length=int(min(hi, _TEXT_MAX)), min_length=int(lo), charset=TEXT_CHARSET)
    if kind == "box":
        box = space.box
        dtype = np.int64 if box.dtype == pb.BoxSpace.INT64 else np.float64
        lo, hi = _bounds(box.range, dtype)
        shape = tuple(int(d) for d in box.shape)
        if space.name == "action_mask" and action_count is not None and shape == (-1,):
            # int8, the mask type Discrete.sample(mask=...) takes.
            return gs.Box(low=0, high=1, shape=(action_count,), dtype=np.int8)
        if shape and shape[0] < 0 and all(d >= 0 for d in shape[1:]):
            return gs.Sequence(gs.Box(low=lo, high=hi, shape=shape[1:], dtype=dtype), stack=True)
        if any(d < 0 for d in shape):
            raise ValueError(f"space {space.name}: only the first dimension of a box may vary, not {shape}")
        return gs.Box(low=lo, high=hi, shape=shape, dtype=dtype)
    if kind == "dict":
        return gs.Dict({f.name: to_gym_space(f, action_count) for f in space.dict.field})
    if kind == "sequence":
        return gs.Sequence(to_gym_space(space.sequence.element, action_count))
    raise ValueError(f"space {space.name} has no kind")


def from_event(event: "pb.Event") -> Any:
    """An observation's value: Python scalars, str, numpy arrays, dicts, tuples."""
    kind = event.WhichOneof("value")
    if kind == "double_tensor":
        t = event.double_tensor
        return np.array(t.value, dtype=np.float64).reshape(tuple(t.shape))
    if kind == "int64_tensor":
        t = event.int64_tensor
        return np.array(t.value, dtype=np.int64).reshape(tuple(t.shape))
    if kind == "double_value":
        return event.double_value
    if kind == "int64_value":
        return event.int64_value
    if kind == "string_value":
        return event.string_value
    if kind == "boolean_value":
        return event.boolean_value
    if kind == "event_dict":
        return {k: from_event(v) for k, v in zip(event.event_dict.key, event.event_dict.value)}
    if kind == "event_list":
        return tuple(from_event(e) for e in event.event_list.event)
    return None


def to_event(value: Any) -> "pb.Event":
    """An action as an Event: an index (int, numpy integer, 0-d array) or its text."""
    if isinstance(value, str):
        return pb.Event(string_value=value)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("an action is an index or its text, not a bool")
    if isinstance(value, np.ndarray) and value.shape == () and np.issubdtype(value.dtype, np.integer):
        return pb.Event(int64_value=int(value))
    if isinstance(value, (int, np.integer)):
        return pb.Event(int64_value=int(value))
    raise TypeError(f"an action is an index (int) or its text (str), not {type(value).__name__}")
