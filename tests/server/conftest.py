"""The real strata-server on a loopback port, over a model repository built for the test.

The repository (a temporary folder) holds:
  mlp/1, mlp/2   the zoo's MLP (ONNX, dynamic batch 1..16), compiled by build/bin/strata
  slow/1         a kernel whose time grows as n^3 (a long request on demand),
                 one instance, a queue of 2, so that the queue fills
  echo/1         relu over a vector of any length (a large answer on demand)
  named/1        an ONNX graph whose names are not identifiers: inputs 'input.1', 'mask/0',
                 outputs 'probs', 'logits' (tests/fixtures/onnx_ops/graph_io_names)
  batched/1      the MLP with dynamic batching (up to 16 rows, 20 ms delay), one instance
  unbatchable/1  dynamic batching asked of a function whose inputs have no batch dimension
  cnn_npu/1      the zoo's CNN offloaded to the simulated NPU, with device_options
  npu_badopt/1   the same with a device option the NPU refuses
  broken/1       a file that is not an executable
  badcfg         a config.json with a misspelt field
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("STRATA_BUILD_DIR", REPO / "build"))
# STRATA_SERVER: another build of the server (the ThreadSanitizer one in
# scripts/test.sh); the models are still compiled with the full build's CLI.
SERVER = pathlib.Path(os.environ.get("STRATA_SERVER", BUILD / "bin" / "strata-server"))
CLI = BUILD / "bin" / "strata"
# A sanitizer's allocator keeps freed memory in quarantine: memory figures mean nothing there.
SANITIZED_SERVER = "STRATA_SERVER" in os.environ

SLOW_SIR = """
prim_func @spin(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {
  for i in range(0, n) {
    B[i] = 0.0
    for j in range(0, n) {
      for k in range(0, n) {
        B[i] = B[i] + A[j] * A[k] * 0.000001
      }
    }
  }
}

func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  dataflow {
    y: Tensor[(n,), f32] = call_tir(@spin, (x,), Tensor[(n,), f32])
    output y
  }
  return y
}
"""

# A model whose answer is as large as its input, computed at once: for clients that never read.
ECHO_SIR = """
func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  y = relu(x)
  return y
}
"""


def compile_model(source, out, *extra):
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(CLI), "compile", str(source), "-o", str(out), *extra], check=True)


@pytest.fixture(scope="session")
def repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("repository")
    mlp = root / "mlp" / "1" / "model.stx"
    compile_model(REPO / "tests/fixtures/onnx/mlp/model.onnx", mlp, "--dynamic", "batch=1..16")
    (root / "mlp" / "2").mkdir()
    shutil.copy(mlp, root / "mlp" / "2" / "model.stx")
    slow_source = root / "slow.sir"
    slow_source.write_text(SLOW_SIR)
    compile_model(slow_source, root / "slow" / "1" / "model.stx")
    slow_source.unlink()
    (root / "slow" / "config.json").write_text('{"instance_count": 1, "max_queue_size": 2}')
    compile_model(REPO / "tests/fixtures/onnx_ops/graph_io_names/model.onnx", root / "named" / "1" / "model.stx")
    echo_source = root / "echo.sir"
    echo_source.write_text(ECHO_SIR)
    compile_model(echo_source, root / "echo" / "1" / "model.stx")
    echo_source.unlink()
    (root / "batched" / "1").mkdir(parents=True)
    shutil.copy(mlp, root / "batched" / "1" / "model.stx")
    (root / "batched" / "config.json").write_text(
        '{"instance_count": 1, "dynamic_batching": {"max_batch_size": 16, "max_queue_delay_us": 20000}}')
    compile_model(REPO / "examples/matmul_relu.sir", root / "unbatchable" / "1" / "model.stx")
    (root / "unbatchable" / "config.json").write_text('{"dynamic_batching": {}}')
    compile_model(REPO / "tests/fixtures/onnx/cnn/model.onnx", root / "cnn_npu" / "1" / "model.stx", "--target",
                  "cpu,npu", "--dynamic", "batch=1..2", "--dynamic", "h=16..16", "--dynamic", "w=16..16")
    (root / "cnn_npu" / "config.json").write_text('{"device_options": {"sim_npu": "memory=64M"}}')
    (root / "npu_badopt" / "1").mkdir(parents=True)
    shutil.copy(root / "cnn_npu" / "1" / "model.stx", root / "npu_badopt" / "1" / "model.stx")
    (root / "npu_badopt" / "config.json").write_text('{"device_options": {"sim_npu": "memory=-5"}}')
    (root / "broken" / "1").mkdir(parents=True)
    (root / "broken" / "1" / "model.stx").write_bytes(b"not an executable")
    (root / "badcfg" / "1").mkdir(parents=True)
    shutil.copy(mlp, root / "badcfg" / "1" / "model.stx")
    (root / "badcfg" / "config.json").write_text('{"instance_cnt": 2}')
    return root


# Out of file descriptors, UndefinedBehaviorSanitizer's vptr check is unsound: it asks whether a vtable is
# readable by writing it into a pipe (IsAccessibleMemoryRange, compiler-rt 16), and pipe() fails. The first
# virtual call of each type while descriptors are short is then reported, whatever the object is: as "object
# has invalid vptr" (boost's system_category, a shared_ptr's control block), or, when a descriptor came free
# before the report was written, as "object is of type T" for the very type it was checked against. A
# suppression cannot match either: naming the type takes the same read. So for servers driven out of
# descriptors, and only for them, the vptr check's reports ("... which does not point to an object of type")
# are left out; AddressSanitizer still sees any use of freed memory, and every other report fails the test.
def without_vptr_reports(log):
    """`log` without UBSan's vptr-check reports (the server's own lines, which can fall inside one, stay)."""
    kept, report = [], None
    for line in log.splitlines(keepends=True):
        if report is None and "runtime error: " in line:
            report = [line]
        elif report is not None:
            report.append(line)
            if line.startswith("SUMMARY: UndefinedBehaviorSanitizer"):
                vptr = "which does not point to an object of type" in report[0]
                kept += [r for r in report if re.match(r"\d{4}-\d\d-\d\dT", r)] if vptr else report
                report = None
        else:
            kept.append(line)
    return "".join(kept + (report or []))


class Server:
    # No preexec_fn: this process may run gRPC's threads (tritonclient), and code run between fork and exec
    # in such a process can deadlock or break gRPC's descriptors. Limits go on the running server (prlimit).
    def __init__(self, repository, *args, out_of_descriptors=False):
        if "--grpc-port" not in args:  # gRPC's default port would clash between servers; test_grpc.py asks for 0
            args = (*args, "--grpc-port", "-1")
        self.out_of_descriptors = out_of_descriptors
        env = None
        if out_of_descriptors and "UBSAN_OPTIONS" in os.environ:
            # Go on after a report, to tell which it is; no stack trace, as unwinding the main thread reads
            # /proc/self/maps, which needs a descriptor too (the sanitizer's CHECK fails and it aborts).
            env = dict(os.environ, UBSAN_OPTIONS=os.environ["UBSAN_OPTIONS"] + ":halt_on_error=0:print_stacktrace=0",
                       LSAN_OPTIONS=f"suppressions={pathlib.Path(__file__).parent / 'lsan_out_of_descriptors.supp'}")
        self.process = subprocess.Popen([str(SERVER), "--model-repository", str(repository), "--http-port", "0",
                                         "--io-threads", "4", *args], stderr=subprocess.PIPE, text=True, env=env)
        self.log = []
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            self.log.append(line)
            match = re.search(r"listening on [^:]+:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                self.url = f"localhost:{self.port}"
                # The server's log is read as it comes, so a chatty server never blocks on a full pipe.
                self.reader = threading.Thread(target=self._read_log, daemon=True)
                self.reader.start()
                return
        raise RuntimeError("strata-server did not start: " + "".join(self.log))

    def _read_log(self):
        for line in self.process.stderr:
            self.log.append(line)

    def log_text(self):
        return "".join(self.log)

    def stop(self, sig=signal.SIGTERM, timeout=120):
        if self.process.poll() is None:
            self.process.send_signal(sig)
        self.process.wait(timeout=timeout)
        self.reader.join(timeout=10)
        log = "".join(self.log)
        if self.out_of_descriptors:
            log = without_vptr_reports(log)
        # Under a sanitizer, a report anywhere in the server's life fails the test that stops it.
        assert "Sanitizer" not in log, log
        return self.process.returncode


@pytest.fixture(scope="module")
def server(repository):
    s = Server(repository)
    yield s
    s.stop()


@pytest.fixture
def fresh_server(repository):
    """A server of its own, for tests that stop it or change its repository."""
    s = Server(repository)
    yield s
    s.stop()
