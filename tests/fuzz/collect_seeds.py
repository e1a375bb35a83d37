#!/usr/bin/env python3
"""Gathers the committed seed corpus of each fuzz target from files the tests
already use (valid inputs), plus hand-written ones for the small syntaxes.

Run from anywhere; rewrites tests/fuzz/seeds/<target>/ except files named
crash-* / timeout-* / leak-* (inputs a fuzzer found, kept as regressions).
The executable loader's seeds are not committed: scripts/fuzz.sh compiles them
from examples/ with the strata binary under test, so they are always of the
current format.
"""
import hashlib
import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEEDS = ROOT / "tests" / "fuzz" / "seeds"

INLINE = [
    "2x3xf32=1,2,3,4,5,6", "f32=1.5", "0x4xi32=", "2xbool=true,false", "3xf16=1 2 3.5",
    "2x2xi64=-1,9223372036854775807,0,-9223372036854775808", "u8=255", "2xf64=1e308,-2.5e-310",
    "4xi8=-128,127,0,1", "1x1x1xu16=65535", "2xu32=4294967295,0", "3xf32=nan,inf,-inf",
    "2xu64=18446744073709551615,0", "1xi16=-32768",
]

CONFIGS = [
    '{}',
    '{"function": "main", "instance_count": 2, "max_queue_size": 64, "timeout_ms": 1000}',
    '{"dynamic_batching": {"max_batch_size": 16, "max_queue_delay_us": 500}, "instance_count": 1}',
    '{"device_options": {"sim_npu": "memory=64M"}, "function": "main"}',
]

# infer_request_fuzzer: two little-endian bytes of JSON length (ffff: all JSON), then the body.
def request(json_text: str, binary: bytes = b"") -> bytes:
    body = json_text.encode()
    length = len(body) if binary else 0xFFFF
    return bytes([length & 0xFF, length >> 8]) + body + binary

REQUESTS = [
    request('{"id": "r1", "inputs": ['
            '{"name": "x", "shape": [2, 4], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6, 7, 8]},'
            '{"name": "ids", "shape": [2], "datatype": "INT64", "data": [1, -2]},'
            '{"name": "scale", "shape": [1], "datatype": "FP16", "data": [0.5]},'
            '{"name": "keep", "shape": [2, 4], "datatype": "BOOL", "data": [true, false, true, false, 1, 0, 1, 0]},'
            '{"name": "raw", "shape": [3], "datatype": "UINT8", "data": [0, 128, 255]}],'
            '"outputs": [{"name": "output0"}]}'),
    request('{"inputs": ['
            '{"name": "x", "shape": [1, 4], "datatype": "FP32", "parameters": {"binary_data_size": 16}},'
            '{"name": "ids", "shape": [1], "datatype": "INT64", "parameters": {"binary_data_size": 8}},'
            '{"name": "scale", "shape": [1], "datatype": "FP16", "data": [2]},'
            '{"name": "keep", "shape": [1, 4], "datatype": "BOOL", "data": [[true, true, false, false]]},'
            '{"name": "raw", "shape": [0], "datatype": "UINT8", "data": []}],'
            '"parameters": {"binary_data_output": true, "timeout": 1000}}',
            bytes(16) + bytes(8)),
]

def write(target: str, name: str, data: bytes) -> None:
    (SEEDS / target).mkdir(parents=True, exist_ok=True)
    (SEEDS / target / name).write_bytes(data)

def copy_files(target: str, paths, limit_bytes: int) -> None:
    for path in sorted(paths):
        data = path.read_bytes()
        if len(data) <= limit_bytes:
            write(target, hashlib.sha1(data).hexdigest()[:16] + path.suffix, data)

def distinct_npy_headers(paths):
    """One small file per (dtype, rank) the fixtures have: the reader's paths."""
    chosen = {}
    for path in sorted(paths):
        data = path.read_bytes()
        if len(data) > 512:
            continue
        header = data[10:data.find(b"\n")].decode("latin-1")
        descr = header.split("'descr':")[1].split(",")[0].strip()
        rank = header.split("'shape':")[1].split(")")[0].count(",") if "'shape': ()" not in header else 0
        chosen.setdefault((descr, rank), path)
    return list(chosen.values())

def main() -> None:
    for target_dir in SEEDS.glob("*"):
        for f in target_dir.iterdir():
            if not f.name.startswith(("crash-", "timeout-", "leak-", "oom-")):
                f.unlink()
    copy_files("text_ir_fuzzer", list((ROOT / "examples").glob("*.sir")) +
               list((ROOT / "tests" / "text" / "cases").glob("*.sir")) +
               list((ROOT / "tests" / "fixtures" / "ops").glob("*/program.sir"))[:60], 6000)
    copy_files("onnx_import_fuzzer", (ROOT / "tests" / "fixtures" / "onnx_ops").glob("*/model.onnx"), 2000)
    copy_files("npy_fuzzer", distinct_npy_headers((ROOT / "tests" / "fixtures").rglob("*.npy")), 512)
    for i, text in enumerate(INLINE):
        write("inline_tensor_fuzzer", f"seed{i:02d}", text.encode())
    for i, text in enumerate(CONFIGS):
        write("model_config_fuzzer", f"seed{i:02d}.json", text.encode())
    for i, data in enumerate(REQUESTS):
        write("infer_request_fuzzer", f"seed{i:02d}", data)
    for target_dir in sorted(SEEDS.glob("*")):
        files = list(target_dir.iterdir())
        print(f"{target_dir.name}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")

if __name__ == "__main__":
    main()
