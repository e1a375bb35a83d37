"""What existing Triton / KServe clients expect of strata-server: the model configuration and
statistics extensions, strict readiness, structured logs, and names as the ONNX model has them."""
import json

import numpy as np
import onnxruntime as ort
import tritonclient.http as triton

from conftest import REPO, Server
from test_server import infer_json, request


def test_model_configuration_as_tritonclient_reads_it(server):
    client = triton.InferenceServerClient(server.url)
    config = client.get_model_config("mlp")
    assert config["name"] == "mlp" and config["platform"] == "strata_executable"
    assert config["max_batch_size"] == 0
    assert config["input"] == [{"name": "x", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": [-1, 64]}]
    assert [(o["name"], o["data_type"], o["dims"]) for o in config["output"]] == [("probs", "TYPE_FP32", [-1, 10])]
    assert config["instance_group"] == [{"name": "mlp", "kind": "KIND_CPU", "count": 1}]
    assert config["parameters"]["function"] == {"string_value": "main"}
    # With dynamic batching, the batch dimension is max_batch_size's, as in Triton.
    batched = client.get_model_config("batched")
    assert batched["max_batch_size"] == 16 and batched["input"][0]["dims"] == [64]
    assert batched["dynamic_batching"]["max_queue_delay_microseconds"] == 20000
    slow = client.get_model_config("slow", "1")
    assert slow["parameters"]["max_queue_size"] == {"string_value": "2"}
    status, body, _ = request(server, "GET", "/v2/models/broken/config")
    assert status == 400 and "not a Strata executable" in json.loads(body)["error"]


def test_statistics_count_successes_failures_and_times(fresh_server):
    client = triton.InferenceServerClient(fresh_server.url)
    for batch in (1, 2, 3):
        assert request(fresh_server, "POST", "/v2/models/mlp/versions/1/infer",
                       infer_json(np.ones((batch, 64), np.float32)))[0] == 200
    assert request(fresh_server, "POST", "/v2/models/mlp/versions/1/infer",
                   infer_json(np.ones((2, 3), np.float32)))[0] == 400
    stats = client.get_inference_statistics("mlp", "1")["model_stats"]
    assert len(stats) == 1 and stats[0]["name"] == "mlp" and stats[0]["version"] == "1"
    s = stats[0]
    assert s["inference_count"] == 3 and s["execution_count"] == 3 and s["last_inference"] > 0
    infer = s["inference_stats"]
    assert infer["success"]["count"] == 3 and infer["fail"]["count"] == 1
    for part in ("queue", "compute_input", "compute_infer", "compute_output"):
        assert infer[part]["count"] == 3 and infer[part]["ns"] > 0, part
    assert infer["success"]["ns"] >= infer["compute_infer"]["ns"]
    assert [b["batch_size"] for b in s["batch_stats"]] == [1]
    every = client.get_inference_statistics()["model_stats"]
    assert {("mlp", "1"), ("mlp", "2"), ("slow", "1")} <= {(m["name"], m["version"]) for m in every}
    assert request(fresh_server, "GET", "/v2/models/nope/stats")[0] == 404


def test_readiness_is_strict_by_default_and_can_be_relaxed(repository, tmp_path):
    from test_hostile import make_repository

    clean = make_repository(tmp_path, repository, "mlp", "echo")
    served = Server(clean)
    try:
        assert triton.InferenceServerClient(served.url).is_server_ready()
    finally:
        served.stop()
    relaxed = Server(repository, "--strict-readiness", "false")
    try:
        assert triton.InferenceServerClient(relaxed.url).is_server_ready()
    finally:
        relaxed.stop()


def test_structured_logs_in_json(repository):
    served = Server(repository, "--log-format", "json", "--log-verbose", "1")
    try:
        assert request(served, "POST", "/v2/models/mlp/infer", infer_json(np.ones((2, 3), np.float32)))[0] == 400
    finally:
        served.stop()
    events = []
    for line in served.log_text().splitlines():
        if line.startswith("strata-server: listening on"):
            continue
        entry = json.loads(line)  # every other line is one JSON object
        assert {"time", "level", "event"} <= entry.keys()
        events.append(entry)
    names = [e["event"] for e in events]
    assert "listening" in names and "shutdown" in names and "stopped" in names
    loaded = [e for e in events if e["event"] == "model_loaded"]
    assert {"model": "mlp", "version": 2, "state": "READY"}.items() <= loaded[-1].items() or any(
        e.get("model") == "mlp" and e.get("version") == 2 for e in loaded)
    failed = [e for e in events if e["event"] == "model_load_failed" and e.get("model") == "broken"]
    assert failed and "not a Strata executable" in failed[0]["reason"]
    assert any(e["event"] == "request_failed" and e["status"] == 400 for e in events)


def test_bad_flags_are_refused_by_name(repository):
    import subprocess
    from conftest import SERVER

    for flags, message in [(["--model-control-mode", "sometimes"], "--model-control-mode must be"),
                           (["--load-model", "mlp"], "--load-model needs --model-control-mode explicit"),
                           (["--http-idle-timeout-secs", "0"], "--http-idle-timeout-secs must be"),
                           (["--log-format", "xml"], "--log-format must be"),
                           (["--model-file-access", "mmap"], "--model-file-access must be")]:
        run = subprocess.run([str(SERVER), "--model-repository", str(repository), *flags], capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 2 and message in run.stderr, (flags, run.stderr)


NAMED = REPO / "tests/fixtures/onnx_ops/graph_io_names"


def named_inputs(rows):
    rng = np.random.default_rng(rows)
    return {"input.1": rng.standard_normal((rows, 4), dtype=np.float32),
            "mask/0": rng.standard_normal((rows, 3), dtype=np.float32)}


def test_the_onnx_models_names_survive_compile_and_serve(server):
    client = triton.InferenceServerClient(server.url)
    metadata = client.get_model_metadata("named")
    assert [i["name"] for i in metadata["inputs"]] == ["input.1", "mask/0"]
    assert [(o["name"], o["shape"]) for o in metadata["outputs"]] == [("probs", [-1, 3]), ("logits", [-1, 3])]
    assert [o["name"] for o in client.get_model_config("named")["output"]] == ["probs", "logits"]
    session = ort.InferenceSession(str(NAMED / "model.onnx"), providers=["CPUExecutionProvider"])
    for rows in (1, 5):
        feeds = named_inputs(rows)
        probs, logits = session.run(["probs", "logits"], feeds)
        tensors = []
        for name, value in feeds.items():
            t = triton.InferInput(name, list(value.shape), "FP32")
            t.set_data_from_numpy(value, binary_data=rows == 5)
            tensors.append(t)
        # One output by its ONNX name, then both in the other order.
        only = client.infer("named", tensors, outputs=[triton.InferRequestedOutput("logits")])
        np.testing.assert_allclose(only.as_numpy("logits"), logits, rtol=1e-4, atol=1e-5)
        assert only.as_numpy("probs") is None
        both = client.infer("named", tensors, outputs=[triton.InferRequestedOutput("logits"),
                                                       triton.InferRequestedOutput("probs")])
        np.testing.assert_allclose(both.as_numpy("probs"), probs, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(both.as_numpy("logits"), logits, rtol=1e-4, atol=1e-5)
        every = client.infer("named", tensors)  # no outputs named: all of them, by name
        assert [o["name"] for o in every.get_response()["outputs"]] == ["probs", "logits"]
    status, body, _ = request(server, "POST", "/v2/models/named/infer", json.dumps(
        {"inputs": [{"name": "input.1", "shape": [1, 4], "datatype": "FP32", "data": [0, 0, 0, 0]},
                    {"name": "mask/0", "shape": [1, 3], "datatype": "FP32", "data": [0, 0, 0]}],
         "outputs": [{"name": "output0"}]}))
    assert status == 400 and "unknown output 'output0'; model 'named' has: probs, logits" in json.loads(body)["error"]
