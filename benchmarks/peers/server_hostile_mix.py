#!/usr/bin/env python3
"""A bounded hostile mix against strata-server on loopback, while well-behaved clients infer.

For --seconds (default 60), at the same time:
  - 8 inference clients (processes, keep-alive, binary tensor data) send one-row requests to the
    zoo's MLP; every answer is checked against onnxruntime's output for its input;
  - a health prober (a process of its own) opens a new connection every 20 ms and asks
    /v2/health/live (as a kubelet does);
  - hostile clients (threads of one process), each bounded in count and time:
      slow headers   connections that send a header byte every 500 ms (slowloris)
      deep JSON      bodies of 200,000 '[' and of 100,000 nested arrays of data
      oversized      a declared 1 GB body, and a chunked body that runs past the limit
      stalled bodies 8 MB of a declared 40 MB binary body, then nothing
      big JSON       15 MB JSON bodies (under the JSON limit), decoded on the codec threads
      idle           connections opened until the server's descriptor limit, then held
      unloads        repository unload/load calls, refused in control mode none
      files          the served model.stx rewritten in place with other bytes, then restored
  - with --grpc-port set on the server (--grpc), the gRPC counterparts: oversized messages and
    streams left open without a message.
Reported: whether the server survived, wrong answers and failed requests of the well-behaved
clients, health latency (p50, p99, max), and the server's RSS before, at the peak and after.

The server runs on CPU 0 and every client on CPU 1 when the machine has two or more CPUs
(--no-pin to share), so the clients' Python does not count against the server's latency.

Usage: python3 benchmarks/peers/server_hostile_mix.py [--seconds 60] [--fd-limit 1024] [--grpc]
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
import socket
import subprocess
import tempfile
import threading
import time

import numpy as np
import onnxruntime as ort

REPO = pathlib.Path(__file__).resolve().parents[2]
MLP = REPO / "tests/fixtures/onnx/mlp/model.onnx"


def pin(cpu):
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() >= 2:
        os.sched_setaffinity(0, {cpu})


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def binary_request(x):
    header = json.dumps({"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    return header + x.tobytes(), len(header)


def good_client(args):
    port, seconds, seed, cpu = args
    if cpu is not None:
        pin(cpu)
    rng = np.random.default_rng(seed)
    session = ort.InferenceSession(str(MLP), providers=["CPUExecutionProvider"])
    inputs = [rng.standard_normal((1 + i % 4, 64), dtype=np.float32) for i in range(8)]
    references = [session.run(None, {"x": x})[0] for x in inputs]
    bodies = [binary_request(x) for x in inputs]
    stats = {"ok": 0, "wrong": 0, "failed": 0, "errors": []}
    conn = None
    end = time.time() + seconds
    while time.time() < end:
        i = int(rng.integers(len(bodies)))
        try:
            if conn is None:
                conn = http.client.HTTPConnection("localhost", port, timeout=30)
            body, header_length = bodies[i]
            conn.request("POST", "/v2/models/mlp/infer", body=body,
                         headers={"Inference-Header-Content-Length": str(header_length)})
            response = conn.getresponse()
            data = response.read()
            if response.status != 200:
                stats["failed"] += 1
                stats["errors"].append(f"HTTP {response.status}: {data[:120]!r}")
                continue
            json_length = int(response.getheader("Inference-Header-Content-Length"))
            out = np.frombuffer(data[json_length:], np.float32).reshape(references[i].shape)
            if np.allclose(out, references[i], rtol=1e-4, atol=1e-5):
                stats["ok"] += 1
            else:
                stats["wrong"] += 1
        except (OSError, http.client.HTTPException) as e:
            # A keep-alive connection the server closed (idle eviction under the flood) is
            # reopened, as HTTP clients do; the request is retried, not counted as an answer.
            conn = None
            stats["errors"].append(f"reconnect: {type(e).__name__}")
    stats["errors"] = stats["errors"][:5]
    return stats


class Hostile:
    def __init__(self, port, root, seconds, fd_limit):
        self.port, self.root, self.end, self.fd_limit = port, root, time.time() + seconds, fd_limit
        self.counts = {}
        self.lock = threading.Lock()

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def alive(self):
        return time.time() < self.end

    def connect(self):
        s = socket.create_connection(("localhost", self.port), timeout=10)
        return s

    def exchange(self, data, what):
        try:
            s = self.connect()
            s.sendall(data)
            s.settimeout(10)
            reply = s.recv(200)
            s.close()
            self.count(f"{what}: {reply[:12].decode(errors='replace') or 'closed'}")
        except OSError as e:
            self.count(f"{what}: {type(e).__name__}")

    def slow_headers(self):
        while self.alive():
            socks = []
            for _ in range(40):
                try:
                    s = self.connect()
                    s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\n")
                    socks.append(s)
                except OSError:
                    self.count("slow headers: connect failed")
            for _ in range(20):
                if not self.alive():
                    break
                for s in socks:
                    try:
                        s.sendall(b"X")
                    except OSError:
                        pass
                time.sleep(0.5)
            closed = 0
            for s in socks:
                try:
                    s.settimeout(0.01)
                    closed += s.recv(1) == b""
                except OSError:
                    pass
                s.close()
            self.count("slow headers: closed by the server", closed)

    def deep_json(self):
        nested = b"[" * 200_000
        data = b'{"inputs": [{"name": "x", "shape": [1, 1], "datatype": "FP32", "data": ' + \
            b"[" * 100_000 + b"1" + b"]" * 100_000 + b"}]}"
        while self.alive():
            for body in (nested, data):
                self.exchange(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                              % len(body) + body, "deep JSON")
            time.sleep(0.2)

    def oversized(self):
        while self.alive():
            self.exchange(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n",
                          "oversized")
            chunk = b"%x\r\n%s\r\n" % (1 << 20, b"a" * (1 << 20))
            try:
                s = self.connect()
                s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                for _ in range(24):
                    s.sendall(chunk)
                s.settimeout(10)
                self.count(f"oversized chunked: {s.recv(12).decode(errors='replace') or 'closed'}")
                s.close()
            except OSError as e:
                self.count(f"oversized chunked: {type(e).__name__}")
            time.sleep(0.5)

    def stalled_bodies(self):
        header = json.dumps({"inputs": [{"name": "x", "shape": [10_000_000], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 40_000_000}}]}).encode()
        while self.alive():
            socks = []
            for _ in range(5):
                try:
                    s = self.connect()
                    s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nInference-Header-Content-Length: %d"
                              b"\r\nContent-Length: %d\r\n\r\n" % (len(header), len(header) + 40_000_000) + header)
                    s.sendall(b"\0" * 8_000_000)
                    socks.append(s)
                except OSError:
                    self.count("stalled: send failed")
            time.sleep(3)
            for s in socks:
                s.close()
            self.count("stalled bodies", len(socks))

    def big_json(self):
        body = json.dumps({"inputs": [{"name": "x", "shape": [24_000, 64], "datatype": "FP32",
                                       "data": [0.25] * (24_000 * 64)}]}).encode()
        while self.alive():
            self.exchange(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
                          + body, "big JSON (batch past the bound)")

    def idle_flood(self):
        socks = []
        while self.alive():
            if len(socks) < self.fd_limit + 200:
                try:
                    socks.append(self.connect())
                    self.count("idle opened")
                    continue
                except OSError:
                    self.count("idle: connect failed")
            time.sleep(0.05)
        closed = 0
        for s in socks:
            try:
                s.settimeout(0.001)
                closed += s.recv(1) == b""
            except OSError:
                pass
            s.close()
        self.count("idle: closed by the server", closed)

    def unloads(self):
        while self.alive():
            for action in ("unload", "load"):
                self.exchange(b"POST /v2/repository/models/mlp/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
                              % action.encode(), f"{action}")
            time.sleep(0.5)

    def files(self):
        path = self.root / "mlp" / "1" / "model.stx"
        original = path.read_bytes()
        while self.alive():
            with open(path, "r+b") as f:
                f.write(os.urandom(len(original) // 2))
                f.truncate()
            time.sleep(1)
            with open(path, "r+b") as f:
                f.write(original)
            time.sleep(1)
        self.count("files rewritten in place", 1)

    def grpc_abuse(self, grpc_port):
        import grpc
        import tritonclient.grpc as tg

        client = tg.InferenceServerClient(f"localhost:{grpc_port}")
        big = np.zeros(20_000_000, np.float32)  # 80 MB: past the message limit
        while self.alive():
            tensor = tg.InferInput("x", [312_500, 64], "FP32")
            tensor.set_data_from_numpy(big.reshape(312_500, 64))
            try:
                client.infer("mlp", [tensor])
                self.count("grpc oversized: accepted")
            except Exception as e:  # noqa: BLE001 (what the client raises is the point)
                self.count(f"grpc oversized: {type(e).__name__}")
            # A stream opened and never finished: a channel with a call that is cancelled late.
            channel = grpc.insecure_channel(f"localhost:{grpc_port}")
            try:
                grpc.channel_ready_future(channel).result(timeout=5)
                self.count("grpc stalled channel")
            except grpc.FutureTimeoutError:
                self.count("grpc stalled: not ready")
            time.sleep(2)
            channel.close()

    KINDS = ["slow_headers", "deep_json", "oversized", "stalled_bodies", "big_json", "idle_flood", "unloads", "files"]

    def run(self, kinds, grpc_port=None):
        workers = [getattr(self, kind) for kind in kinds]
        threads = [threading.Thread(target=w) for w in workers]
        if grpc_port:
            threads.append(threading.Thread(target=self.grpc_abuse, args=(grpc_port,)))
        for t in threads:
            t.start()
        return threads


def prober(port, seconds, out, cpu=None):
    if cpu is not None:
        pin(cpu)
    end = time.time() + seconds
    while time.time() < end:
        start = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("localhost", port, timeout=10)
            conn.request("GET", "/v2/health/live")
            status = conn.getresponse().status
            conn.close()
        except OSError as e:
            status = type(e).__name__
        out.append((time.perf_counter() - start, status))
        time.sleep(0.02)


def prober_process(port, seconds, connection, cpu):
    """The prober in a process of its own: the hostile threads' Python (an 80 MB gRPC
    message serialized with the GIL held) must not count as the server's latency."""
    out = []
    prober(port, seconds, out, cpu)
    connection.send(out)
    connection.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--fd-limit", type=int, default=1024, help="the server's RLIMIT_NOFILE")
    parser.add_argument("--grpc", action="store_true", help="also serve and abuse gRPC (--grpc-port)")
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--hostile", default=",".join(Hostile.KINDS),
                        help="which hostile clients run (comma-separated; '' for none: a baseline)")
    parser.add_argument("--build-dir", default=str(REPO / "build"))
    args = parser.parse_args()
    build = pathlib.Path(args.build_dir)
    pinning = not args.no_pin and (os.cpu_count() or 1) >= 2
    if pinning:
        pin(1)

    with tempfile.TemporaryDirectory() as root:
        root = pathlib.Path(root)
        stx = root / "mlp" / "1" / "model.stx"
        stx.parent.mkdir(parents=True)
        subprocess.run([str(build / "bin/strata"), "compile", str(MLP), "--dynamic", "batch=1..16", "-o", str(stx)],
                       check=True)
        (root / "mlp" / "config.json").write_text('{"instance_count": 2, "max_queue_size": 256}')

        # Pinned by taskset and limited by prlimit (util-linux), which exec the server, not in a preexec_fn:
        # code run between fork and exec is unsafe once this process runs gRPC's threads.
        command = ["taskset", "-c", "0"] if pinning else []
        command += ["prlimit", f"--nofile={args.fd_limit}:{args.fd_limit}", "--"]
        command += [str(build / "bin/strata-server"), "--model-repository", str(root), "--http-port", "0",
                    "--threads", "1", "--http-header-timeout-secs", "2", "--http-body-timeout-secs", "2",
                    "--http-idle-timeout-secs", "10"]
        command += ["--grpc-port", "0" if args.grpc else "-1"]
        server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        log = []
        port = grpc_port = None
        while port is None:
            line = server.stderr.readline()
            if not line:
                raise RuntimeError("strata-server exited: " + "".join(log))
            log.append(line)
            grpc_match = re.search(r"grpc=[^ ]*:(\d+)", line)
            if grpc_match:
                grpc_port = int(grpc_match.group(1))
            match = re.search(r"listening on [^:]+:(\d+)", line)
            port = int(match.group(1)) if match else None
        threading.Thread(target=lambda: log.extend(server.stderr), daemon=True).start()
        for _ in range(50):  # warm up, then the baseline
            c = http.client.HTTPConnection("localhost", port, timeout=10)
            c.request("GET", "/v2/health/live")
            c.getresponse().read()
            c.close()
        baseline = rss_mib(server.pid)
        peak = [baseline]
        stop_sampling = threading.Event()

        def sample():
            while not stop_sampling.is_set():
                peak[0] = max(peak[0], rss_mib(server.pid))
                time.sleep(0.1)

        threading.Thread(target=sample, daemon=True).start()
        health = []
        hostile = Hostile(port, root, args.seconds, args.fd_limit)
        threads = hostile.run([k for k in args.hostile.split(",") if k], grpc_port)
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        probe = context.Process(target=prober_process, args=(port, args.seconds, sender, 1 if pinning else None))
        probe.start()
        with multiprocessing.get_context("fork").Pool(8) as pool:
            results = pool.map(good_client, [(port, args.seconds, seed, 1 if pinning else None) for seed in range(8)])
        health = receiver.recv()
        probe.join()
        for t in threads:
            t.join()
        stop_sampling.set()
        survived = server.poll() is None
        time.sleep(3)  # connections closed by the clients are reaped, then memory is measured
        after = rss_mib(server.pid) if survived else float("nan")
        server.terminate()
        code = server.wait(timeout=120)

    latencies = sorted(t for t, status in health if status == 200)
    bad_health = [status for t, status in health if status != 200]
    ok = sum(r["ok"] for r in results)
    wrong = sum(r["wrong"] for r in results)
    failed = sum(r["failed"] for r in results)
    reconnects = sum(len([e for e in r["errors"] if e.startswith("reconnect")]) for r in results)
    print(f"hostile mix for {args.seconds:.0f} s, server fd limit {args.fd_limit}, "
          f"{'server on CPU 0, clients on CPU 1' if pinning else 'unpinned'}")
    print(f"server survived: {survived}; exit code after SIGTERM: {code}")
    print(f"well-behaved inferences: {ok} correct, {wrong} wrong, {failed} failed; reconnects (first 5 per client "
          f"kept): {reconnects}")
    for r in results:
        for e in r["errors"]:
            if not e.startswith("reconnect"):
                print("  error:", e)
    if latencies:
        p = lambda q: 1000 * latencies[min(len(latencies) - 1, int(q * (len(latencies) - 1)))]  # noqa: E731
        print(f"health: {len(latencies)} answered, {len(bad_health)} not; p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, "
              f"max {1000 * latencies[-1]:.1f} ms")
    print(f"RSS MiB: baseline {baseline:.1f}, peak {peak[0]:.1f}, after {after:.1f}")
    events = {}
    for line in log:
        for event in ("accept_backoff", "connection_failed", "exit_timeout", "model_reload_failed"):
            events[event] = events.get(event, 0) + (f" {event} " in line)
    print("server log events: " + ", ".join(f"{k} {v}" for k, v in events.items()))
    print("hostile actions:")
    for what, n in sorted(hostile.counts.items()):
        print(f"  {what}: {n}")
    if not survived or wrong or failed or bad_health or (latencies and p(0.99) > 50) or after > baseline + 30:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
