// ModelRepository; see model_repository.h.
#include "apps/server/model_repository.h"

#include <algorithm>
#include <filesystem>

#include <sys/stat.h>

#include "apps/server/batching.h"
#include "apps/server/log.h"

namespace strata::server {
namespace {

namespace fs = std::filesystem;

bool IsVersionName(const std::string& name) {
  return !name.empty() && name.size() <= 18 && std::all_of(name.begin(), name.end(), ::isdigit) && name[0] != '0';
}

bool IsModelName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
         name.find('\0') == std::string::npos;
}

std::shared_ptr<ModelVersion> LoadVersion(const Model& model, const ModelConfig& config, int64_t version,
                                          const fs::path& folder, ModelFileAccess access) {
  auto v = std::make_shared<ModelVersion>();
  v->model = model.name;
  v->version = version;
  v->config = config;
  const fs::path file = folder / "model.stx";
  v->stamp = StampOf(file.string());
  vm::LoadOptions options;
  options.device_options = config.device_options;
  StatusOr<std::shared_ptr<const vm::Executable>> loaded = access == ModelFileAccess::kMap
                                                               ? vm::Executable::MapFile(file.string(), options)
                                                               : vm::Executable::LoadFromFile(file.string(), options);
  if (!loaded.ok()) {
    v->reason = loaded.status().message();
    return v;
  }
  v->executable = *std::move(loaded);
  const std::optional<int32_t> index = v->executable->FindEntryPoint(config.function);
  if (!index) {
    v->reason = file.string() + ": no function '" + config.function +
                "' to serve (entry points: " + v->executable->EntryPointNames() + "); set \"function\" in config.json";
    return v;
  }
  v->function_index = *index;
  if (config.dynamic_batching) {
    const Status batchable = CheckBatchable(v->function());
    if (!batchable.ok()) {
      v->reason = file.string() + ": dynamic_batching needs a batch dimension: " + batchable.message();
      return v;
    }
  }
  v->scheduler = std::make_unique<Scheduler>(v->executable, *index, config.instance_count, config.max_queue_size,
                                             config.dynamic_batching ? &*config.dynamic_batching : nullptr);
  v->ready = true;
  return v;
}

void LogModel(const Model& model, const char* how) {
  if (!model.reason.empty()) {
    Log(LogLevel::kError, "model_load_failed", {{"model", model.name}, {"reason", model.reason}, {"by", how}});
    return;
  }
  for (const auto& [number, version] : model.versions) {
    if (version->ready) {
      Log(LogLevel::kInfo, "model_loaded",
          {{"model", model.name}, {"version", number}, {"state", "READY"}, {"by", how}});
    } else {
      Log(LogLevel::kError, "model_load_failed",
          {{"model", model.name},
           {"version", number},
           {"state", "UNAVAILABLE"},
           {"reason", version->reason},
           {"by", how}});
    }
  }
}

// "version 1: ...; version 3: ..." for the versions that are not ready.
std::string NotReadyVersions(const Model& model) {
  if (!model.reason.empty()) return model.reason;
  std::string out;
  for (const auto& [n, v] : model.versions) {
    if (!v->ready) out += (out.empty() ? "" : "; ") + ("version " + std::to_string(n) + ": " + v->reason);
  }
  return out;
}

}  // namespace

std::optional<ModelControlMode> ParseModelControlMode(std::string_view text) {
  if (text == "none") return ModelControlMode::kNone;
  if (text == "explicit") return ModelControlMode::kExplicit;
  if (text == "poll") return ModelControlMode::kPoll;
  return std::nullopt;
}

const char* ModelControlModeName(ModelControlMode mode) {
  switch (mode) {
    case ModelControlMode::kNone: return "none";
    case ModelControlMode::kExplicit: return "explicit";
    case ModelControlMode::kPoll: return "poll";
  }
  return "none";
}

FileStamp StampOf(const std::string& path) {
  struct stat st {};
  FileStamp stamp;
  if (::stat(path.c_str(), &st) != 0) return stamp;
  stamp.exists = true;
  stamp.inode = st.st_ino;
  stamp.size = st.st_size;
  stamp.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  return stamp;
}

std::shared_ptr<ModelVersion> Model::Latest() const {
  for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
    if (it->second->ready) return it->second;
  }
  return nullptr;
}

bool Model::AllReady() const {
  if (!reason.empty() || versions.empty()) return false;
  return std::all_of(versions.begin(), versions.end(), [](const auto& v) { return v.second->ready; });
}

std::shared_ptr<Model> LoadModelFolder(const std::string& root, const std::string& name, ModelFileAccess access,
                                       const Model* previous) {
  auto model = std::make_shared<Model>();
  model->name = name;
  const fs::path folder = fs::path(root) / name;
  model->config_stamp = StampOf((folder / "config.json").string());
  std::error_code list_ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, list_ec)) {
    std::error_code dir_ec;
    const std::string version_name = entry.path().filename().string();
    if (entry.is_directory(dir_ec) && IsVersionName(version_name))
      model->version_folders.insert(std::stoll(version_name));
  }
  StatusOr<ModelConfig> config = ReadModelConfig(folder.string());
  if (!config.ok()) {
    model->reason = config.status().message();
    return model;
  }
  // Versions of the previous load may be kept only when the config is the same.
  const bool reuse = previous != nullptr && previous->reason.empty() && previous->config_stamp == model->config_stamp;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
    const std::string version_name = entry.path().filename().string();
    std::error_code dir_ec;
    if (!entry.is_directory(dir_ec) || !IsVersionName(version_name)) continue;
    const int64_t version = std::stoll(version_name);
    auto old = reuse ? previous->versions.find(version) : model->versions.end();
    if (reuse && old != previous->versions.end()) {
      const FileStamp stamp = StampOf((entry.path() / "model.stx").string());
      auto rejected = previous->rejected.find(version);
      if (old->second->stamp == stamp || (rejected != previous->rejected.end() && rejected->second == stamp)) {
        model->versions[version] = old->second;
        if (rejected != previous->rejected.end()) model->rejected.insert(*rejected);
        continue;
      }
    }
    std::shared_ptr<ModelVersion> loaded = LoadVersion(*model, *config, version, entry.path(), access);
    if (!loaded->ready && reuse && old != previous->versions.end() && old->second->ready) {
      // A half-copied or broken replacement must not take a working version down.
      Log(LogLevel::kWarning, "model_reload_failed",
          {{"model", name}, {"version", version}, {"reason", loaded->reason}, {"serving", "the file loaded before"}});
      model->rejected[version] = loaded->stamp;
      model->versions[version] = old->second;
      continue;
    }
    model->versions[version] = std::move(loaded);
  }
  if (ec) {
    model->reason = folder.string() + ": cannot list the versions: " + ec.message();
  } else if (model->versions.empty()) {
    model->reason = folder.string() + ": no version folders (expected " + folder.string() + "/1/model.stx)";
  }
  return model;
}

ModelRepository::ModelRepository(std::string root, RepositoryOptions options)
    : root_(std::move(root)), options_(std::move(options)) {}

ModelRepository::~ModelRepository() {
  {
    std::lock_guard<std::mutex> lock(poll_mutex_);
    poll_stop_ = true;
  }
  poll_wake_.notify_all();
  if (poller_.joinable()) poller_.join();
}

Status ModelRepository::Start() {
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) {
    return Status(ErrorStatus(StatusCode::kNotFound) << "model repository '" << root_ << "' is not a directory");
  }
  std::vector<std::string> names;
  if (options_.control_mode == ModelControlMode::kExplicit) {
    for (const std::string& name : options_.startup_models) {
      if (name == "*") {
        names = FolderNames();
        break;
      }
      names.push_back(name);
    }
  } else {
    names = FolderNames();
  }
  std::lock_guard<std::mutex> control(control_mutex_);
  for (const std::string& name : names) {
    const Status loaded = LoadLocked(name);
    if (loaded.code() == StatusCode::kNotFound) return Status(loaded).WithContext("--load-model: ");
  }
  if (options_.control_mode == ModelControlMode::kPoll) poller_ = std::thread([this] { PollLoop(); });
  return Status::Ok();
}

Status ModelRepository::LoadLocked(const std::string& name) {
  std::error_code ec;
  if (!IsModelName(name) || !fs::is_directory(fs::path(root_) / name, ec)) {
    return Status(ErrorStatus(StatusCode::kNotFound)
                  << "no model folder '" << name << "' in the repository '" << root_ << "'");
  }
  std::shared_ptr<const Model> model = LoadModelFolder(root_, name, options_.file_access);
  LogModel(*model, "load");
  const std::string failures = NotReadyVersions(*model);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    models_[name] = model;
    wanted_.insert(name);
  }
  if (!failures.empty()) {
    return Status(ErrorStatus(StatusCode::kInvalidArgument) << "model '" << name << "' is not ready: " << failures);
  }
  return Status::Ok();
}

Status ModelRepository::Load(const std::string& name) {
  if (options_.control_mode != ModelControlMode::kExplicit) {
    return Status(ErrorStatus(StatusCode::kFailedPrecondition)
                  << "loading models through the API is disabled (--model-control-mode "
                  << ModelControlModeName(options_.control_mode) << "; start the server with "
                  << "--model-control-mode explicit to allow it)");
  }
  std::lock_guard<std::mutex> control(control_mutex_);
  return LoadLocked(name);
}

Status ModelRepository::Unload(const std::string& name) {
  if (options_.control_mode != ModelControlMode::kExplicit) {
    return Status(ErrorStatus(StatusCode::kFailedPrecondition)
                  << "unloading models through the API is disabled (--model-control-mode "
                  << ModelControlModeName(options_.control_mode) << "; start the server with "
                  << "--model-control-mode explicit to allow it)");
  }
  std::lock_guard<std::mutex> control(control_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wanted_.erase(name);
    if (models_.erase(name) == 0) {
      return Status(ErrorStatus(StatusCode::kNotFound) << "model '" << name << "' is not loaded");
    }
  }
  Log(LogLevel::kInfo, "model_unloaded", {{"model", name}, {"by", "unload"}});
  return Status::Ok();
}

void ModelRepository::Poll() {
  std::lock_guard<std::mutex> control(control_mutex_);
  const std::vector<std::string> folders = FolderNames();
  for (const std::string& name : folders) {
    std::shared_ptr<const Model> old = Find(name);
    // Cheap check first: the config's and every version file's stamp.
    const fs::path folder = fs::path(root_) / name;
    bool changed = old == nullptr || old->config_stamp != StampOf((folder / "config.json").string());
    std::set<int64_t> on_disk;
    std::error_code ec;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
      const std::string version_name = entry.path().filename().string();
      std::error_code dir_ec;
      if (!entry.is_directory(dir_ec) || !IsVersionName(version_name)) continue;
      const int64_t v = std::stoll(version_name);
      on_disk.insert(v);
      if (old == nullptr) continue;
      auto it = old->versions.find(v);
      const FileStamp stamp = StampOf((entry.path() / "model.stx").string());
      auto rejected = old->rejected.find(v);
      const bool same = it != old->versions.end() &&
                        (it->second->stamp == stamp || (rejected != old->rejected.end() && rejected->second == stamp));
      changed = changed || !same;
    }
    if (old != nullptr && old->version_folders != on_disk) changed = true;
    // A model that failed as a whole (its config) has no versions to compare.
    if (old != nullptr && !old->reason.empty()) {
      changed = old->config_stamp != StampOf((folder / "config.json").string()) || old->version_folders != on_disk;
    }
    if (!changed) continue;
    std::shared_ptr<const Model> model = LoadModelFolder(root_, name, options_.file_access, old.get());
    LogModel(*model, "poll");
    std::lock_guard<std::mutex> lock(mutex_);
    models_[name] = std::move(model);
    wanted_.insert(name);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = models_.begin(); it != models_.end();) {
    if (std::binary_search(folders.begin(), folders.end(), it->first)) {
      ++it;
      continue;
    }
    Log(LogLevel::kInfo, "model_unloaded", {{"model", it->first}, {"by", "poll"}});
    wanted_.erase(it->first);
    it = models_.erase(it);
  }
}

void ModelRepository::PollLoop() {
  std::unique_lock<std::mutex> lock(poll_mutex_);
  while (!poll_wake_.wait_for(lock, options_.poll_interval, [this] { return poll_stop_; })) {
    lock.unlock();
    Poll();
    lock.lock();
  }
}

std::shared_ptr<const Model> ModelRepository::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = models_.find(name);
  return it == models_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const Model>> ModelRepository::Models() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<const Model>> out;
  for (const auto& [name, model] : models_) out.push_back(model);
  return out;
}

std::vector<std::string> ModelRepository::FolderNames() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(root_, ec)) {
    std::error_code dir_ec;
    if (entry.is_directory(dir_ec)) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ModelRepository::NotReadyReason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& name : wanted_) {
    auto it = models_.find(name);
    if (it == models_.end()) return "model '" + name + "' is not loaded";
    if (!it->second->AllReady()) return "model '" + name + "' is not ready: " + NotReadyVersions(*it->second);
  }
  return "";
}

}  // namespace strata::server
