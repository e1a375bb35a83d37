// The per-model configuration of a model repository: DIR/<model>/config.json.
//
//   {
//     "function": "main",                          // the entry point to serve
//     "device_options": {"sim_npu": "memory=64M"}, // replaces the executable's
//     "instance_count": 2,                         // VMs running requests at once
//     "max_queue_size": 64,                        // waiting requests; more get 503
//     "timeout_ms": 30000,                         // a request waiting or running longer gets 504
//     "dynamic_batching": {"max_batch_size": 8, "max_queue_delay_us": 500}
//   }
//
// Every field is optional; a missing file means all defaults. Unknown fields
// are errors (a misspelt option must not be ignored silently), each naming the
// file and the field.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "support/status.h"

namespace strata::server {

struct DynamicBatching {
  int64_t max_batch_size = 8;
  int64_t max_queue_delay_us = 500;
};

struct ModelConfig {
  std::string function = "main";
  std::map<std::string, std::string> device_options;
  int64_t instance_count = 1;
  int64_t max_queue_size = 64;
  int64_t timeout_ms = 30000;
  std::optional<DynamicBatching> dynamic_batching;  // off unless configured
};

// Parses the text of a config.json; `path` names it in errors.
StatusOr<ModelConfig> ParseModelConfig(std::string_view json, const std::string& path);

// Reads DIR/<model>/config.json when it exists, else the defaults.
StatusOr<ModelConfig> ReadModelConfig(const std::string& model_dir);

}  // namespace strata::server
