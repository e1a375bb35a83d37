// The names of the VM's builtins (docs/vm_builtins.md), defined once.
//
// The compiler emits calls to them (call_packed in the lowered IR, Library
// functions in the executable) and the runtime registers them under these names
// (vm/builtins.cc), so both sides spell each name from this one header.
#pragma once

namespace strata::vm::builtin {

// X(constant, name)
#define STRATA_VM_BUILTINS(X)                                        \
  X(kShapeOf, "vm.builtin.shape_of")                                 \
  X(kAllocShapeHeap, "vm.builtin.alloc_shape_heap")                  \
  X(kCheckTensorInfo, "vm.builtin.check_tensor_info")                \
  X(kCheckShapeInfo, "vm.builtin.check_shape_info")                  \
  X(kCheckPrimInfo, "vm.builtin.check_prim_info")                    \
  X(kCheckTupleInfo, "vm.builtin.check_tuple_info")                  \
  X(kMatchShape, "vm.builtin.match_shape")                           \
  X(kMakeShape, "vm.builtin.make_shape")                             \
  X(kHeapScalar, "vm.builtin.heap_scalar")                           \
  X(kCheckBound, "vm.builtin.check_bound")                           \
  X(kAllocStorage, "vm.builtin.alloc_storage")                       \
  X(kAllocTensorFromStorage, "vm.builtin.alloc_tensor_from_storage") \
  X(kAllocTensor, "vm.builtin.alloc_tensor")                         \
  X(kToDevice, "vm.builtin.to_device")                               \
  X(kToHost, "vm.builtin.to_host")                                   \
  X(kAllocDeviceTensor, "vm.builtin.alloc_device_tensor")            \
  X(kTuple, "vm.builtin.tuple")                                      \
  X(kTupleGetItem, "vm.builtin.tuple_getitem")                       \
  X(kCopy, "vm.builtin.copy")                                        \
  X(kNull, "vm.builtin.null")

#define STRATA_VM_BUILTIN_NAME(constant, name) inline constexpr const char* constant = name;
STRATA_VM_BUILTINS(STRATA_VM_BUILTIN_NAME)
#undef STRATA_VM_BUILTIN_NAME

}  // namespace strata::vm::builtin
