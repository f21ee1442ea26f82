"""Exceptions that carry the service's status code and message."""
from __future__ import annotations

import grpc


class ServiceError(Exception):
    """A call the service refused: `code` is the gRPC status code, `message` its text."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class ServiceUnavailable(ServiceError):
    """The service could not be reached (or restarted) within the retry budget."""

    def __init__(self, message: str):
        super().__init__(grpc.StatusCode.UNAVAILABLE, message)


_CODES = {c.value[0]: c for c in grpc.StatusCode}


def status_code(number: int) -> grpc.StatusCode:
    """The grpc.StatusCode of a numeric code (RpcStatus.code)."""
    return _CODES.get(number, grpc.StatusCode.UNKNOWN)


def from_rpc_error(error: grpc.RpcError, context: str = "") -> ServiceError:
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    message = error.details() if hasattr(error, "details") else str(error)
    if context:
        message = f"{context}: {message}"
    if code == grpc.StatusCode.UNAVAILABLE:
        return ServiceUnavailable(message or "the service is unavailable")
    return ServiceError(code, message or "")
