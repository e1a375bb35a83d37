"""strata.compile from every kind of model, and its errors."""
import os

import numpy as np
import onnx
import pytest

from conftest import EXAMPLES, IDENTITY_SIR, MATMUL_RELU_SIR, ONNX_FIXTURES


def test_compile_text_ir_string_runs(strata, rng):
    exe = strata.compile(MATMUL_RELU_SIR)
    x = rng.standard_normal((5, 7), dtype=np.float32)
    w = rng.standard_normal((7, 3), dtype=np.float32)
    y = strata.VirtualMachine(exe).main(x, w)
    np.testing.assert_allclose(np.asarray(y), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


def test_compile_sir_file_and_pathlike(strata, rng):
    exe = strata.compile(EXAMPLES / "matmul_relu.sir")  # a PathLike
    again = strata.compile(str(EXAMPLES / "matmul_relu.sir"))
    assert exe.entry_points == again.entry_points == ["main"]
    x = rng.standard_normal((2, 3), dtype=np.float32)
    w = rng.standard_normal((3, 4), dtype=np.float32)
    np.testing.assert_allclose(np.asarray(strata.VirtualMachine(exe).main(x, w)), np.maximum(x @ w, 0), rtol=1e-5)


def test_compile_onnx_path_model_proto_and_bytes_agree(strata, rng):
    path = ONNX_FIXTURES / "mlp" / "model.onnx"
    model = onnx.load(str(path))
    x = rng.standard_normal((3, 64), dtype=np.float32)
    results = []
    for source in (path, str(path), model, model.SerializeToString()):
        exe = strata.compile(source, dynamic={"batch": (1, 16)})
        results.append(np.asarray(strata.VirtualMachine(exe).main(x)))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_compile_options_reach_the_compiler(strata, tmp_path):
    exe = strata.compile(MATMUL_RELU_SIR, fuse=False, memory_plan=False, dump_ir=tmp_path / "ir")
    dumps = sorted(os.listdir(tmp_path / "ir"))
    assert dumps[0].startswith("00-") and any("LegalizeOps" in d for d in dumps)
    assert not any("FuseOps" in d for d in dumps)  # fuse=False skips it
    assert "main" in exe.inspect()


def test_a_cpu_list_carries_kernels_for_each_level(strata, rng):
    exe = strata.compile(MATMUL_RELU_SIR, cpu="x86-64-v4,x86-64-v3")
    text = exe.inspect()
    assert "cpu x86-64-v4" in text and "cpu x86-64-v3" in text and "alternative of [0]" in text
    x = rng.standard_normal((4, 6), dtype=np.float32)
    w = rng.standard_normal((6, 5), dtype=np.float32)
    np.testing.assert_allclose(np.asarray(strata.VirtualMachine(exe).main(x, w)), np.maximum(x @ w, 0), rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(strata.CompileError, match="CPU 'x86-64-v3' is named twice"):
        strata.compile(MATMUL_RELU_SIR, cpu="x86-64-v3,x86-64-v3")


def test_text_error_names_line_and_column(strata):
    text = "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n  return y\n}\n"
    with pytest.raises(strata.CompileError, match=r"<string>:2:10: error: undefined variable 'y'"):
        strata.compile(text)


def test_onnx_error_names_node_op_and_opset(strata):
    node = onnx.helper.make_node("Det", ["x"], ["y"], name="det_node")
    graph = onnx.helper.make_graph([node], "g", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 3])],
                                   [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    with pytest.raises(strata.CompileError) as caught:
        strata.compile(model)
    message = str(caught.value)
    assert "det_node" in message and "Det" in message and "17" in message


def test_compile_argument_errors(strata, tmp_path):
    with pytest.raises(strata.CompileError, match="cannot open '.*missing.onnx': No such file or directory"):
        strata.compile(tmp_path / "missing.onnx")
    (tmp_path / "folder.onnx").mkdir()
    with pytest.raises(strata.CompileError, match="it is a directory"):
        strata.compile(tmp_path / "folder.onnx")
    with pytest.raises(strata.CompileError, match="the file is empty"):
        strata.compile("\n  \n")
    with pytest.raises(strata.CompileError, match=r"defines no graph function \(func @name\)"):
        strata.compile("prim_func @k(A: Buffer[(4,), f32]) {\n  A[0] = 1.0\n}\n")
    with pytest.raises(strata.CompileError, match="unknown target 'gpu'"):
        strata.compile(IDENTITY_SIR, target="cpu,gpu")
    with pytest.raises(strata.CompileError, match="unknown target 'nu'.*did you mean 'npu'"):
        strata.compile(IDENTITY_SIR, target="cpu,nu")
    with pytest.raises(strata.CompileError, match=r"no dynamic dimension named 'btach' \(it has: batch\); "
                                                  r"did you mean 'batch'\?"):
        strata.compile(ONNX_FIXTURES / "mlp" / "model.onnx", dynamic={"btach": (1, 4)})
    with pytest.raises(strata.CompileError, match="must include cpu"):
        strata.compile(IDENTITY_SIR, target="npu")
    with pytest.raises(strata.CompileError, match="dynamic applies to ONNX models"):
        strata.compile(IDENTITY_SIR, dynamic={"n": (1, 4)})
    with pytest.raises(strata.CompileError, match="0 <= lo <= hi"):
        strata.compile(ONNX_FIXTURES / "mlp" / "model.onnx", dynamic={"batch": (8, 2)})
    with pytest.raises(strata.CompileError, match="ANCHOR:PASS"):
        strata.compile(IDENTITY_SIR, pass_before=["LegalizeOps"])
    with pytest.raises(TypeError, match="cannot compile a 'int'"):
        strata.compile(42)
    # Every error is a strata.Error.
    assert issubclass(strata.CompileError, strata.Error)
    assert issubclass(strata.LoadError, strata.Error)
    assert issubclass(strata.ShapeError, strata.Error)
    assert issubclass(strata.ExecutionError, strata.Error)


def test_unknown_byoc_backend_is_a_compile_error(strata):
    with pytest.raises(strata.CompileError, match="nosuch"):
        strata.compile(MATMUL_RELU_SIR, byoc=["nosuch"])


def test_functions_describe_symbolic_shapes_and_dtypes(strata, matmul_relu):
    main = matmul_relu.functions["main"]
    assert [p.name for p in main.params] == ["x", "w"]
    x, w = main.params
    assert (x.kind, x.dtype, x.shape, x.text) == ("tensor", "float32", ("m", "n"), "Tensor[(m, n), f32]")
    assert w.shape == ("n", "k")
    assert main.result.shape == ("m", "k") and main.result.dtype == "float32"
    assert str(main) == "main(x: Tensor[(m, n), f32], w: Tensor[(n, k), f32]) -> Tensor[(m, k), f32]"


def test_functions_of_an_onnx_model_keep_static_and_symbolic_dims(strata):
    exe = strata.compile(ONNX_FIXTURES / "mlp" / "model.onnx", dynamic={"batch": (1, 16)})
    (x,) = exe.functions["main"].params
    assert x.shape == ("batch", 64) and x.dtype == "float32"
