"""Generates the gRPC stubs from proto/tensorgym.proto whenever the package is built or
installed (editable installs included); they are never checked in."""
import os
import shutil
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.environ.get("TENSORGYM_PROTO", os.path.join(HERE, "..", "proto", "tensorgym.proto"))
OUT_PACKAGE = os.path.join(HERE, "tensorgym", "_proto")


def generate_stubs():
    from grpc_tools import protoc
    import grpc_tools

    if not os.path.exists(PROTO):
        raise RuntimeError(f"cannot find {PROTO}: build from a TensorGym checkout or set $TENSORGYM_PROTO")
    # Staged under tensorgym/_proto/ so the generated modules import each other by
    # their package path (tensorgym._proto.tensorgym_pb2).
    with tempfile.TemporaryDirectory() as tmp:
        staged = os.path.join(tmp, "tensorgym", "_proto")
        os.makedirs(staged)
        shutil.copy(PROTO, os.path.join(staged, "tensorgym.proto"))
        well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
        args = ["grpc_tools.protoc", f"-I{tmp}", f"-I{well_known}", f"--python_out={HERE}",
                f"--grpc_python_out={HERE}", f"--pyi_out={HERE}", os.path.join(staged, "tensorgym.proto")]
        if protoc.main(args) != 0:
            raise RuntimeError("grpc_tools.protoc failed on " + PROTO)


class BuildPyWithStubs(build_py):
    def run(self):
        generate_stubs()
        super().run()


setup(cmdclass={"build_py": BuildPyWithStubs})
