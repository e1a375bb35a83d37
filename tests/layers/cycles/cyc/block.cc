// ... and block's source uses pool: a cycle between the two components.
#include "cyc/pool.h"
