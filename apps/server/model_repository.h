// ModelRepository: the models a server serves, laid out as Triton lays them out.
//
//   DIR/<model>/config.json           optional (model_config.h)
//   DIR/<model>/<version>/model.stx   versions are positive integers
//
// Every version is loaded (memory-mapped and verified) when its model is
// loaded. A version that fails (a corrupt file, a function the config names
// that it lacks, a device it cannot open) is not ready and keeps the loader's
// reason; the other versions and models are served. Load and Unload replace
// or drop a model while requests run: a request holds the version it was
// routed to (shared_ptr) until it is answered.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apps/server/model_config.h"
#include "apps/server/scheduler.h"
#include "support/status.h"
#include "vm/executable.h"

namespace strata::server {

struct ModelVersion {
  std::string model;
  int64_t version = 0;
  bool ready = false;
  std::string reason;  // why it is not ready
  ModelConfig config;
  std::shared_ptr<const vm::Executable> executable;
  int32_t function_index = -1;
  std::unique_ptr<Scheduler> scheduler;  // null when not ready
};

struct Model {
  std::string name;
  std::string reason;  // why the model as a whole failed (a bad config), else empty
  std::map<int64_t, std::shared_ptr<ModelVersion>> versions;
  // The newest ready version, what a request without a version gets.
  std::shared_ptr<ModelVersion> Latest() const;
};

class ModelRepository {
 public:
  explicit ModelRepository(std::string root) : root_(std::move(root)) {}

  // Loads every model folder under the root; an error only when the root
  // cannot be read (a bad model is a model that is not ready).
  Status LoadAll();
  // (Re)loads one model from its folder; an error (kNotFound) when the folder
  // does not exist. The old versions serve their requests in flight.
  Status Load(const std::string& name);
  // Drops one model; kNotFound when it is not loaded.
  Status Unload(const std::string& name);

  std::shared_ptr<const Model> Find(const std::string& name) const;
  std::vector<std::shared_ptr<const Model>> Models() const;
  // Every model folder under the root, loaded or not (the repository index).
  std::vector<std::string> FolderNames() const;
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Model>> models_;
};

// Loads one model folder (exposed for tests).
std::shared_ptr<Model> LoadModelFolder(const std::string& root, const std::string& name);

}  // namespace strata::server
