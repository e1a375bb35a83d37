// ModelRepository; see model_repository.h.
#include "apps/server/model_repository.h"

#include <algorithm>
#include <filesystem>

#include "apps/server/batching.h"

namespace strata::server {
namespace {

namespace fs = std::filesystem;

bool IsVersionName(const std::string& name) {
  return !name.empty() && name.size() <= 18 && std::all_of(name.begin(), name.end(), ::isdigit) && name[0] != '0';
}

std::shared_ptr<ModelVersion> LoadVersion(const Model& model, const ModelConfig& config, int64_t version,
                                          const fs::path& folder) {
  auto v = std::make_shared<ModelVersion>();
  v->model = model.name;
  v->version = version;
  v->config = config;
  const fs::path file = folder / "model.stx";
  vm::LoadOptions options;
  options.device_options = config.device_options;
  StatusOr<std::shared_ptr<const vm::Executable>> loaded = vm::Executable::MapFile(file.string(), options);
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
    const Status batchable = CheckBatchable(v->executable->functions()[static_cast<size_t>(*index)]);
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

}  // namespace

std::shared_ptr<ModelVersion> Model::Latest() const {
  for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
    if (it->second->ready) return it->second;
  }
  return nullptr;
}

std::shared_ptr<Model> LoadModelFolder(const std::string& root, const std::string& name) {
  auto model = std::make_shared<Model>();
  model->name = name;
  const fs::path folder = fs::path(root) / name;
  StatusOr<ModelConfig> config = ReadModelConfig(folder.string());
  if (!config.ok()) {
    model->reason = config.status().message();
    return model;
  }
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
    const std::string version_name = entry.path().filename().string();
    if (!entry.is_directory() || !IsVersionName(version_name)) continue;
    const int64_t version = std::stoll(version_name);
    model->versions[version] = LoadVersion(*model, *config, version, entry.path());
  }
  if (ec) {
    model->reason = folder.string() + ": cannot list the versions: " + ec.message();
  } else if (model->versions.empty()) {
    model->reason = folder.string() + ": no version folders (expected " + folder.string() + "/1/model.stx)";
  }
  return model;
}

Status ModelRepository::LoadAll() {
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) {
    return Status(ErrorStatus(StatusCode::kNotFound) << "model repository '" << root_ << "' is not a directory");
  }
  for (const std::string& name : FolderNames()) STRATA_RETURN_IF_ERROR(Load(name));
  return Status::Ok();
}

Status ModelRepository::Load(const std::string& name) {
  std::error_code ec;
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." ||
      !fs::is_directory(fs::path(root_) / name, ec)) {
    return Status(ErrorStatus(StatusCode::kNotFound)
                  << "no model folder '" << name << "' in the repository '" << root_ << "'");
  }
  std::shared_ptr<const Model> model = LoadModelFolder(root_, name);
  std::lock_guard<std::mutex> lock(mutex_);
  models_[name] = std::move(model);
  return Status::Ok();
}

Status ModelRepository::Unload(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (models_.erase(name) == 0) {
    return Status(ErrorStatus(StatusCode::kNotFound) << "model '" << name << "' is not loaded");
  }
  return Status::Ok();
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
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace strata::server
