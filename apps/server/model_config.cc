// ModelConfig from JSON (rapidjson); see model_config.h.
#include "apps/server/model_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/server/json_util.h"

namespace strata::server {
namespace {

Status FieldError(const std::string& path, const std::string& field, const std::string& what) {
  return Status(ErrorStatus() << path << ": field '" << field << "': " << what);
}

Status ReadCount(const rapidjson::Value& v, const std::string& path, const std::string& field, int64_t lo, int64_t hi,
                 int64_t* out) {
  if (!v.IsInt64()) return FieldError(path, field, "expected an integer");
  const int64_t n = v.GetInt64();
  if (n < lo || n > hi) {
    return FieldError(
        path, field,
        "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + std::to_string(n));
  }
  *out = n;
  return Status::Ok();
}

}  // namespace

StatusOr<ModelConfig> ParseModelConfig(std::string_view json, const std::string& path) {
  rapidjson::Document doc;
  std::string error;
  if (!ParseJson(json, &doc, &error)) return Status(ErrorStatus() << path << ": " << error);
  if (!doc.IsObject()) return Status(ErrorStatus() << path << ": expected a JSON object");
  ModelConfig config;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string name = it->name.GetString();
    const rapidjson::Value& v = it->value;
    if (name == "function") {
      if (!v.IsString() || v.GetStringLength() == 0) return FieldError(path, name, "expected a function name");
      config.function = v.GetString();
    } else if (name == "device_options") {
      if (!v.IsObject()) return FieldError(path, name, "expected an object of device name -> options string");
      for (auto d = v.MemberBegin(); d != v.MemberEnd(); ++d) {
        if (!d->value.IsString()) {
          return FieldError(path, name + "." + d->name.GetString(), "expected an options string");
        }
        config.device_options[d->name.GetString()] = d->value.GetString();
      }
    } else if (name == "instance_count") {
      STRATA_RETURN_IF_ERROR(ReadCount(v, path, name, 1, 256, &config.instance_count));
    } else if (name == "max_queue_size") {
      STRATA_RETURN_IF_ERROR(ReadCount(v, path, name, 1, 1 << 20, &config.max_queue_size));
    } else if (name == "timeout_ms") {
      STRATA_RETURN_IF_ERROR(ReadCount(v, path, name, 1, 24 * 3600 * 1000, &config.timeout_ms));
    } else if (name == "dynamic_batching") {
      if (!v.IsObject()) return FieldError(path, name, "expected an object");
      DynamicBatching batching;
      for (auto b = v.MemberBegin(); b != v.MemberEnd(); ++b) {
        const std::string field = name + "." + b->name.GetString();
        if (std::string_view(b->name.GetString()) == "max_batch_size") {
          STRATA_RETURN_IF_ERROR(ReadCount(b->value, path, field, 1, 1 << 16, &batching.max_batch_size));
        } else if (std::string_view(b->name.GetString()) == "max_queue_delay_us") {
          STRATA_RETURN_IF_ERROR(ReadCount(b->value, path, field, 0, 10'000'000, &batching.max_queue_delay_us));
        } else {
          return FieldError(path, field, "unknown field (known: max_batch_size, max_queue_delay_us)");
        }
      }
      config.dynamic_batching = batching;
    } else {
      return FieldError(path, name,
                        "unknown field (known: function, device_options, instance_count, max_queue_size, "
                        "timeout_ms, dynamic_batching)");
    }
  }
  return config;
}

StatusOr<ModelConfig> ReadModelConfig(const std::string& model_dir) {
  const std::filesystem::path path = std::filesystem::path(model_dir) / "config.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return ModelConfig();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorStatus(StatusCode::kNotFound) << path.string() << ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseModelConfig(text.str(), path.string());
}

}  // namespace strata::server
