"""Episode states as files: JSON Lines through the protobuf JSON mapping, field names as
in proto/tensorgym.proto — the format of `tensorgym run --state-out`, `replay` and
`validate`, so states move between Python and the command line both ways."""
from __future__ import annotations

import json
import os
from typing import Dict, List, NamedTuple

from google.protobuf import json_format

from .proto import pb

EpisodeState = pb.EpisodeState


class Validation(NamedTuple):
    ok: bool
    error: str
    replayed_rewards: Dict[str, float]


def state_to_json(state: "pb.EpisodeState") -> str:
    """One JSON object on one line, every field present (as the C++ writer prints it)."""
    try:
        d = json_format.MessageToDict(state, preserving_proto_field_name=True,
                                      always_print_fields_with_no_presence=True)
    except TypeError:  # protobuf < 5.26 names the option differently
        d = json_format.MessageToDict(state, preserving_proto_field_name=True,
                                      including_default_value_fields=True)
    return json.dumps(d, separators=(",", ":"))


def state_from_json(line: str) -> "pb.EpisodeState":
    state = json_format.Parse(line, pb.EpisodeState())
    if not state.env:
        raise ValueError("EpisodeState has no env")
    if not state.benchmark:
        raise ValueError("EpisodeState has no benchmark")
    return state


def read_states(path: str) -> List["pb.EpisodeState"]:
    """Every state of a JSON Lines file; errors name the file and line."""
    states = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            states.append(state_from_json(line))
        except (json_format.ParseError, ValueError) as e:
            torn = number == len(lines)  # the last line had no newline: a write cut short
            raise ValueError(f"{path}:{number}: " + ("the last line is cut short (" + str(e) + ")" if torn else str(e)))
    return states


def append_state(path: str, state: "pb.EpisodeState") -> None:
    """Appends one line, whole (O_APPEND), and flushes it to disk."""
    data = (state_to_json(state) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_states(path: str, states) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for s in states:
            f.write(state_to_json(s) + "\n")
