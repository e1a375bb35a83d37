// consumer EXE.stx N: runs the executable's main on an N x 64 tensor of ones
// and prints the result's shape, the sum of its elements and of their squares, so that the
// install check can compare them with the CLI's.
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "vm/executable.h"
#include "vm/tensor.h"
#include "vm/virtual_machine.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer EXE.stx ROWS\n");
    return 2;
  }
  auto exe = strata::vm::Executable::MapFile(argv[1]);
  if (!exe.ok()) {
    std::fprintf(stderr, "%s\n", exe.status().message().c_str());
    return 1;
  }
  const int64_t rows = std::atoll(argv[2]);
  std::vector<float> ones(static_cast<size_t>(rows * 64), 1.0f);
  const int64_t shape[] = {rows, 64};
  auto x = strata::vm::Tensor::FromValues<float>(std::span<const int64_t>(shape), std::span<const float>(ones));
  if (!x.ok()) return 1;
  strata::vm::VirtualMachine vm(*exe);
  const strata::vm::Value args[] = {strata::vm::Value::FromTensor(*x)};
  auto y = vm.Invoke("main", args);
  if (!y.ok()) {
    std::fprintf(stderr, "%s\n", y.status().message().c_str());
    return 1;
  }
  auto values = y->tensor()->ToVector<float>();
  double sum = 0, squares = 0;
  for (float v : *values) {
    sum += v;
    squares += static_cast<double>(v) * v;
  }
  std::printf("shape %s sum %.6f squares %.6f\n", strata::vm::ShapeToString(y->tensor()->shape()).c_str(), sum,
              squares);
  return 0;
}
