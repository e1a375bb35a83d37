// ModelRepository: the models a server serves, laid out as Triton lays them out.
//
//   DIR/<model>/config.json           optional (model_config.h)
//   DIR/<model>/<version>/model.stx   versions are positive integers
//
// Which models are loaded, and who may change that, is the control mode (as
// Triton's --model-control-mode):
//   none      every model at start; the load/unload API is refused.
//   explicit  only the models named at start (--load-model, "*" for all), then
//             whatever the load/unload API asks.
//   poll      every model at start, then the folder is rescanned every
//             poll interval: new models and versions load, removed ones unload,
//             changed files reload. The load/unload API is refused.
//
// A version's file is read into memory by default (ModelFileAccess::kCopy): a
// later write to the file, in place or by replacement, can neither crash the
// server nor change a loaded model. kMap maps it instead (less memory, faster
// start), which is safe only when files are replaced by rename, never
// rewritten in place: a file truncated under the mapping kills the process.
//
// A version that fails (a corrupt file, a function the config names that it
// lacks, a device it cannot open) is not ready and keeps the loader's reason;
// the other versions and models are served. Loads replace or drop a model
// while requests run: a request holds the version it was routed to
// (shared_ptr) until it is answered.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apps/server/model_config.h"
#include "apps/server/scheduler.h"
#include "apps/server/statistics.h"
#include "support/status.h"
#include "vm/executable.h"

namespace strata::server {

enum class ModelControlMode { kNone, kExplicit, kPoll };
enum class ModelFileAccess { kCopy, kMap };

// "none" / "explicit" / "poll"; nullopt for anything else.
std::optional<ModelControlMode> ParseModelControlMode(std::string_view text);
const char* ModelControlModeName(ModelControlMode mode);

// What identifies a file's content cheaply: a changed file has another.
struct FileStamp {
  bool exists = false;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
FileStamp StampOf(const std::string& path);

struct ModelVersion {
  std::string model;
  int64_t version = 0;
  bool ready = false;
  std::string reason;  // why it is not ready
  ModelConfig config;
  std::shared_ptr<const vm::Executable> executable;
  int32_t function_index = -1;
  std::unique_ptr<Scheduler> scheduler;  // null when not ready
  FileStamp stamp;                       // of model.stx when it was read
  VersionStatistics stats;

  const vm::VMFunction& function() const { return executable->functions()[static_cast<size_t>(function_index)]; }
};

struct Model {
  std::string name;
  std::string reason;  // why the model as a whole failed (a bad config), else empty
  FileStamp config_stamp;
  std::set<int64_t> version_folders;  // on disk when it was loaded
  std::map<int64_t, std::shared_ptr<ModelVersion>> versions;
  // Poll: files that changed on disk and failed to load while the version
  // loaded before kept serving; not retried until they change again.
  std::map<int64_t, FileStamp> rejected;
  // The newest ready version, what a request without a version gets.
  std::shared_ptr<ModelVersion> Latest() const;
  // Every version ready and no model-level error.
  bool AllReady() const;
};

struct RepositoryOptions {
  ModelControlMode control_mode = ModelControlMode::kNone;
  ModelFileAccess file_access = ModelFileAccess::kCopy;
  std::chrono::milliseconds poll_interval{15000};
  // kExplicit: the models loaded at start ("*": all).
  std::vector<std::string> startup_models;
};

class ModelRepository {
 public:
  explicit ModelRepository(std::string root, RepositoryOptions options = {});
  ~ModelRepository();  // stops the poll thread

  // Loads the models the control mode loads at start, and starts polling in
  // kPoll. An error when the root cannot be read, or a --load-model names no
  // folder (a bad model is a model that is not ready, not an error).
  Status Start();

  // The load/unload API. Refused (kFailedPrecondition) outside kExplicit; an
  // unknown folder or model is kNotFound; a model that loads but is not ready
  // is kInvalidArgument with the reasons (it stays loaded, not ready, and is
  // listed by the index with them).
  Status Load(const std::string& name);
  Status Unload(const std::string& name);
  // One poll pass (kPoll does it every poll interval; exposed for tests).
  void Poll();

  std::shared_ptr<const Model> Find(const std::string& name) const;
  std::vector<std::shared_ptr<const Model>> Models() const;
  // Every model folder under the root, loaded or not (the repository index).
  std::vector<std::string> FolderNames() const;
  // Strict readiness: every model that should be loaded is, with every version ready.
  // The empty string, or what is not ready.
  std::string NotReadyReason() const;

  const std::string& root() const { return root_; }
  const RepositoryOptions& options() const { return options_; }

 private:
  Status LoadLocked(const std::string& name);
  void PollLoop();

  std::string root_;
  RepositoryOptions options_;
  // Serializes loads, unloads and polls; Find never waits for a load.
  std::mutex control_mutex_;
  mutable std::mutex mutex_;  // guards models_ and wanted_
  std::map<std::string, std::shared_ptr<const Model>> models_;
  // The models that should be loaded (strict readiness asks each to be ready).
  std::set<std::string> wanted_;
  std::thread poller_;
  std::mutex poll_mutex_;
  std::condition_variable poll_wake_;
  bool poll_stop_ = false;
};

// Loads one model folder (exposed for tests). `previous`, when given, lends the
// versions whose file did not change (same config), so that a poll reloads
// only what changed.
std::shared_ptr<Model> LoadModelFolder(const std::string& root, const std::string& name, ModelFileAccess access,
                                       const Model* previous = nullptr);

}  // namespace strata::server
