// A pass that reaches into the runtime past its contract (abi/): the layer
// check must refuse it. Passes name builtins through abi/builtin_names.h.
#include "abi/builtin_names.h"
#include "vm/virtual_machine.h"
