"""strata-server against hostile and careless clients: one regression test per finding of issue 35.

Each test starts from what broke the server before (a crash, a hang, a wrong answer with 200,
invalid JSON) and checks what it does now. Timing-based figures (health latency under load) are
not asserted here: benchmarks/peers/server_hostile_mix.py measures them.
"""
import json
import os
import resource
import shutil
import signal
import socket
import threading
import time

import numpy as np
import pytest
import tritonclient.http as triton

from conftest import SANITIZED_SERVER, Server
from test_server import infer_json, mlp_reference, request


def raw_exchange(server, data, read_timeout=10, chunks=None):
    """Sends raw bytes; returns everything the server answers until it closes (or read_timeout)."""
    s = socket.create_connection(("localhost", server.port))
    s.settimeout(read_timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        pass
    s.close()
    return out


def status_of(raw):
    return int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/1.1 ") else 0


def json_body(raw):
    body = raw.split(b"\r\n\r\n", 1)[1]
    return json.loads(body.decode("utf-8"))  # raises on invalid UTF-8


def server_cpu_seconds(server):
    with open(f"/proc/{server.process.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(server):
    with open(f"/proc/{server.process.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


# ---- JSON ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", ["[" * 106_000, '{"inputs": ' + "[" * 500_000, "{\"a\":" * 200_000])
def test_deeply_nested_json_is_400_not_a_crash(server, body):
    status, data, _ = request(server, "POST", "/v2/models/mlp/infer", body)
    assert status == 400 and "invalid JSON" in json.loads(data)["error"]
    assert request(server, "GET", "/v2/health/live")[0] == 200


def test_deeply_nested_valid_data_is_refused_by_depth(server):
    data = "[" * 100_000 + "1" + "]" * 100_000
    body = '{"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32", "data": ' + data + "}]}"
    status, reply, _ = request(server, "POST", "/v2/models/mlp/infer", body)
    assert status == 400 and "at most 64 levels deep" in json.loads(reply)["error"]


def test_nan_and_infinity_travel_as_triton_writes_them(server):
    client = triton.InferenceServerClient(server.url)
    x = np.random.default_rng(1).standard_normal((3, 64), dtype=np.float32)
    x[0, 5] = np.nan
    x[1, :] = np.inf
    tensor = triton.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=False)  # NaN and Infinity in the request's JSON
    result = client.infer("mlp", [tensor], outputs=[triton.InferRequestedOutput("probs", binary_data=False)])
    np.testing.assert_allclose(result.as_numpy("probs"), mlp_reference(x), rtol=1e-4, atol=1e-5, equal_nan=True)
    status, body, _ = request(server, "POST", "/v2/models/mlp/infer", infer_json(x).replace("NaN", "NaN"))
    text = body.decode()
    assert status == 200 and "NaN" in text and ",," not in text and "[," not in text
    json.loads(text)  # Python's json reads NaN / Infinity


@pytest.mark.parametrize("value,datatype", [("1e39", "FP32"), ("-3.5e38", "FP32"), ("70000", "FP64")])
def test_a_finite_value_past_the_datatypes_range_is_400(server, value, datatype):
    data = [value] + ["0"] * 63
    body = ('{"inputs": [{"name": "x", "shape": [1, 64], "datatype": "%s", "data": [%s]}]}' %
            (datatype, ", ".join(data)))
    status, reply, _ = request(server, "POST", "/v2/models/mlp/infer", body)
    error = json.loads(reply)["error"]
    if datatype == "FP64":  # in range, but the model takes FP32: refused in the protocol's terms
        assert status == 400 and "datatype FP64 does not match the model's FP32" in error
    else:
        assert status == 400 and "element 0 of 'data' is not a valid FP32 value" in error


def test_error_bodies_are_valid_utf8(server):
    raw = raw_exchange(server, b"GET /v2/models/\xff\xfe\xc3/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status_of(raw) in (400, 404)
    assert "error" in json_body(raw)


# ---- model files changed on disk ------------------------------------------------------------------


def make_repository(tmp_path, source, *models):
    root = tmp_path / "repo"
    for name in models:
        (root / name / "1").mkdir(parents=True)
        shutil.copy(source / name / "1" / "model.stx", root / name / "1" / "model.stx")
    return root


def test_a_model_file_rewritten_in_place_changes_nothing(repository, tmp_path):
    root = make_repository(tmp_path, repository, "mlp")
    served = Server(root)
    try:
        x = np.ones((2, 64), np.float32)
        expected = mlp_reference(x)
        path = root / "mlp" / "1" / "model.stx"
        other = (repository / "echo" / "1" / "model.stx").read_bytes()
        with open(path, "r+b") as f:  # same inode, new content, shorter: what used to be SIGBUS
            f.write(other)
            f.truncate()
        status, body, _ = request(served, "POST", "/v2/models/mlp/infer", infer_json(x))
        assert status == 200
        np.testing.assert_allclose(np.array(json.loads(body)["outputs"][0]["data"], np.float32).reshape(2, 10),
                                   expected, rtol=1e-4, atol=1e-5)
        shutil.copy(repository / "mlp" / "1" / "model.stx", path)
        with open(path, "r+b") as f:  # zeroes over the weights: what used to give wrong answers with 200
            f.seek(path.stat().st_size // 2)
            f.write(b"\0" * 65536)
        status, body, _ = request(served, "POST", "/v2/models/mlp/infer", infer_json(x))
        np.testing.assert_allclose(np.array(json.loads(body)["outputs"][0]["data"], np.float32).reshape(2, 10),
                                   expected, rtol=1e-4, atol=1e-5)
    finally:
        assert served.stop() == 0


def test_mapped_model_files_serve_when_asked_for(repository, tmp_path):
    root = make_repository(tmp_path, repository, "mlp")
    served = Server(root, "--model-file-access", "map")
    try:
        x = np.ones((3, 64), np.float32)
        status, body, _ = request(served, "POST", "/v2/models/mlp/infer", infer_json(x))
        assert status == 200
        np.testing.assert_allclose(np.array(json.loads(body)["outputs"][0]["data"], np.float32).reshape(3, 10),
                                   mlp_reference(x), rtol=1e-4, atol=1e-5)
    finally:
        served.stop()


# ---- model control ----------------------------------------------------------------------------------


def test_control_mode_none_refuses_load_and_unload(server):
    for action in ("load", "unload"):
        status, body, _ = request(server, "POST", f"/v2/repository/models/mlp/{action}")
        assert status == 403 and "--model-control-mode explicit" in json.loads(body)["error"]
    assert triton.InferenceServerClient(server.url).is_model_ready("mlp")


def test_explicit_mode_loads_what_it_is_told_and_reports_failures(repository):
    served = Server(repository, "--model-control-mode", "explicit", "--load-model", "mlp")
    try:
        client = triton.InferenceServerClient(served.url)
        index = {(m["name"], m.get("version", "")): m for m in client.get_model_repository_index()}
        assert index[("mlp", "1")]["state"] == "READY" and index[("echo", "")]["reason"] == "unloaded"
        assert client.is_server_ready()  # only mlp should be loaded, and it is
        status, body, _ = request(served, "POST", "/v2/repository/models/broken/load")
        assert status == 400 and "not a Strata executable" in json.loads(body)["error"]
        assert not client.is_server_ready()  # a model asked for is unavailable
        status, body, _ = request(served, "GET", "/v2/health/ready")
        assert status == 503 and "model 'broken' is not ready" in json.loads(body)["error"]
        status, body, _ = request(served, "POST", "/v2/repository/models/nothere/load")
        assert status == 404
        client.unload_model("broken")
        assert client.is_server_ready()
        client.unload_model("mlp")
        assert not client.is_model_ready("mlp")
        client.load_model("mlp")
        assert client.is_model_ready("mlp")
    finally:
        served.stop()
    log = served.log_text()
    assert "model_load_failed" in log and "model=broken" in log and "not a Strata executable" in log
    assert "model_unloaded model=mlp" in log and "load_refused model=nothere" in log


def wait_for(predicate, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_poll_mode_picks_up_new_changed_and_removed_models(repository, tmp_path):
    root = make_repository(tmp_path, repository, "mlp")
    served = Server(root, "--model-control-mode", "poll", "--repository-poll-secs", "0.2")
    try:
        client = triton.InferenceServerClient(served.url)
        assert client.get_model_metadata("mlp")["versions"] == ["1"]
        assert request(served, "POST", "/v2/repository/models/mlp/unload")[0] == 403
        # A new version, written beside and renamed in (as deployments should).
        (root / "mlp" / "2").mkdir()
        shutil.copy(repository / "mlp" / "1" / "model.stx", root / "mlp" / "2" / "tmp.stx")
        os.rename(root / "mlp" / "2" / "tmp.stx", root / "mlp" / "2" / "model.stx")
        assert wait_for(lambda: client.get_model_metadata("mlp")["versions"] == ["1", "2"])
        assert wait_for(lambda: client.is_model_ready("mlp", "2"))
        # A new model.
        (root / "echo" / "1").mkdir(parents=True)
        shutil.copy(repository / "echo" / "1" / "model.stx", root / "echo" / "1" / "model.stx")
        assert wait_for(lambda: client.is_model_ready("echo"))
        # A changed file: version 1 becomes the echo model.
        shutil.copy(repository / "echo" / "1" / "model.stx", root / "mlp" / "1" / "tmp.stx")
        os.rename(root / "mlp" / "1" / "tmp.stx", root / "mlp" / "1" / "model.stx")
        assert wait_for(lambda: client.get_model_metadata("mlp", "1")["inputs"][0]["shape"] == [-1])
        # A broken replacement keeps the version that worked serving.
        (root / "mlp" / "2" / "tmp.stx").write_bytes(b"half a file")
        os.rename(root / "mlp" / "2" / "tmp.stx", root / "mlp" / "2" / "model.stx")
        assert wait_for(lambda: "model_reload_failed" in served.log_text())
        x = np.ones((1, 64), np.float32)
        assert request(served, "POST", "/v2/models/mlp/versions/2/infer", infer_json(x))[0] == 200
        # A removed model is unloaded.
        shutil.rmtree(root / "echo")
        assert wait_for(lambda: request(served, "GET", "/v2/models/echo")[0] == 404)
    finally:
        served.stop()


# ---- connections: descriptors, limits, timeouts ------------------------------------------------------


def test_out_of_descriptors_backs_off_instead_of_spinning(repository):
    served = Server(repository, "--http-max-connections", "10000", out_of_descriptors=True)
    resource.prlimit(served.process.pid, resource.RLIMIT_NOFILE, (96, 96))
    clients = []
    try:
        for _ in range(150):  # more than the server can hold: the rest wait in the backlog
            clients.append(socket.create_connection(("localhost", served.port)))
        time.sleep(1.0)
        before = server_cpu_seconds(served)
        time.sleep(2.0)
        spent = server_cpu_seconds(served) - before
        assert spent < 1.0, f"the server used {spent:.2f} s of CPU in 2 s with no requests: it spins"
        status, _, _ = request(served, "GET", "/v2/health/live")  # an idle connection makes room
        assert status == 200
        metrics = request(served, "GET", "/metrics")[1].decode()
        assert 'strata_http_connections_refused_total{reason="accept_emfile"}' in metrics
    finally:
        for c in clients:
            c.close()
        served.stop()
    assert "accept_backoff" in served.log_text()


def test_at_max_connections_the_longest_idle_connection_makes_room(repository):
    served = Server(repository, "--http-max-connections", "8")
    idle = [socket.create_connection(("localhost", served.port)) for _ in range(8)]
    try:
        time.sleep(0.5)
        for _ in range(3):  # each new client evicts one idle connection
            assert request(served, "GET", "/v2/health/live")[0] == 200
        idle[0].settimeout(5)
        assert idle[0].recv(10) == b""  # the oldest was closed
        metrics = request(served, "GET", "/metrics")[1].decode()
        assert 'strata_http_connections_refused_total{reason="evicted"}' in metrics
    finally:
        for c in idle:
            c.close()
        served.stop()


def test_slow_headers_stalled_bodies_and_idle_connections_time_out(repository):
    served = Server(repository, "--http-header-timeout-secs", "0.5", "--http-body-timeout-secs", "0.5",
                    "--http-idle-timeout-secs", "0.5")
    try:
        start = time.time()
        slow_header = raw_exchange(served, b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n")
        stalled_body = raw_exchange(
            served, b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"inputs\"")
        silent = raw_exchange(served, b"")
        assert slow_header == b"" and stalled_body == b"" and silent == b""
        assert time.time() - start < 9, "each should close after about 0.5 s, not at the client's 10 s timeout"
        s = socket.create_connection(("localhost", served.port))  # keep-alive, then idle
        s.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(10)
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        t = time.time()
        assert s.recv(10) == b"" and time.time() - t < 9
        s.close()
    finally:
        served.stop()


def test_stalled_bodies_release_their_memory(repository):
    served = Server(repository, "--http-body-timeout-secs", "1")
    stalled = []
    try:
        for _ in range(3):  # warm up the allocator and the threads
            request(served, "GET", "/v2/health/live")
        baseline = rss_mib(served)
        header = json.dumps({"inputs": [{"name": "x", "shape": [4_000_000], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 16_000_000}}]}).encode()
        for _ in range(10):
            s = socket.create_connection(("localhost", served.port))
            s.sendall(b"POST /v2/models/echo/infer HTTP/1.1\r\nHost: x\r\nInference-Header-Content-Length: %d\r\n"
                      b"Content-Length: %d\r\n\r\n" % (len(header), len(header) + 16_000_000) + header)
            s.sendall(b"\0" * 12_000_000)  # three quarters of it, then nothing
            stalled.append(s)
        time.sleep(0.2)
        peak = rss_mib(served)
        time.sleep(2.5)  # the body timeout closes them
        if not SANITIZED_SERVER:
            assert wait_for(lambda: rss_mib(served) < baseline + 40, timeout=10), (baseline, peak, rss_mib(served))
            assert peak > baseline + 40, "the stalled bodies should have been buffered"
        for s in stalled:  # each was closed by the body timeout
            s.settimeout(5)
            try:
                assert s.recv(1) == b""
            except ConnectionResetError:
                pass
        assert request(served, "GET", "/v2/health/live")[0] == 200
    finally:
        for s in stalled:
            s.close()
        served.stop()


def test_json_bodies_have_their_own_smaller_limit(server):
    big = infer_json(np.ones((1, 64), np.float32))[:-2] + ', "pad": "' + "x" * (17 << 20) + '"}'
    status, body, _ = request(server, "POST", "/v2/models/mlp/infer", big)
    assert status == 413 and "--max-json-body-bytes" in json.loads(body)["error"]
    # The same bytes as binary tensor data are within --max-body-bytes.
    client = triton.InferenceServerClient(server.url)
    x = np.ones(5_000_000, np.float32)
    tensor = triton.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=True)
    result = client.infer("echo", [tensor], outputs=[triton.InferRequestedOutput("output0", binary_data=True)])
    np.testing.assert_array_equal(result.as_numpy("output0"), x)


def test_sigterm_ends_even_when_a_client_never_reads_its_answer(repository):
    served = Server(repository, "--exit-timeout-secs", "2")
    x = np.ones(8_000_000, np.float32).tobytes()  # a 32 MB answer: more than the socket buffers hold
    header = json.dumps({"inputs": [{"name": "x", "shape": [8_000_000], "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(x)}}],
                         "outputs": [{"name": "output0", "parameters": {"binary_data": True}}]}).encode()
    s = socket.create_connection(("localhost", served.port))
    s.sendall(b"POST /v2/models/echo/infer HTTP/1.1\r\nHost: x\r\nInference-Header-Content-Length: %d\r\n"
              b"Content-Length: %d\r\n\r\n" % (len(header), len(header) + len(x)) + header + x)
    time.sleep(1.0)  # the answer is being written, and never read
    start = time.time()
    served.stop(signal.SIGTERM, timeout=30)
    assert time.time() - start < 15
    assert "exit_timeout" in served.log_text()
    s.close()


# ---- HTTP framing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("head,status,message", [
    (b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "malformed HTTP"),
    (b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400,
     "malformed HTTP"),
    (b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
     400, "malformed HTTP request"),  # Beast's words, or ours: "both Transfer-Encoding and Content-Length"
    (b"GET /v2/" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "--http-max-url-bytes"),
    (b"GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n", 431, "--http-max-header-bytes"),
    (b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n", 413,
     "--max-json-body-bytes"),
])
def test_malformed_framing_gets_its_status(server, head, status, message):
    raw = raw_exchange(server, head)
    assert status_of(raw) == status, raw[:200]
    assert message in json_body(raw)["error"]
    assert b"Connection: close" in raw


def test_expect_100_continue_is_answered(server):
    body = infer_json(np.ones((1, 64), np.float32)).encode()
    s = socket.create_connection(("localhost", server.port))
    s.settimeout(10)
    s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body))
    assert s.recv(4096).startswith(b"HTTP/1.1 100 Continue")
    s.sendall(body)
    answer = b""
    while b"model_name" not in answer:
        answer += s.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200")
    s.close()
    # Too large: refused at once, without inviting the body.
    raw = raw_exchange(server, b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                               b"Content-Length: 500000000\r\n\r\n")
    assert status_of(raw) == 413 and b"100 Continue" not in raw
