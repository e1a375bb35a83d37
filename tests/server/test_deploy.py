"""deploy/: the image and the KServe manifests agree with each other and with the server.

No container engine runs here, so the image is not built; what can be checked is
that the manifests point where the server listens and probes what it answers,
and that the image's entry point is the installed server (scripts/check_install.sh
checks that install).
"""
import re

import pytest
import yaml

from conftest import REPO
from test_server import request

DEPLOY = REPO / "deploy"


def load(name):
    return yaml.safe_load((DEPLOY / "kserve" / name).read_text())


@pytest.fixture
def healthy_server(repository, tmp_path):
    """A server whose every model loads: readiness is strict, so the repository of broken models is not ready."""
    from conftest import Server
    from test_hostile import make_repository

    s = Server(make_repository(tmp_path, repository, "mlp"))
    yield s
    s.stop()


def test_serving_runtime_listens_and_probes_where_the_server_does(healthy_server):
    server = healthy_server
    runtime = load("serving-runtime.yaml")
    assert runtime["kind"] == "ServingRuntime" and runtime["spec"]["protocolVersions"] == ["v2"]
    container = runtime["spec"]["containers"][0]
    args = container["args"]
    port = int(args[args.index("--http-port") + 1])
    assert container["ports"][0]["containerPort"] == port
    assert args[args.index("--model-repository") + 1] == "/mnt/models"  # where KServe mounts storageUri
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["port"] == port
        assert request(server, "GET", container[probe]["httpGet"]["path"])[0] == 200


def test_inference_service_uses_the_runtime_and_its_format():
    runtime = load("serving-runtime.yaml")
    service = load("inference-service.yaml")
    model = service["spec"]["predictor"]["model"]
    assert model["runtime"] == runtime["metadata"]["name"]
    assert model["modelFormat"]["name"] in [f["name"] for f in runtime["spec"]["supportedModelFormats"]]
    assert model["protocolVersion"] == "v2"


def test_image_runs_the_installed_server_without_the_compiler():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "-DSTRATA_BUILD_COMPILER=OFF" in dockerfile
    runtime_stage = dockerfile.split("FROM debian:bookworm-slim", 1)[1]
    assert "llvm" not in runtime_stage.lower()
    entry = re.search(r'ENTRYPOINT \["([^"]+)"', runtime_stage).group(1)
    assert entry == load("serving-runtime.yaml")["spec"]["containers"][0]["command"][0]
    assert f"COPY --from=build {entry}" in runtime_stage
