"""strata-server with its gRPC endpoint on a free port, for test_grpc.py (conftest.py's Server, plus the port).

The server prints one line when it serves, "strata-server: listening on ADDR:HTTP_PORT, gRPC on ADDR:GRPC_PORT";
conftest's Server waits for it and takes the HTTP port, GrpcServer takes the gRPC one. conftest's Server turns gRPC
off (--grpc-port -1) unless its arguments name --grpc-port, as these do.
"""
import re

import pytest

from conftest import Server


class GrpcServer(Server):
    def __init__(self, repository, *args):
        super().__init__(repository, "--grpc-port", "0", *args)
        match = re.search(r"gRPC on [^:\s]+:(\d+)", self.log_text())
        if not match:
            self.stop()
            raise RuntimeError("strata-server did not say its gRPC port: " + self.log_text())
        self.grpc_port = int(match.group(1))
        self.grpc_url = f"localhost:{self.grpc_port}"


@pytest.fixture(scope="module")
def grpc_server(repository):
    s = GrpcServer(repository)
    yield s
    s.stop()


@pytest.fixture
def fresh_grpc_server(repository):
    """A server of its own, for tests that stop it."""
    s = GrpcServer(repository)
    yield s
    s.stop()
