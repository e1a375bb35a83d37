#!/usr/bin/env python3
"""A bounded load test of strata-server on loopback, with and without dynamic batching.

A model is served twice from one repository: `<model>` (one request per run)
and `<model>_batched` (dynamic batching: up to 32 rows, 1 ms delay). The model
is the zoo's MLP (--model mlp: 64 -> 10, microseconds of compute: the HTTP
path dominates) or a wide two-layer perceptron made here with random weights
(--model wide: 1024 -> 4096 -> 1024, 32 MB of weights that one row reads in
full: the case batching exists for). For each,
C concurrent clients (processes, each with one keep-alive connection) send R
requests of one row each, with the binary tensor data extension; every answer
is checked against onnxruntime's output for its input. Reported: throughput
(requests/s over the whole run), and p50 / p99 latency as the clients see it.

The server runs on the first half of the CPUs and the clients on the rest when
there are two or more (--no-pin to share), so the clients' Python does not
count against the server.

Usage: python3 benchmarks/peers/server_load_test.py [--model mlp|wide] [--clients 16] [--requests 1600] [--rounds 3]
(build/bin/strata and build/bin/strata-server built).
"""
import argparse
import http.client
import json
import multiprocessing
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import tempfile
import time

import numpy as np
import onnxruntime as ort

REPO = pathlib.Path(__file__).resolve().parents[2]
MLP = REPO / "tests/fixtures/onnx/mlp/model.onnx"
INPUTS = 16  # distinct inputs, each with its reference output


def wide_model(path):
    """1024 -> 4096 (relu) -> 1024 with random weights, dynamic batch: ONNX, for both sides."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array((rng.standard_normal((1024, 4096)) / 32).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((4096, 1024)) / 64).astype(np.float32), "w2")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])], "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1024])], [w1, w2])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def binary_request(x):
    header = json.dumps({"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    return header + x.tobytes(), len(header)


def pin(cpus):
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)


def client(args):
    port, model, count, seed, inputs, references, cpus = args
    pin(cpus)
    width = references[0].shape[1]
    conn = http.client.HTTPConnection("localhost", port, timeout=120)
    latencies, rng = [], np.random.default_rng(seed)
    bodies = [binary_request(x) for x in inputs]
    for _ in range(count):
        i = int(rng.integers(len(bodies)))
        body, header_length = bodies[i]
        start = time.perf_counter()
        conn.request("POST", f"/v2/models/{model}/infer", body=body,
                     headers={"Inference-Header-Content-Length": str(header_length)})
        response = conn.getresponse()
        data = response.read()
        latencies.append(time.perf_counter() - start)
        if response.status != 200:
            raise RuntimeError(f"{model}: HTTP {response.status}: {data[:200]!r}")
        json_length = int(response.getheader("Inference-Header-Content-Length"))
        out = np.frombuffer(data[json_length:], np.float32).reshape(1, width)
        np.testing.assert_allclose(out, references[i], rtol=1e-4, atol=1e-5)
    conn.close()
    return latencies


def run(port, model, clients, requests, inputs, references, client_cpus):
    per_client = requests // clients
    jobs = [(port, model, per_client, seed, inputs, references, client_cpus) for seed in range(clients)]
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(clients) as pool:
        latencies = [t for part in pool.map(client, jobs) for t in part]
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {"throughput": len(latencies) / elapsed, "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))], "requests": len(latencies)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=["mlp", "wide"], default="mlp")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=1600, help="per model and round, over all clients")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build-dir", default=str(REPO / "build"))
    parser.add_argument("--no-pin", action="store_true",
                        help="let clients and server share every CPU (default: the server gets the first half of "
                             "the CPUs, the clients the rest, when there are two or more)")
    args = parser.parse_args()
    build = pathlib.Path(args.build_dir)
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    pinning = not args.no_pin and len(cpus) >= 2
    server_cpus = set(cpus[:len(cpus) // 2]) if pinning else None
    client_cpus = set(cpus[len(cpus) // 2:]) if pinning else None

    with tempfile.TemporaryDirectory() as root:
        root = pathlib.Path(root)
        source = MLP
        if args.model == "wide":
            source = root / "wide.onnx"
            wide_model(source)
        rng = np.random.default_rng(0)
        width_in = 64 if args.model == "mlp" else 1024
        inputs = [rng.standard_normal((1, width_in), dtype=np.float32) for _ in range(INPUTS)]
        session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
        references = [session.run(None, {"x": x})[0] for x in inputs]
        name = args.model
        stx = root / name / "1" / "model.stx"
        stx.parent.mkdir(parents=True)
        subprocess.run([str(build / "bin/strata"), "compile", str(source), "--dynamic", "batch=1..64", "-o",
                        str(stx)], check=True)
        (root / name / "config.json").write_text('{"instance_count": 2, "max_queue_size": 256}')
        (root / f"{name}_batched" / "1").mkdir(parents=True)
        shutil.copy(stx, root / f"{name}_batched" / "1" / "model.stx")
        (root / f"{name}_batched" / "config.json").write_text(
            '{"instance_count": 2, "max_queue_size": 256, '
            '"dynamic_batching": {"max_batch_size": 32, "max_queue_delay_us": 1000}}')
        server = subprocess.Popen([str(build / "bin/strata-server"), "--model-repository", str(root), "--http-port",
                                   "0", "--grpc-port", "-1", "--io-threads", "2", "--threads", "1"],
                                  stderr=subprocess.PIPE, text=True, preexec_fn=lambda: pin(server_cpus))
        try:
            port = None
            while port is None:
                line = server.stderr.readline()
                if not line:
                    raise RuntimeError("strata-server exited")
                match = re.search(r"listening on [^:]+:(\d+)", line)
                port = int(match.group(1)) if match else None
            results = {name: [], f"{name}_batched": []}
            for _ in range(args.rounds):  # alternating, so that both see the same machine
                for model in results:
                    results[model].append(run(port, model, args.clients, args.requests, inputs, references,
                                              client_cpus))
        finally:
            server.terminate()
            server.wait(timeout=60)

    print(f"{args.clients} clients, {args.requests // args.clients * args.clients} requests of one row per model "
          f"and round, {args.rounds} rounds; every answer checked against onnxruntime; "
          + (f"server on CPUs {sorted(server_cpus)}, clients on {sorted(client_cpus)}" if pinning else "unpinned"))
    print("| model | dynamic batching | requests/s | p50 ms | p99 ms |")
    print("|---|---|---|---|---|")
    for model, rounds in results.items():
        thr = [r["throughput"] for r in rounds]
        p50 = [r["p50_ms"] for r in rounds]
        p99 = [r["p99_ms"] for r in rounds]
        print(f"| {model} | {'on (32 rows, 1 ms)' if 'batched' in model else 'off'} | {min(thr):.0f}-{max(thr):.0f} "
              f"| {min(p50):.2f}-{max(p50):.2f} | {min(p99):.2f}-{max(p99):.2f} |")


if __name__ == "__main__":
    main()
