"""strata-server end to end: a real server on loopback, real clients (tritonclient[http] and plain HTTP)."""
import http.client
import json
import signal
import socket
import threading
import time

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.http as triton
from tritonclient.utils import InferenceServerException

from conftest import REPO

MLP = REPO / "tests/fixtures/onnx/mlp/model.onnx"


def mlp_reference(x):
    session = ort.InferenceSession(str(MLP), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def request(server, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("localhost", server.port, timeout=60)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data, response


def infer_json(x, name="x"):
    return json.dumps({"inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32",
                                   "data": x.ravel().tolist()}]})


# ---- health, metadata, repository ------------------------------------------------------


def test_health_and_server_metadata(server):
    client = triton.InferenceServerClient(server.url)
    # The repository holds models that cannot load: strict readiness (the default) says not ready, and why.
    assert client.is_server_live() and not client.is_server_ready()
    status, body, _ = request(server, "GET", "/v2/health/ready")
    assert status == 503 and "is not ready" in json.loads(body)["error"]
    metadata = client.get_server_metadata()
    assert metadata["name"] == "strata-server"
    for extension in ("binary_tensor_data", "model_repository", "model_configuration", "statistics"):
        assert extension in metadata["extensions"]


def test_model_metadata_has_symbolic_dims_as_minus_one(server):
    client = triton.InferenceServerClient(server.url)
    metadata = client.get_model_metadata("mlp")
    assert metadata["versions"] == ["1", "2"]
    assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 64]}]
    assert metadata["outputs"] == [{"name": "probs", "datatype": "FP32", "shape": [-1, 10]}]
    assert client.get_model_metadata("mlp", "1")["name"] == "mlp"


def test_readiness_of_models_and_versions(server):
    client = triton.InferenceServerClient(server.url)
    assert client.is_model_ready("mlp") and client.is_model_ready("mlp", "1")
    assert not client.is_model_ready("broken")
    assert not client.is_model_ready("badcfg")
    assert not client.is_model_ready("mlp", "7")
    assert not client.is_model_ready("nope")


def test_not_ready_models_say_why(server):
    status, body, _ = request(server, "GET", "/v2/models/broken")
    assert status == 400 and "not a Strata executable" in json.loads(body)["error"]
    status, body, _ = request(server, "GET", "/v2/models/badcfg")
    assert status == 400 and "field 'instance_cnt': unknown field" in json.loads(body)["error"]
    index = triton.InferenceServerClient(server.url).get_model_repository_index()
    states = {(m["name"], m.get("version", "")): m["state"] for m in index}
    assert states[("mlp", "1")] == "READY" and states[("mlp", "2")] == "READY"
    assert states[("broken", "1")] == "UNAVAILABLE" and states[("badcfg", "")] == "UNAVAILABLE"


# ---- inference ---------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("batch", [1, 5, 16])
def test_infer_matches_onnxruntime(server, binary, batch):
    client = triton.InferenceServerClient(server.url)
    x = np.random.default_rng(batch).standard_normal((batch, 64), dtype=np.float32)
    tensor = triton.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=binary)
    result = client.infer("mlp", [tensor], outputs=[triton.InferRequestedOutput("probs", binary_data=binary)],
                          request_id=f"req-{batch}")
    np.testing.assert_allclose(result.as_numpy("probs"), mlp_reference(x), rtol=1e-4, atol=1e-5)
    response = result.get_response()
    assert response["id"] == f"req-{batch}" and response["model_version"] == "2"


def test_infer_a_named_version_and_all_outputs_by_default(server):
    x = np.ones((2, 64), np.float32)
    status, body, _ = request(server, "POST", "/v2/models/mlp/versions/1/infer", infer_json(x))
    assert status == 200
    response = json.loads(body)
    assert response["model_version"] == "1" and [o["name"] for o in response["outputs"]] == ["probs"]
    np.testing.assert_allclose(np.array(response["outputs"][0]["data"], np.float32).reshape(2, 10),
                               mlp_reference(x), rtol=1e-4, atol=1e-5)


# ---- errors --------------------------------------------------------------------------------


def test_wrong_shape_is_400_in_the_protocols_terms(server):
    client = triton.InferenceServerClient(server.url)
    x = np.ones((3, 63), np.float32)
    tensor = triton.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    with pytest.raises(InferenceServerException) as caught:
        client.infer("mlp", [tensor])
    assert caught.value.status() == "400"
    assert "input 'x': dimension 1 is 63, the model's shape [-1, 64] needs 64" in caught.value.message()


def test_wrong_datatype_is_400_in_the_protocols_terms(server):
    client = triton.InferenceServerClient(server.url)
    x = np.ones((3, 64), np.float64)
    tensor = triton.InferInput("x", list(x.shape), "FP64")
    tensor.set_data_from_numpy(x)
    with pytest.raises(InferenceServerException) as caught:
        client.infer("mlp", [tensor])
    assert caught.value.status() == "400"
    assert caught.value.message() == "input 'x': datatype FP64 does not match the model's FP32"


def test_batch_past_its_bound_is_400(server):
    status, body, _ = request(server, "POST", "/v2/models/mlp/infer", infer_json(np.ones((17, 64), np.float32)))
    assert status == 400 and "batch" in json.loads(body)["error"]


@pytest.mark.parametrize("body,message", [
    ("{not json", "invalid JSON"),
    ('{"inputs": 3}', "'inputs' array"),
    ('{"inputs": [{"name": "y", "shape": [1], "datatype": "FP32", "data": [1]}]}', "unknown input 'y'"),
    ('{"inputs": [{"name": "x", "shape": [1, 64], "datatype": "BYTES", "data": []}]}', "'BYTES' is not supported"),
    ('{"inputs": [{"name": "x", "shape": [2, 64], "datatype": "FP32", "data": [1, 2]}]}', "has 2 elements"),
    ('{"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32", "data": ["a"' + ", 0" * 63 + "]}]}",
     "not a valid FP32"),
    ('{"inputs": [{"name": "x", "shape": [1, 1], "datatype": "FP32", "data": [1]}]}',
     "input 'x': dimension 1 is 1, the model's shape [-1, 64] needs 64"),
    ('{"inputs": []}', "missing input 'x'"),
    ('{"inputs": [{"name": "x", "shape": [-1, 64], "datatype": "FP32", "data": []}]}', "non-negative"),
])
def test_bad_requests_are_400(server, body, message):
    status, data, _ = request(server, "POST", "/v2/models/mlp/infer", body)
    assert status == 400, data
    assert message in json.loads(data)["error"]


def test_binary_size_that_overruns_the_body_is_400(server):
    header = json.dumps({"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32",
                                     "parameters": {"binary_data_size": 256}}]}).encode()
    status, data, _ = request(server, "POST", "/v2/models/mlp/infer", header + b"\0" * 100,
                              {"Inference-Header-Content-Length": str(len(header))})
    assert status == 400 and "runs past the end" in json.loads(data)["error"]


def test_unknown_model_version_and_path_are_404(server):
    x = infer_json(np.ones((1, 64), np.float32))
    assert request(server, "POST", "/v2/models/nope/infer", x)[0] == 404
    assert request(server, "POST", "/v2/models/mlp/versions/9/infer", x)[0] == 404
    assert request(server, "GET", "/v3/health/live")[0] == 404
    assert request(server, "DELETE", "/v2/models/mlp")[0] == 404


def test_body_over_the_limit_is_413(repository):
    from conftest import Server

    small = Server(repository, "--max-body-bytes", "1000")
    try:
        status, data, _ = request(small, "POST", "/v2/models/mlp/infer", infer_json(np.ones((4, 64), np.float32)))
        assert status == 413 and "limit of 1000 bytes" in json.loads(data)["error"]
        assert request(small, "GET", "/v2/health/live")[0] == 200  # the server goes on
    finally:
        small.stop()


def test_full_queue_is_503_and_the_others_are_answered(server):
    x = json.dumps({"inputs": [{"name": "x", "shape": [400], "datatype": "FP32", "data": [1.0] * 400}]})
    statuses = []

    def call():
        statuses.append(request(server, "POST", "/v2/models/slow/infer", x)[0])

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # One instance and a queue of two: some are answered, the rest turned away at once.
    assert statuses.count(200) >= 1 and statuses.count(503) >= 1
    assert set(statuses) <= {200, 503}


def test_client_that_disconnects_mid_request_harms_no_one(server):
    body = infer_json(np.ones((2, 64), np.float32)).encode()
    for cut in (10, len(body) // 2):
        s = socket.create_connection(("localhost", server.port))
        s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
        s.sendall(body[:cut])
        s.close()
    s = socket.create_connection(("localhost", server.port))  # garbage that is not HTTP
    s.sendall(b"\x00\x01\x02 this is not http\r\n\r\n")
    s.close()
    status, _, _ = request(server, "POST", "/v2/models/mlp/infer", body)
    assert status == 200


# ---- repository extension and shutdown ------------------------------------------------------


def test_unload_and_load_while_requests_run(repository):
    from conftest import Server

    fresh_server = Server(repository, "--model-control-mode", "explicit", "--load-model", "*")
    try:
        unload_and_load_while_requests_run(fresh_server)
    finally:
        fresh_server.stop()


def unload_and_load_while_requests_run(fresh_server):
    client = triton.InferenceServerClient(fresh_server.url)
    x = np.ones((4, 64), np.float32)
    expected = mlp_reference(x)
    stop, failures, answered = threading.Event(), [], []

    def traffic():
        while not stop.is_set():
            status, data, _ = request(fresh_server, "POST", "/v2/models/mlp/infer", infer_json(x))
            if status == 200:
                out = np.array(json.loads(data)["outputs"][0]["data"], np.float32).reshape(4, 10)
                np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
                answered.append(1)
            elif status != 404:  # 404 only while the model is unloaded
                failures.append((status, data))

    threads = [threading.Thread(target=traffic) for _ in range(3)]
    for t in threads:
        t.start()
    for _ in range(5):
        client.unload_model("mlp")
        assert not client.is_model_ready("mlp")
        client.load_model("mlp")
        assert client.is_model_ready("mlp")
    stop.set()
    for t in threads:
        t.join()
    assert not failures and answered
    with pytest.raises(InferenceServerException):
        client.load_model("no_such_model")


def test_sigterm_answers_every_request_in_flight(fresh_server):
    x = json.dumps({"inputs": [{"name": "x", "shape": [800], "datatype": "FP32", "data": [1.0] * 800}]})
    results = []

    def call():
        results.append(request(fresh_server, "POST", "/v2/models/slow/infer", x)[0])

    threads = [threading.Thread(target=call) for _ in range(2)]  # one running, one queued
    for t in threads:
        t.start()
    time.sleep(0.3)
    code = fresh_server.stop(signal.SIGTERM)
    for t in threads:
        t.join()
    assert code == 0, "".join(fresh_server.log)
    assert results == [200, 200]


# ---- metrics ---------------------------------------------------------------------------------


def metric(text, name, **labels):
    """The value of one sample of the Prometheus text `text` (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(name + "{") and line.split("{", 1)[1].split("}", 1)[0] == want:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_count_requests_failures_and_times(fresh_server):
    x = infer_json(np.ones((2, 64), np.float32))
    for _ in range(3):
        assert request(fresh_server, "POST", "/v2/models/mlp/versions/1/infer", x)[0] == 200
    assert request(fresh_server, "POST", "/v2/models/mlp/versions/1/infer", infer_json(np.ones((2, 3), np.float32)))[0] == 400
    assert request(fresh_server, "POST", "/v2/models/mlp/versions/1/infer", infer_json(np.ones((17, 64), np.float32)))[0] == 400
    status, body, response = request(fresh_server, "GET", "/metrics")
    assert status == 200 and response.getheader("Content-Type").startswith("text/plain")
    text = body.decode()
    assert "# TYPE strata_inference_requests_total counter" in text
    assert metric(text, "strata_inference_requests_total", model="mlp", version="1") == 5
    assert metric(text, "strata_inference_failures_total", model="mlp", version="1", status="400") == 2
    # Three ran successfully; the wrong fixed dimension was refused before running, the batch past its
    # bound ran (the VM's check of the symbolic bound found it): four runs.
    assert metric(text, "strata_inference_compute_seconds_count", model="mlp", version="1") == 4
    assert metric(text, "strata_inference_queue_seconds_bucket", model="mlp", version="1", le="+Inf") == 4
    assert metric(text, "strata_inference_batch_size_bucket", model="mlp", version="1", le="1") == 4
    assert metric(text, "strata_inference_compute_seconds_sum", model="mlp", version="1") > 0


# ---- dynamic batching --------------------------------------------------------------------------


def test_dynamic_batching_joins_concurrent_requests_and_splits_the_answers(fresh_server):
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((1 + i % 3, 64), dtype=np.float32) for i in range(12)]
    results = [None] * len(inputs)

    def call(i):
        status, data, _ = request(fresh_server, "POST", "/v2/models/batched/infer", infer_json(inputs[i]))
        assert status == 200, data
        out = json.loads(data)["outputs"][0]
        results[i] = np.array(out["data"], np.float32).reshape(out["shape"])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, y in zip(inputs, results):  # each request gets its own rows back
        np.testing.assert_allclose(y, mlp_reference(x), rtol=1e-4, atol=1e-5)
    text = request(fresh_server, "GET", "/metrics")[1].decode()
    runs_of_one = metric(text, "strata_inference_batch_size_bucket", model="batched", version="1", le="1")
    assert metric(text, "strata_inference_requests_total", model="batched", version="1") == len(inputs)
    assert runs_of_one < len(inputs), "no request ran in a batch"


def test_a_bad_request_in_a_batch_fails_alone(fresh_server):
    good = np.ones((2, 64), np.float32)
    statuses = {}

    def call(name, body):
        statuses[name] = request(fresh_server, "POST", "/v2/models/batched/infer", body)[0]

    # 17 rows: past the model's bound of 16, so it cannot run, batched or not.
    threads = [threading.Thread(target=call, args=(f"good{i}", infer_json(good))) for i in range(4)]
    threads.append(threading.Thread(target=call, args=("bad", infer_json(np.ones((17, 64), np.float32)))))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses.pop("bad") == 400
    assert set(statuses.values()) == {200}


def test_batching_a_function_without_a_batch_dimension_is_not_ready(server):
    status, body, _ = request(server, "GET", "/v2/models/unbatchable")
    assert status == 400
    assert "dynamic_batching needs a batch dimension" in json.loads(body)["error"]


def test_a_request_timeout_shorter_than_its_wait_is_503(server):
    slow = json.dumps({"inputs": [{"name": "x", "shape": [800], "datatype": "FP32", "data": [1.0] * 800}]})
    hasty = json.dumps({"parameters": {"timeout": 1000},  # 1 ms, in microseconds as Triton's clients send it
                        "inputs": [{"name": "x", "shape": [8], "datatype": "FP32", "data": [1.0] * 8}]})
    first = threading.Thread(target=lambda: request(server, "POST", "/v2/models/slow/infer", slow))
    first.start()
    time.sleep(0.2)  # the slow request holds the model's one instance
    status, data, _ = request(server, "POST", "/v2/models/slow/infer", hasty)
    first.join()
    assert status == 503 and "timed out" in json.loads(data)["error"]
    # With the instance free, a request runs. (Its own timeout is 10 s: 1 ms can pass before a loaded machine
    # schedules the run, as under the sanitizers it did.)
    patient = hasty.replace('"timeout": 1000', '"timeout": 10000000')
    assert request(server, "POST", "/v2/models/slow/infer", patient)[0] == 200
    bad = hasty.replace('"timeout": 1000', '"timeout": -5')
    assert request(server, "POST", "/v2/models/slow/infer", bad)[0] == 400


def test_device_options_from_the_config_open_the_npu(server):
    image = np.random.default_rng(3).standard_normal((1, 3, 16, 16), dtype=np.float32)
    body = json.dumps({"inputs": [{"name": "image", "shape": [1, 3, 16, 16], "datatype": "FP32",
                                   "data": image.ravel().tolist()}]})
    status, data, _ = request(server, "POST", "/v2/models/cnn_npu/infer", body)
    assert status == 200, data
    out = json.loads(data)["outputs"][0]
    session = ort.InferenceSession(str(REPO / "tests/fixtures/onnx/cnn/model.onnx"), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"image": image})[0]
    np.testing.assert_allclose(np.array(out["data"], np.float32).reshape(out["shape"]), expected, rtol=1e-4, atol=1e-4)
    status, data, _ = request(server, "GET", "/v2/models/npu_badopt")
    assert status == 400 and "sim_npu" in json.loads(data)["error"]
