"""Running executables: results against onnxruntime, zero-copy in and out, PyTorch, save/load, profiling."""
import json

import numpy as np
import onnxruntime as ort
import pytest

from conftest import IDENTITY_SIR, ONNX_FIXTURES


def _ort_session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("batch", [1, 3, 16])
def test_mlp_matches_onnxruntime_at_several_shapes(strata, rng, batch):
    path = ONNX_FIXTURES / "mlp" / "model.onnx"
    vm = strata.VirtualMachine(strata.compile(path, dynamic={"batch": (1, 16)}))
    x = rng.standard_normal((batch, 64), dtype=np.float32)
    (expected,) = _ort_session(path).run(None, {"x": x})
    np.testing.assert_allclose(np.asarray(vm.main(x)), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch,h,w", [(1, 16, 16), (2, 20, 12)])
def test_cnn_matches_onnxruntime_with_symbolic_image_size(strata, rng, batch, h, w):
    path = ONNX_FIXTURES / "cnn" / "model.onnx"
    vm = strata.VirtualMachine(strata.compile(path, dynamic={"batch": (1, 4), "h": (8, 32), "w": (8, 32)}))
    image = rng.standard_normal((batch, 3, h, w), dtype=np.float32)
    (expected,) = _ort_session(path).run(None, {"image": image})
    np.testing.assert_allclose(np.asarray(vm["main"](image)), expected, rtol=1e-4, atol=1e-4)


def test_input_is_not_copied(strata):
    vm = strata.VirtualMachine(strata.compile(IDENTITY_SIR))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = vm.main(x)
    assert y.data_ptr == x.ctypes.data  # the VM ran on the caller's memory
    del x  # the result keeps the caller's array alive
    np.testing.assert_array_equal(np.asarray(y), np.arange(12, dtype=np.float32).reshape(3, 4))


def test_non_contiguous_input_is_copied_correctly(strata):
    vm = strata.VirtualMachine(strata.compile(IDENTITY_SIR))
    base = np.arange(32, dtype=np.float32).reshape(4, 8)
    view = base[:, ::2]  # strided: passed as a contiguous copy
    y = vm.main(view)
    assert y.data_ptr != base.ctypes.data
    np.testing.assert_array_equal(np.asarray(y), view)


def test_output_is_shared_with_numpy_and_torch(strata, matmul_relu, rng):
    import torch

    vm = strata.VirtualMachine(matmul_relu)
    y = vm.main(rng.standard_normal((4, 3), dtype=np.float32), rng.standard_normal((3, 5), dtype=np.float32))
    assert isinstance(y, strata.Tensor) and y.shape == (4, 5) and y.dtype == "float32"
    as_numpy = np.from_dlpack(y)
    as_torch = torch.from_dlpack(y)
    assert as_numpy.ctypes.data == y.data_ptr == as_torch.data_ptr() == np.asarray(y).ctypes.data
    as_numpy[0, 0] = 42.0  # one memory: the write shows through every view
    assert as_torch[0, 0].item() == 42.0 and y.numpy()[0, 0] == 42.0


def test_torch_tensors_in_and_out(strata, matmul_relu):
    import torch

    vm = strata.VirtualMachine(matmul_relu)
    x, w = torch.randn(6, 5), torch.randn(5, 2)
    y = torch.from_dlpack(vm.main(x, w))
    torch.testing.assert_close(y, torch.relu(x @ w), rtol=1e-5, atol=1e-5)


def test_from_torch_round_trip_with_dynamic_batch(strata):
    import torch

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()
    exe = strata.from_torch(module, torch.randn(2, 16), dynamic_shapes={"x0": {0: ("batch", 1, 32)}})
    vm = strata.VirtualMachine(exe)
    for batch in (1, 5, 32):
        x = torch.randn(batch, 16)
        with torch.inference_mode():
            expected = module(x)
        torch.testing.assert_close(torch.from_dlpack(vm.main(x)), expected, rtol=1e-4, atol=1e-5)


def test_from_torch_takes_torch_export_dims_with_either_exporter(strata):
    import torch

    class Residual(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.down = torch.nn.Linear(12, 24), torch.nn.Linear(24, 12)

        def forward(self, tokens, skip):
            return self.down(torch.relu(self.up(tokens))) + skip

    torch.manual_seed(1)
    module = Residual().eval()
    example = (torch.randn(3, 12), torch.randn(3, 12))
    batch = torch.export.Dim("batch", min=1, max=24)
    # By forward() argument name, one Dim shared by both inputs, as torch.export takes them.
    dynamo = strata.from_torch(module, example, dynamic_shapes={"tokens": {0: batch}, "skip": {0: batch}})
    assert dynamo.functions["main"].input_names == ("tokens", "skip")
    # The deprecated exporter, by position.
    torchscript = strata.from_torch(module, example, dynamic_shapes=({0: batch}, {0: batch}), exporter="torchscript")
    for exe in (dynamo, torchscript):
        assert str(exe.functions["main"].params[0].text) == "Tensor[(batch, 12), f32]"
        vm = strata.VirtualMachine(exe)
        for rows in (1, 7, 24):
            x, skip = torch.randn(rows, 12), torch.randn(rows, 12)
            with torch.inference_mode():
                expected = module(x, skip)
            torch.testing.assert_close(torch.from_dlpack(vm.main(x, skip)), expected, rtol=1e-4, atol=1e-5)
        # The Dim's bounds became the executable's (its planned intermediate relies on them).
        assert "bound checked at run time: batch = 1..24" in exe.inspect()
        with pytest.raises(strata.Error, match=r"the model was compiled for batch = 1\.\.24\): got 25"):
            vm.main(torch.randn(25, 12), torch.randn(25, 12))
    with pytest.raises(ValueError, match="exporter must be 'dynamo' or 'torchscript'"):
        strata.from_torch(module, example, exporter="onnx")
    with pytest.raises(ValueError, match="dynamic_shapes names 'tokens', which is not an input"):
        strata.from_torch(module, example, dynamic_shapes={"tokens": {0: batch}}, exporter="torchscript")


def test_save_and_load_mapped(strata, matmul_relu, rng, tmp_path):
    path = tmp_path / "mr.stx"
    matmul_relu.save(path)
    loaded = strata.load(path)
    assert loaded.nbytes == path.stat().st_size == matmul_relu.nbytes
    assert "entry points: main" in loaded.inspect()
    x = rng.standard_normal((2, 3), dtype=np.float32)
    w = rng.standard_normal((3, 4), dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(strata.VirtualMachine(loaded).main(x, w)),
                                  np.asarray(strata.VirtualMachine(matmul_relu).main(x, w)))
    copied = strata.load(path, mmap=False)
    assert copied.entry_points == ["main"]


def test_profile_rows_and_trace(strata, matmul_relu, rng, tmp_path):
    vm = strata.VirtualMachine(matmul_relu)
    x = rng.standard_normal((8, 8), dtype=np.float32)
    trace = tmp_path / "trace.json"
    profile = vm.profile("main", x, x, repeat=4, trace=trace)
    kernels = [r for r in profile.rows if r.kind == "compiled kernel"]
    assert kernels and all(r.calls % 4 == 0 and r.total_us > 0 for r in kernels)
    assert "call compiled kernel" in profile.instruction_kinds
    assert "kernel" in profile.report
    np.testing.assert_allclose(np.asarray(profile.result), np.maximum(x @ x, 0), rtol=1e-5)
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name") == kernels[0].name for e in events)


def test_memory_stats_of_the_last_call(strata, matmul_relu):
    vm = strata.VirtualMachine(matmul_relu)
    vm.main(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32))
    stats = vm.last_memory_stats
    assert stats["lower_bound_bytes"] >= 64 * 64 * 4 and stats["peak_live_bytes"] >= stats["lower_bound_bytes"]


def test_npu_offload_finds_the_packaged_plug_in(strata, rng):
    path = ONNX_FIXTURES / "cnn" / "model.onnx"
    exe = strata.compile(path, target="cpu,npu", dynamic={"batch": (1, 2), "h": (16, 16), "w": (16, 16)})
    assert "sim_npu" in exe.inspect()
    image = rng.standard_normal((1, 3, 16, 16), dtype=np.float32)
    (expected,) = _ort_session(path).run(None, {"image": image})
    vm = strata.VirtualMachine(exe, device_options={"sim_npu": "memory=64M"})
    np.testing.assert_allclose(np.asarray(vm.main(image)), expected, rtol=1e-4, atol=1e-4)
    with pytest.raises(strata.LoadError, match="sim_npu"):
        strata.VirtualMachine(exe, device_options={"sim_npu": "memory=-5"})
    assert exe.devices == ["sim_npu"]
    with pytest.raises(strata.LoadError, match="device 'sim_npu', which devices=\\['cpu'\\] does not allow"):
        strata.VirtualMachine(exe, devices=["cpu"])
    with pytest.raises(strata.LoadError, match="does not use"):
        strata.VirtualMachine(exe, device_options={"gpu": "x=1"})
    strata.VirtualMachine(exe, devices=["cpu", "sim_npu"])
