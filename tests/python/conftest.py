"""Fixtures for the Python client's tests: the build's `tensorgym` binary and services
started from it on loopback (real gRPC, real server processes)."""
import os
import subprocess

import pytest

import tensorgym

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def binary() -> str:
    return tensorgym.find_binary()


@pytest.fixture(scope="module")
def service():
    """One managed service shared by a test module's environments."""
    with tensorgym.ManagedService(args=["--workers", "1"]) as s:
        yield s


def run_cli(*args, check=True, **kwargs) -> subprocess.CompletedProcess:
    """Runs the build's `tensorgym` command line."""
    return subprocess.run([tensorgym.find_binary(), *args], capture_output=True, text=True, check=check,
                          timeout=120, **kwargs)
