// A device plug-in that includes a runtime header beyond the plug-in ABI
// (abi/device_plugin.h): the layer check must refuse it.
#include "abi/device_plugin.h"
#include "vm/executable.h"
