"""Errors a user meets (each with the CLI's message, the VM still usable after), and threads."""
import threading

import numpy as np
import pytest

from conftest import IDENTITY_SIR


def test_wrong_dimension_is_a_shape_error_and_the_vm_recovers(strata, matmul_relu):
    vm = strata.VirtualMachine(matmul_relu)
    x = np.ones((4, 3), np.float32)
    with pytest.raises(strata.ShapeError, match=r"parameter 'w'.*dimension 0 expected n = 3, got 2"):
        vm.main(x, np.ones((2, 5), np.float32))
    np.testing.assert_array_equal(np.asarray(vm.main(x, np.ones((3, 5), np.float32))), np.full((4, 5), 3.0))


def test_wrong_dtype_and_rank_are_shape_errors(strata, matmul_relu):
    vm = strata.VirtualMachine(matmul_relu)
    with pytest.raises(strata.ShapeError, match=r"parameter 'x'.*expected dtype f32, got i32"):
        vm.main(np.ones((4, 3), np.int32), np.ones((3, 5), np.float32))
    with pytest.raises(strata.ShapeError, match=r"parameter 'x'.*rank 2, got rank 3"):
        vm.main(np.ones((1, 4, 3), np.float32), np.ones((3, 5), np.float32))
    with pytest.raises(strata.ShapeError, match="unsupported element type"):
        vm.main(np.ones((4, 3), np.complex64), np.ones((3, 5), np.float32))


def test_bounded_dimension_outside_its_range_is_a_shape_error(strata):
    from conftest import ONNX_FIXTURES

    vm = strata.VirtualMachine(strata.compile(ONNX_FIXTURES / "mlp" / "model.onnx", dynamic={"batch": (1, 8)}))
    with pytest.raises(strata.ShapeError, match="batch"):
        vm.main(np.ones((9, 64), np.float32))
    assert vm.main(np.ones((8, 64), np.float32)).shape[0] == 8


def test_call_errors(strata, matmul_relu):
    vm = strata.VirtualMachine(matmul_relu)
    with pytest.raises(TypeError, match=r"expects 2 arguments \(x, w\), got 1"):
        vm.main(np.ones((2, 2), np.float32))
    with pytest.raises(KeyError, match="entry points are: main"):
        vm["nope"]
    with pytest.raises(AttributeError, match="entry points are: main"):
        vm.nope
    with pytest.raises(TypeError, match="cannot pass a 'object'"):
        vm.main(object(), np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match="needs a strata.Executable"):
        strata.VirtualMachine("model.stx")


def test_corrupt_and_truncated_files_are_load_errors(strata, matmul_relu, tmp_path):
    path = tmp_path / "mr.stx"
    matmul_relu.save(path)
    data = path.read_bytes()
    (tmp_path / "truncated.stx").write_bytes(data[: len(data) // 2])
    with pytest.raises(strata.LoadError, match="truncated.stx"):
        strata.load(tmp_path / "truncated.stx")
    (tmp_path / "not.stx").write_bytes(b"not an executable at all" * 4)
    with pytest.raises(strata.LoadError, match="not.stx"):
        strata.load(tmp_path / "not.stx")
    with pytest.raises(strata.LoadError, match="No such file"):
        strata.load(tmp_path / "missing.stx")


def test_damaged_files_are_load_errors_unless_checksums_are_skipped(strata, matmul_relu, tmp_path):
    path = tmp_path / "mr.stx"
    matmul_relu.save(path)
    data = bytearray(path.read_bytes())
    producer = data.find(b"strata")  # the producer string, in the header at the start of the file
    assert producer >= 0
    data[producer] = ord("S")
    damaged = tmp_path / "damaged.stx"
    damaged.write_bytes(bytes(data))
    for mmap in (True, False):
        with pytest.raises(strata.LoadError, match=r"damaged\.stx: checksum mismatch in the header \(\d+ bytes at "
                                                   r"offset 0\): the file is damaged"):
            strata.load(damaged, mmap=mmap)
        exe = strata.load(damaged, mmap=mmap, verify_checksums=False)
        assert "checksums: XXH3-64 over every byte, not verified" in exe.inspect()
        x, w = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
        np.testing.assert_array_equal(np.asarray(strata.VirtualMachine(exe).main(x, w)), np.full((2, 4), 3, np.float32))
    assert "checksums: XXH3-64 over every byte, verified" in strata.load(path).inspect()


def test_threads_share_one_executable(strata, matmul_relu):
    errors, results = [], {}

    def work(index):
        try:
            vm = strata.VirtualMachine(matmul_relu)  # a VM per thread, one executable
            rng = np.random.default_rng(index)
            for call in range(20):
                m, n, k = 1 + (index + call) % 9, 2 + call % 5, 1 + index % 7
                x = rng.standard_normal((m, n), dtype=np.float32)
                w = rng.standard_normal((n, k), dtype=np.float32)
                np.testing.assert_allclose(np.asarray(vm.main(x, w)), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
            results[index] = True
        except Exception as e:  # reported below, with the thread's index
            errors.append((index, e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 8


def test_threads_sharing_one_vm_take_turns(strata):
    vm = strata.VirtualMachine(strata.compile(IDENTITY_SIR))
    errors = []

    def work(index):
        try:
            for _ in range(50):
                x = np.full((index + 1, 4), index, np.float32)
                np.testing.assert_array_equal(np.asarray(vm.main(x)), x)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
