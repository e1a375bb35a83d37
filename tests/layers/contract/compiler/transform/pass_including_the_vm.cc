// A pass that reaches into the runtime: the layer check must refuse both
// includes. Passes speak the graph's memory and device operators
// (compiler/analysis/memory_ops.h); only the VM backend names builtins.
#include "abi/builtin_names.h"
#include "vm/virtual_machine.h"
