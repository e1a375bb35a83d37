// libFuzzer target: strata-server's per-model config.json (model_config.h).
#include <cstdint>
#include <string_view>

#include "apps/server/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size);
  (void)strata::server::ParseModelConfig(json, "fuzz/config.json");
  return 0;
}
