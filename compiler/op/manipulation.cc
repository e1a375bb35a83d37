// Operators of this family are being written; the family registers none yet.
#include "compiler/op/builtin_ops.h"

namespace strata::op {

std::vector<OpDef> ManipulationOps() { return {}; }

}  // namespace strata::op
