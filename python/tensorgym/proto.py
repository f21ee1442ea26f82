"""The generated protocol modules (setup.py writes them from proto/tensorgym.proto)."""
try:
    from ._proto import tensorgym_pb2 as pb  # noqa: F401
    from ._proto import tensorgym_pb2_grpc as pb_grpc  # noqa: F401
except ImportError as e:  # pragma: no cover - a broken install
    raise ImportError("tensorgym's gRPC stubs are missing: they are generated when the package is built; "
                      "reinstall it (pip install -e python/, or scripts/setup)") from e
