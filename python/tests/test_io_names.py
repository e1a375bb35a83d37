"""The model's own input and output names (format 1.6): described, and usable as keyword arguments."""
import numpy as np
import onnxruntime as ort
import pytest

from conftest import REPO

# An ONNX graph whose names are not identifiers: inputs "input.1" and "mask/0",
# outputs "probs" and "logits" (scripts/onnx/export_op_tests.py, references from onnxruntime).
IO_NAMES = REPO / "tests" / "fixtures" / "onnx_ops" / "graph_io_names"


@pytest.fixture(scope="module")
def io_names(strata):
    return strata.compile(IO_NAMES / "model.onnx")


def _run(k):
    run = IO_NAMES / f"run_{k}"
    return [np.load(run / f"{name}.npy") for name in ("in0", "in1", "out0", "out1")]


def test_functions_describe_the_models_input_and_output_names(io_names, matmul_relu):
    main = io_names.functions["main"]
    assert [p.name for p in main.params] == ["input_1", "mask_0"]
    assert main.input_names == ("input.1", "mask/0")
    assert main.output_names == ("probs", "logits")
    # Text IR without the attrs: the parameter names, and one "output0" for the one result.
    assert matmul_relu.functions["main"].input_names == ("x", "w")
    assert matmul_relu.functions["main"].output_names == ("output0",)


@pytest.mark.parametrize("k", [0, 1, 2])
def test_arguments_by_keyword_with_either_name(strata, io_names, k):
    x, mask, probs, logits = _run(k)
    vm = strata.VirtualMachine(io_names)
    calls = {
        "positional": lambda: vm.main(x, mask),
        "model names": lambda: vm.main(**{"mask/0": mask, "input.1": x}),
        "parameter names": lambda: vm.main(mask_0=mask, input_1=x),
        "mixed": lambda: vm.main(x, **{"mask/0": mask}),
        "both kinds of name": lambda: vm["main"](mask_0=mask, **{"input.1": x}),
        "invoke": lambda: vm.invoke("main", **{"input.1": x, "mask/0": mask}),
    }
    for how, call in calls.items():
        got_probs, got_logits = call()
        np.testing.assert_allclose(np.asarray(got_probs), probs, rtol=1e-4, atol=1e-5, err_msg=how)
        np.testing.assert_allclose(np.asarray(got_logits), logits, rtol=1e-4, atol=1e-5, err_msg=how)


def test_keyword_argument_errors(strata, io_names, matmul_relu):
    x, mask, _, _ = _run(1)
    vm = strata.VirtualMachine(io_names)
    expects = r"function 'main' expects 2 arguments \(input_1 \('input\.1'\), mask_0 \('mask/0'\)\), "
    with pytest.raises(TypeError, match=expects + "got an unexpected keyword argument 'probs'"):
        vm.main(x, probs=mask)
    with pytest.raises(TypeError, match=expects + r"got argument 0 \('input_1'\) twice, the second time as 'input\.1'"):
        vm.main(x, **{"input.1": x, "mask/0": mask})
    with pytest.raises(TypeError, match=expects + r"got argument 1 \('mask_0'\) twice, the second time as 'mask/0'"):
        vm.main(input_1=x, mask_0=mask, **{"mask/0": mask})
    with pytest.raises(TypeError, match=expects + r"argument 1 \('mask_0'\) is missing"):
        vm.main(**{"input.1": x})
    with pytest.raises(TypeError, match=expects + "got 3 positional"):
        vm.main(x, mask, x, **{"input.1": x})
    with pytest.raises(TypeError, match=expects + "got 1$"):
        vm.main(x)
    # The VM still runs after the refused calls.
    assert len(vm.main(x, mask)) == 2

    mr = strata.VirtualMachine(matmul_relu)
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(np.asarray(mr.main(w=b, x=a)), np.full((2, 4), 3, np.float32))
    with pytest.raises(TypeError, match=r"expects 2 arguments \(x, w\), got argument 0 \('x'\) twice"):
        mr.main(a, x=a)


@pytest.mark.parametrize("k", [0, 2])
def test_run_takes_a_dict_and_output_names_as_onnxruntime_does(strata, io_names, k):
    x, mask, _, _ = _run(k)
    feed = {"input.1": x, "mask/0": mask}
    session = ort.InferenceSession(str(IO_NAMES / "model.onnx"), providers=["CPUExecutionProvider"])
    vm = strata.VirtualMachine(io_names)
    for wanted in (None, ["logits"], ["logits", "probs"], ["probs"]):
        got = vm.run(wanted, feed)
        expected = session.run(wanted, feed)
        assert len(got) == len(expected), wanted
        for g, e in zip(got, expected):
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-4, atol=1e-5, err_msg=str(wanted))
    # Parameter names work as keys too.
    np.testing.assert_allclose(np.asarray(vm.run(["probs"], {"input_1": x, "mask_0": mask})[0]),
                               session.run(["probs"], feed)[0], rtol=1e-4, atol=1e-5)


def test_run_errors_name_what_exists(strata, io_names):
    x, mask, _, _ = _run(0)
    vm = strata.VirtualMachine(io_names)
    with pytest.raises(ValueError, match=r"'main' has no output named 'prob' \(its outputs: probs, logits\); "
                                         r"did you mean 'probs'\?"):
        vm.run(["prob"], {"input.1": x, "mask/0": mask})
    with pytest.raises(TypeError, match=r"input_feed must be a dict .*the function's inputs: input\.1, mask/0"):
        vm.run(None, [x, mask])
    with pytest.raises(TypeError, match="unexpected keyword argument 'input'"):
        vm.run(None, {"input": x, "mask/0": mask})
    with pytest.raises(KeyError, match="no function 'mian'"):
        vm.run(None, {"input.1": x, "mask/0": mask}, function="mian")
