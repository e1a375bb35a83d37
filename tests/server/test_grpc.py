"""strata-server's gRPC endpoint end to end: the KServe v2 / Triton GRPCInferenceService on a real server, called by
tritonclient[grpc] (and by grpcio's stub for what tritonclient never sends), its answers compared with the HTTP
endpoint's and with onnxruntime's."""
import json
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import urllib.request

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from google.protobuf import descriptor_pb2, descriptor_pool, json_format
from tritonclient.grpc import model_config_pb2, service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

from conftest import REPO, SERVER
from grpc_fixtures import GrpcServer, fresh_grpc_server, grpc_server  # noqa: F401 (fixtures)
from test_server import metric, mlp_reference


def clients(server):
    return grpcclient.InferenceServerClient(server.grpc_url), httpclient.InferenceServerClient(server.url)


def mlp_input(x):
    tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return tensor


def vector_input(n):
    return mlp_input(np.ones(n, np.float32))


def grpc_error(call, *args, **kwargs):
    """The InferenceServerException `call` raises: its gRPC status name (NOT_FOUND, ...) and message."""
    with pytest.raises(InferenceServerException) as caught:
        call(*args, **kwargs)
    status = caught.value.status() or ""
    return status.removeprefix("StatusCode."), caught.value.message()


def stub(server):
    return service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(server.grpc_url))


def http_config_as_proto(config):
    """HTTP's model configuration as Triton's ModelConfig: the HTTP document gives outputs a format, which
    Triton's ModelOutput lacks."""
    config = json.loads(json.dumps(config))
    for output in config.get("output", []):
        output.pop("format", None)
    return json_format.ParseDict(config, model_config_pb2.ModelConfig())


# ---- the protocol file ------------------------------------------------------------------------------


def test_proto_declares_what_tritonclient_sends_and_expects(tmp_path):
    """Every message, field (number, type, label), enum value and RPC of apps/server/proto is tritonclient's."""
    protoc = shutil.which("protoc")
    assert protoc, "protoc (protobuf-compiler) is needed to build strata-server"
    out = tmp_path / "ours.pb"
    subprocess.run([protoc, "-I", str(REPO), "--include_imports", f"--descriptor_set_out={out}",
                    "apps/server/proto/grpc_service.proto"], check=True, cwd=REPO)
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    ours = descriptor_pool.DescriptorPool()
    for f in files.file:
        ours.Add(f)
    theirs = service_pb2.DESCRIPTOR.pool

    def signature(field):
        return (field.number, field.type, field.is_repeated,
                field.message_type.full_name if field.message_type else None,
                field.enum_type.full_name if field.enum_type else None,
                field.containing_oneof.name if field.containing_oneof else None)

    def messages(descriptor):
        yield descriptor
        for nested in descriptor.nested_types:
            yield from messages(nested)

    checked = 0
    for f in files.file:
        file = ours.FindFileByName(f.name)
        for top in file.message_types_by_name.values():
            for message in messages(top):
                reference = theirs.FindMessageTypeByName(message.full_name)
                for field in message.fields:
                    assert field.name in reference.fields_by_name, f"{message.full_name}.{field.name}"
                    assert signature(field) == signature(reference.fields_by_name[field.name]), \
                        f"{message.full_name}.{field.name}"
                    checked += 1
        for enum in file.enum_types_by_name.values():
            reference = theirs.FindEnumTypeByName(enum.full_name)
            assert {v.name: v.number for v in enum.values}.items() <= \
                {v.name: v.number for v in reference.values}.items(), enum.full_name
    service = ours.FindServiceByName("inference.GRPCInferenceService")
    reference = theirs.FindServiceByName("inference.GRPCInferenceService")
    for method in service.methods:
        expected = reference.methods_by_name[method.name]
        assert (method.input_type.full_name, method.output_type.full_name, method.server_streaming) == \
            (expected.input_type.full_name, expected.output_type.full_name, expected.server_streaming)
    assert len(service.methods) == 11 and checked > 100


# ---- health, metadata, configuration, repository -------------------------------------------------


def test_health_and_server_metadata_equal_http(grpc_server):
    g, h = clients(grpc_server)
    assert g.is_server_live()
    # The repository holds models that cannot load: strict readiness says not ready, on both endpoints.
    assert not g.is_server_ready() and not h.is_server_ready()
    metadata = g.get_server_metadata()
    assert metadata == json_format.ParseDict(h.get_server_metadata(), service_pb2.ServerMetadataResponse())
    assert metadata.name == "strata-server" and "statistics" in metadata.extensions


def test_server_ready_without_strict_readiness(repository):
    server = GrpcServer(repository, "--strict-readiness", "false")
    try:
        assert grpcclient.InferenceServerClient(server.grpc_url).is_server_ready()
    finally:
        server.stop()


@pytest.mark.parametrize("model,version", [("mlp", ""), ("mlp", "1"), ("echo", ""), ("batched", "")])
def test_model_metadata_equals_http(grpc_server, model, version):
    g, h = clients(grpc_server)
    metadata = g.get_model_metadata(model, version)
    assert metadata == json_format.ParseDict(h.get_model_metadata(model, version),
                                             service_pb2.ModelMetadataResponse())
    if model == "mlp":
        assert list(metadata.versions) == ["1", "2"]
        assert [(t.name, t.datatype, list(t.shape)) for t in metadata.inputs] == [("x", "FP32", [-1, 64])]
        assert [(t.name, t.datatype, list(t.shape)) for t in metadata.outputs] == [("probs", "FP32", [-1, 10])]


@pytest.mark.parametrize("model", ["mlp", "batched", "cnn_npu", "slow"])
def test_model_config_equals_http(grpc_server, model):
    g, h = clients(grpc_server)
    config = g.get_model_config(model).config
    assert config == http_config_as_proto(h.get_model_config(model))
    assert config.name == model and config.platform == "strata_executable" and config.backend == "strata"
    assert config.parameters["function"].string_value == "main"
    assert config.instance_group[0].kind == model_config_pb2.ModelInstanceGroup.KIND_CPU
    if model == "batched":
        assert config.max_batch_size == 16 and list(config.input[0].dims) == [64]
        assert config.dynamic_batching.max_queue_delay_microseconds == 20000
    if model == "slow":
        assert config.instance_group[0].count == 1 and config.parameters["max_queue_size"].string_value == "2"


@pytest.mark.parametrize("ready", [False, True])
def test_repository_index_equals_http(grpc_server, ready):
    g, h = clients(grpc_server)
    # tritonclient asks for every model; the ready flag is the protocol's, sent by the stub.
    index = stub(grpc_server).RepositoryIndex(service_pb2.RepositoryIndexRequest(ready=True)) if ready \
        else g.get_model_repository_index()
    http_index = h.get_model_repository_index()
    if ready:
        http_index = [m for m in http_index if m["state"] == "READY"]
    assert index == json_format.ParseDict({"models": http_index}, service_pb2.RepositoryIndexResponse())
    states = {(m.name, m.version): m.state for m in index.models}
    assert states[("mlp", "1")] == "READY"
    assert (("broken", "1") in states) != ready


def test_model_readiness_is_false_rather_than_an_error(grpc_server):
    g, _ = clients(grpc_server)
    assert g.is_model_ready("mlp") and g.is_model_ready("mlp", "1")
    for model, version in [("broken", ""), ("badcfg", ""), ("mlp", "7"), ("nope", "")]:
        assert not g.is_model_ready(model, version), (model, version)


# ---- inference ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch", [1, 5, 16])
def test_infer_matches_onnxruntime_and_http(grpc_server, batch):
    g, h = clients(grpc_server)
    x = np.random.default_rng(batch).standard_normal((batch, 64), dtype=np.float32)
    result = g.infer("mlp", [mlp_input(x)], request_id=f"req-{batch}")
    out = result.as_numpy("probs")
    np.testing.assert_allclose(out, mlp_reference(x), rtol=1e-4, atol=1e-5)
    http_input = httpclient.InferInput("x", list(x.shape), "FP32")
    http_input.set_data_from_numpy(x, binary_data=True)
    np.testing.assert_array_equal(out, h.infer("mlp", [http_input]).as_numpy("probs"))
    response = result.get_response()
    assert response.id == f"req-{batch}" and response.model_name == "mlp" and response.model_version == "2"
    assert [(o.name, o.datatype, list(o.shape)) for o in response.outputs] == [("probs", "FP32", [batch, 10])]
    assert len(response.raw_output_contents) == 1  # raw, as tritonclient reads by default


def test_infer_a_named_version_and_outputs_by_name(grpc_server):
    g, _ = clients(grpc_server)
    x = np.ones((2, 64), np.float32)
    result = g.infer("mlp", [mlp_input(x)], model_version="1", outputs=[grpcclient.InferRequestedOutput("probs")])
    assert result.get_response().model_version == "1"
    np.testing.assert_allclose(result.as_numpy("probs"), mlp_reference(x), rtol=1e-4, atol=1e-5)
    code, message = grpc_error(g.infer, "mlp", [mlp_input(x)], outputs=[grpcclient.InferRequestedOutput("nope")])
    assert code == "INVALID_ARGUMENT" and "unknown output 'nope'" in message and "probs" in message


def contents_request(x, **contents):
    request = service_pb2.ModelInferRequest(model_name="mlp", id="typed")
    tensor = request.inputs.add(name="x", datatype="FP32", shape=list(x.shape))
    for field, values in (contents or {"fp32_contents": x.ravel().tolist()}).items():
        getattr(tensor.contents, field).extend(values)
    return request


def test_typed_contents_are_decoded_and_checked(grpc_server):
    """tritonclient always sends raw_input_contents; the protocol's typed contents come from other clients."""
    calls = stub(grpc_server)
    x = np.random.default_rng(7).standard_normal((3, 64), dtype=np.float32)
    response = calls.ModelInfer(contents_request(x))
    assert response.id == "typed"
    out = np.frombuffer(response.raw_output_contents[0], np.float32).reshape(3, 10)
    np.testing.assert_allclose(out, mlp_reference(x), rtol=1e-4, atol=1e-5)

    def refused(request):
        with pytest.raises(grpc.RpcError) as caught:
            calls.ModelInfer(request)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        return caught.value.details()

    assert "takes its elements in fp32_contents, the request sets int_contents" in refused(
        contents_request(x, int_contents=[1] * x.size))
    assert "fp32_contents has 3 elements, the shape (3, 64) needs 192" in refused(
        contents_request(x, fp32_contents=[1.0, 2.0, 3.0]))
    assert "fp32_contents is empty" in refused(contents_request(x, fp32_contents=[]))
    both = contents_request(x)
    both.raw_input_contents.append(x.tobytes())
    assert "sets contents while the request uses raw_input_contents" in refused(both)
    short = contents_request(x, fp32_contents=[])
    short.raw_input_contents.append(x.tobytes()[:-4])
    assert "raw_input_contents[0] has 764 bytes, the shape (3, 64) of FP32 needs 768" in refused(short)
    bad_timeout = contents_request(x)
    bad_timeout.parameters["timeout"].string_param = "soon"
    assert "parameters[\"timeout\"] must be a non-negative int64_param" in refused(bad_timeout)


def test_errors_are_in_the_protocols_terms(grpc_server):
    g, _ = clients(grpc_server)
    x = np.ones((2, 64), np.float32)
    code, message = grpc_error(g.infer, "nope", [mlp_input(x)])
    assert code == "NOT_FOUND" and "unknown model 'nope'" in message
    assert grpc_error(g.infer, "mlp", [mlp_input(x)], model_version="9")[0] == "NOT_FOUND"
    assert grpc_error(g.get_model_metadata, "nope")[0] == "NOT_FOUND"
    assert grpc_error(g.get_model_config, "nope")[0] == "NOT_FOUND"
    assert grpc_error(g.get_inference_statistics, "nope")[0] == "NOT_FOUND"
    assert grpc_error(g.get_inference_statistics, "mlp", "9")[0] == "NOT_FOUND"

    wrong_type = grpcclient.InferInput("x", [2, 64], "FP64")
    wrong_type.set_data_from_numpy(x.astype(np.float64))
    code, message = grpc_error(g.infer, "mlp", [wrong_type])
    assert code == "INVALID_ARGUMENT" and "datatype FP64 does not match the model's FP32" in message
    code, message = grpc_error(g.infer, "mlp", [mlp_input(np.ones((2, 63), np.float32))])
    assert code == "INVALID_ARGUMENT" and "dimension 1 is 63" in message
    code, message = grpc_error(g.infer, "mlp", [mlp_input(np.ones((17, 64), np.float32))])
    assert code == "INVALID_ARGUMENT"
    code, message = grpc_error(g.infer, "mlp", [])
    assert code == "INVALID_ARGUMENT" and "missing input 'x'" in message
    code, message = grpc_error(g.infer, "broken", [mlp_input(x)])
    assert code == "INVALID_ARGUMENT" and "not a Strata executable" in message
    code, message = grpc_error(g.get_model_config, "badcfg")
    assert code == "INVALID_ARGUMENT" and "field 'instance_cnt': unknown field" in message


def test_rpcs_it_does_not_serve_are_unimplemented(grpc_server):
    g, _ = clients(grpc_server)
    assert grpc_error(g.get_system_shared_memory_status)[0] == "UNIMPLEMENTED"
    assert grpc_error(g.get_trace_settings)[0] == "UNIMPLEMENTED"
    errors = []
    g.start_stream(callback=lambda result, error: errors.append(error))
    try:
        g.async_stream_infer("mlp", [mlp_input(np.ones((1, 64), np.float32))])
    except InferenceServerException:
        pass  # the stream was refused before the request went: the callback has the reason
    deadline = time.time() + 30
    while not errors and time.time() < deadline:
        time.sleep(0.05)
    g.stop_stream()
    assert errors and "UNIMPLEMENTED" in str(errors[0].status())
    assert g.is_server_live()


def test_load_and_unload_are_refused_in_control_mode_none(grpc_server):
    g, _ = clients(grpc_server)
    for call in (g.load_model, g.unload_model):
        code, message = grpc_error(call, "mlp")
        assert code == "FAILED_PRECONDITION" and "explicit" in message
    assert g.is_model_ready("mlp")


def test_load_and_unload_in_explicit_mode(repository):
    server = GrpcServer(repository, "--model-control-mode", "explicit", "--load-model", "mlp")
    try:
        g, h = clients(server)
        assert not g.is_model_ready("echo")
        g.load_model("echo")
        assert g.is_model_ready("echo") and h.is_model_ready("echo")
        np.testing.assert_array_equal(g.infer("echo", [vector_input(5)]).as_numpy("output0"), np.ones(5))
        g.unload_model("echo")
        assert not g.is_model_ready("echo")
        assert grpc_error(g.infer, "echo", [vector_input(5)])[0] == "NOT_FOUND"
        assert grpc_error(g.load_model, "no_such_model")[0] == "NOT_FOUND"
        code, message = grpc_error(g.load_model, "echo", config='{"max_batch_size": 4}')
        assert code == "INVALID_ARGUMENT" and "not supported" in message
        assert not g.is_model_ready("echo")
    finally:
        server.stop()


def test_unload_and_load_while_grpc_requests_run(repository):
    """Calls routed to a version that is unloaded meanwhile are answered; the last of them releases it."""
    server = GrpcServer(repository, "--model-control-mode", "explicit", "--load-model", "*")
    try:
        x = np.ones((4, 64), np.float32)
        expected = mlp_reference(x)
        stop, failures, answered = threading.Event(), [], []

        def traffic():
            g = grpcclient.InferenceServerClient(server.grpc_url)
            while not stop.is_set():
                try:
                    out = g.infer("mlp", [mlp_input(x)]).as_numpy("probs")
                    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
                    answered.append(1)
                except InferenceServerException as e:
                    if e.status() != "StatusCode.NOT_FOUND":  # only while the model is unloaded
                        failures.append((e.status(), e.message()))

        threads = [threading.Thread(target=traffic) for _ in range(3)]
        for t in threads:
            t.start()
        g = grpcclient.InferenceServerClient(server.grpc_url)
        for _ in range(5):
            g.unload_model("mlp")
            assert not g.is_model_ready("mlp")
            g.load_model("mlp")
            assert g.is_model_ready("mlp")
        stop.set()
        for t in threads:
            t.join()
        assert not failures and answered
    finally:
        assert server.stop() == 0, server.log_text()


# ---- limits, metrics, statistics ----------------------------------------------------------------------


def test_message_over_the_limit_is_resource_exhausted_and_the_server_goes_on(repository):
    server = GrpcServer(repository, "--grpc-max-message-bytes", "10000")
    try:
        g, _ = clients(server)
        code, message = grpc_error(g.infer, "echo", [vector_input(5000)])  # 20 KB of elements
        assert code == "RESOURCE_EXHAUSTED" and "10000" in message
        x = np.ones((2, 64), np.float32)  # the same channel serves the next request
        np.testing.assert_allclose(g.infer("mlp", [mlp_input(x)]).as_numpy("probs"), mlp_reference(x),
                                   rtol=1e-4, atol=1e-5)
    finally:
        server.stop()


def test_a_message_past_grpcs_default_4_mib_is_served(grpc_server):
    """The default limit is --max-body-bytes (64 MiB), not gRPC's own 4 MiB; answers are not limited."""
    g, _ = clients(grpc_server)
    x = np.random.default_rng(3).standard_normal(3 << 20, dtype=np.float32)  # 12 MiB
    np.testing.assert_array_equal(g.infer("echo", [mlp_input(x)]).as_numpy("output0"), np.maximum(x, 0))


def test_metrics_and_statistics_count_grpc_requests_as_http_does(fresh_grpc_server):
    g, h = clients(fresh_grpc_server)
    x = np.ones((2, 64), np.float32)
    for _ in range(3):
        g.infer("mlp", [mlp_input(x)], model_version="1")
    grpc_error(g.infer, "mlp", [mlp_input(np.ones((2, 3), np.float32))], model_version="1")
    text = urllib.request.urlopen(f"http://{fresh_grpc_server.url}/metrics", timeout=60).read().decode()
    assert metric(text, "strata_inference_requests_total", model="mlp", version="1") == 4
    stats = g.get_inference_statistics("mlp", "1")
    assert stats == json_format.ParseDict(h.get_inference_statistics("mlp", "1"),
                                          service_pb2.ModelStatisticsResponse())
    (s,) = stats.model_stats
    assert s.inference_count == 3 and s.inference_stats.success.count == 3 and s.inference_stats.fail.count == 1
    assert s.inference_stats.compute_infer.ns > 0 and s.last_inference > 0
    everything = g.get_inference_statistics()
    assert ("mlp", "1") in {(m.name, m.version) for m in everything.model_stats}


def test_full_queue_is_unavailable_and_the_others_are_answered(grpc_server):
    codes = []

    def call():
        g = grpcclient.InferenceServerClient(grpc_server.grpc_url)
        try:
            g.infer("slow", [vector_input(400)])
            codes.append("OK")
        except InferenceServerException as e:
            codes.append((e.status() or "").removeprefix("StatusCode."))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # One instance and a queue of two: some are answered, the rest turned away at once.
    assert codes.count("OK") >= 1 and codes.count("UNAVAILABLE") >= 1 and set(codes) <= {"OK", "UNAVAILABLE"}


def test_a_timeout_shorter_than_the_wait_is_unavailable(grpc_server):
    g, _ = clients(grpc_server)
    first = threading.Thread(target=lambda: grpcclient.InferenceServerClient(grpc_server.grpc_url).infer(
        "slow", [vector_input(800)]))
    first.start()
    time.sleep(0.2)  # the slow request holds the model's one instance
    code, message = grpc_error(g.infer, "slow", [vector_input(8)], timeout=1000)
    first.join()
    assert code == "UNAVAILABLE", message
    g.infer("slow", [vector_input(8)], timeout=10_000_000)  # with the instance free, it runs


# ---- clients that stall, cancel, or go ------------------------------------------------------------------


def test_deadlines_and_cancellations_harm_no_one(grpc_server):
    g, _ = clients(grpc_server)
    code, _ = grpc_error(g.infer, "slow", [vector_input(800)], client_timeout=0.2)
    assert code == "DEADLINE_EXCEEDED"
    done = []
    context = g.async_infer("slow", [vector_input(800)], callback=lambda result, error: done.append(error))
    time.sleep(0.1)
    context.cancel()
    other = grpcclient.InferenceServerClient(grpc_server.grpc_url)
    x = np.ones((2, 64), np.float32)
    np.testing.assert_allclose(other.infer("mlp", [mlp_input(x)]).as_numpy("probs"), mlp_reference(x),
                               rtol=1e-4, atol=1e-5)
    deadline = time.time() + 30
    while not done and time.time() < deadline:
        time.sleep(0.05)
    assert done and done[0] is not None and "CANCELLED" in str(done[0].status())
    # The cancelled requests ran to their end; then the model's instance serves again.
    np.testing.assert_array_equal(g.infer("slow", [vector_input(4)], client_timeout=60).as_numpy("output0").shape,
                                  [4])


def http2_frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def hpack_literal(name_index, value, name=None):
    """A header field literal without indexing (RFC 7541 6.2.2), with no Huffman coding."""
    if name is None:
        prefix = bytes([name_index]) if name_index < 15 else bytes([15, name_index - 15])
    else:
        prefix = b"\x00" + bytes([len(name)]) + name
    return prefix + bytes([len(value)]) + value


def test_a_stalled_stream_harms_no_one(grpc_server):
    """A connection that starts a ModelInfer message and stops sending, and one that sends garbage, while other
    clients are served."""
    stalled = socket.create_connection(("localhost", grpc_server.grpc_port))
    headers = (b"\x83\x86"  # :method POST, :scheme http
               + hpack_literal(4, b"/inference.GRPCInferenceService/ModelInfer") + hpack_literal(1, b"localhost")
               + hpack_literal(31, b"application/grpc") + hpack_literal(0, b"trailers", name=b"te"))
    stalled.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + http2_frame(4, 0, 0, b"")
                    + http2_frame(1, 4, 1, headers)  # HEADERS, END_HEADERS
                    + http2_frame(0, 0, 1, b"\x00" + struct.pack(">I", 1000) + b"\x0a\x03mlp"))  # 7 of 1005 bytes
    garbage = socket.create_connection(("localhost", grpc_server.grpc_port))
    garbage.sendall(b"\x00\x01\x02 this is not http/2\r\n\r\n")
    try:
        x = np.ones((2, 64), np.float32)
        for _ in range(3):
            g = grpcclient.InferenceServerClient(grpc_server.grpc_url)
            np.testing.assert_allclose(g.infer("mlp", [mlp_input(x)], client_timeout=30).as_numpy("probs"),
                                       mlp_reference(x), rtol=1e-4, atol=1e-5)
        stalled.settimeout(5)
        assert stalled.recv(9)  # the server answered the connection's SETTINGS: it is alive, and waiting
    finally:
        stalled.close()
        garbage.close()
    assert grpcclient.InferenceServerClient(grpc_server.grpc_url).is_server_live()


def test_a_grpc_port_in_use_fails_the_start_and_says_so(repository):
    holder = socket.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        run = subprocess.run([str(SERVER), "--model-repository", str(repository), "--http-port", "0", "--grpc-port",
                              str(port)], capture_output=True, text=True, timeout=120)
    finally:
        holder.close()
    assert run.returncode == 1
    assert f"cannot listen for gRPC on 0.0.0.0:{port}: Address already in use" in run.stderr, run.stderr


# ---- shutdown ------------------------------------------------------------------------------------------


def test_sigterm_answers_every_grpc_request_in_flight(fresh_grpc_server):
    results = []

    def call():
        g = grpcclient.InferenceServerClient(fresh_grpc_server.grpc_url)
        results.append(g.infer("slow", [vector_input(800)]).as_numpy("output0").shape)

    idle = grpcclient.InferenceServerClient(fresh_grpc_server.grpc_url)  # a channel left open, with no call
    assert idle.is_server_live()
    threads = [threading.Thread(target=call) for _ in range(2)]  # one running, one queued
    for t in threads:
        t.start()
    time.sleep(0.3)
    start = time.time()
    code = fresh_grpc_server.stop(signal.SIGTERM)
    stopped_in = time.time() - start
    for t in threads:
        t.join()
    assert code == 0, fresh_grpc_server.log_text()
    assert results == [(800,), (800,)]
    # The idle channel does not hold the exit (gRPC's library shutdown would wait 10 s for its connection).
    assert stopped_in < 8, stopped_in


def test_exit_timeout_cancels_what_is_still_running(repository):
    server = GrpcServer(repository, "--exit-timeout-secs", "1")
    errors = []

    def call():
        try:
            grpcclient.InferenceServerClient(server.grpc_url).infer("slow", [vector_input(4000)])
            errors.append(None)
        except InferenceServerException as e:
            errors.append((e.status() or "").removeprefix("StatusCode."))

    thread = threading.Thread(target=call)
    thread.start()
    time.sleep(0.3)
    start = time.time()
    code = server.stop(signal.SIGTERM)
    thread.join()
    assert code == 0 and time.time() - start < 15, server.log_text()
    assert errors and errors[0] in ("CANCELLED", "UNAVAILABLE"), errors
