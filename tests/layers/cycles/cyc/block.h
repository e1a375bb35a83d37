// Fixture of LayerCheck.AnIncludeCycleFailsTheCheck.
#pragma once
