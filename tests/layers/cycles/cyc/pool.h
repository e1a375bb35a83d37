// Fixture of LayerCheck.AnIncludeCycleFailsTheCheck: pool uses block...
#pragma once

#include "cyc/block.h"
