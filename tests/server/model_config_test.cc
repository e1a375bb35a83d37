// config.json of a model repository: every field, and every error names the file and field.
#include "apps/server/model_config.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

TEST(ModelConfig, EmptyObjectIsTheDefaults) {
  StatusOr<ModelConfig> config = ParseModelConfig("{}", "m/config.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->function, "main");
  EXPECT_EQ(config->instance_count, 1);
  EXPECT_FALSE(config->dynamic_batching.has_value());
}

TEST(ModelConfig, EveryField) {
  StatusOr<ModelConfig> config = ParseModelConfig(
      R"({"function": "f", "device_options": {"sim_npu": "memory=64M"}, "instance_count": 3,
          "max_queue_size": 7, "timeout_ms": 250, "dynamic_batching": {"max_batch_size": 16,
          "max_queue_delay_us": 100}})",
      "m/config.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->function, "f");
  EXPECT_EQ(config->device_options.at("sim_npu"), "memory=64M");
  EXPECT_EQ(config->instance_count, 3);
  EXPECT_EQ(config->max_queue_size, 7);
  EXPECT_EQ(config->timeout_ms, 250);
  ASSERT_TRUE(config->dynamic_batching.has_value());
  EXPECT_EQ(config->dynamic_batching->max_batch_size, 16);
  EXPECT_EQ(config->dynamic_batching->max_queue_delay_us, 100);
}

TEST(ModelConfig, ErrorsNameTheFileAndTheField) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {"{", "m/config.json: invalid JSON at byte 1"},
      {"[]", "m/config.json: expected a JSON object"},
      {R"({"instance_cnt": 2})", "field 'instance_cnt': unknown field"},
      {R"({"instance_count": 0})", "field 'instance_count': must be between 1 and 256, got 0"},
      {R"({"instance_count": "2"})", "field 'instance_count': expected an integer"},
      {R"({"function": ""})", "field 'function': expected a function name"},
      {R"({"device_options": {"sim_npu": 5}})", "field 'device_options.sim_npu': expected an options string"},
      {R"({"dynamic_batching": {"max_batch": 4}})", "field 'dynamic_batching.max_batch': unknown field"},
      {R"({"timeout_ms": -1})", "field 'timeout_ms': must be between 1"},
  };
  for (const Case& c : cases) {
    StatusOr<ModelConfig> config = ParseModelConfig(c.json, "m/config.json");
    ASSERT_FALSE(config.ok()) << c.json;
    EXPECT_NE(config.status().message().find(c.message), std::string::npos)
        << c.json << " -> " << config.status().message();
  }
}

}  // namespace
}  // namespace strata::server
