"""The generated gRPC stubs (setup.py writes them at build time)."""
