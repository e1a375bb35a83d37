// SystemLinker: see system_linker.h.
#include "compiler/codegen/llvm/system_linker.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <spawn.h>
#include <string>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/wait.h>

extern char** environ;

namespace strata::codegen {
namespace {

// A private directory removed (with the files we put in it) when it goes out of scope.
class TempDir {
 public:
  static StatusOr<TempDir> Create() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/strata-codegen-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return Status(ErrorStatus() << "cannot create a temporary directory " << pattern << ": " << std::strerror(errno));
    }
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), files_(std::move(other.files_)) {
    other.path_.clear();
  }
  ~TempDir() {
    if (path_.empty()) return;
    for (const std::string& file : files_) unlink(file.c_str());
    rmdir(path_.c_str());
  }
  // The path of `name` inside the directory; removed with it.
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::vector<std::string> files_;
};

Status WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Status(ErrorStatus() << "cannot write " << path);
  return Status::Ok();
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct RunResult {
  int spawn_error = 0;  // errno of posix_spawnp, 0 if the program ran
  int exit_code = -1;   // meaningful when spawn_error == 0
  std::string output;   // stdout and stderr
};

RunResult Run(const std::vector<std::string>& command, const std::string& log_path) {
  RunResult result;
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  result.spawn_error = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (result.spawn_error != 0) return result;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      result.spawn_error = errno;
      return result;
    }
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  std::vector<uint8_t> output = ReadFile(log_path);
  result.output.assign(output.begin(), output.end());
  return result;
}

std::string Join(const std::vector<std::string>& command) {
  std::string text;
  for (const std::string& arg : command) text += (text.empty() ? "" : " ") + arg;
  return text;
}

bool DriverOverridden() {
  const char* driver = std::getenv("STRATA_LINKER");
  return driver != nullptr && *driver != '\0';
}

std::string Driver() { return DriverOverridden() ? std::getenv("STRATA_LINKER") : "cc"; }

}  // namespace

bool LinkerFindsLibrary(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, bool> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(name);
  if (it != known.end()) return it->second;
  bool found = false;
  if (StatusOr<TempDir> dir = TempDir::Create(); dir.ok()) {
    // Prints the full path when the library is on the search path, else just the name.
    std::string file = "lib" + name + ".so";
    RunResult run = Run({Driver(), "-print-file-name=" + file}, dir->File("query.log"));
    found = run.spawn_error == 0 && run.exit_code == 0 && run.output.find('/') != std::string::npos;
  }
  known.emplace(name, found);
  return found;
}

StatusOr<std::vector<uint8_t>> LinkSharedObject(const std::vector<std::vector<uint8_t>>& objects,
                                                const std::vector<std::string>& libraries) {
  STRATA_ASSIGN_OR_RETURN(TempDir dir, TempDir::Create());
  const std::string library_path = dir.File("kernels.so");
  const std::string log_path = dir.File("link.log");
  std::vector<std::string> object_paths;
  for (size_t i = 0; i < objects.size(); ++i) {
    object_paths.push_back(dir.File("kernels" + std::to_string(i) + ".o"));
    STRATA_RETURN_IF_ERROR(WriteFile(object_paths.back(), objects[i]));
  }

  // -z defs: every symbol the kernels use must come from libm or libc, so a
  // module that would fail to load fails here, with the linker's message.
  std::vector<std::string> with_driver = {Driver(), "-shared", "-nostartfiles", "-Wl,-z,defs", "-o", library_path};
  std::vector<std::string> with_ld = {"ld", "-shared", "-z", "defs", "-o", library_path};
  with_driver.insert(with_driver.end(), object_paths.begin(), object_paths.end());
  with_ld.insert(with_ld.end(), object_paths.begin(), object_paths.end());
  for (const std::string& library : libraries) {
    with_driver.push_back("-l" + library);
    with_ld.push_back("-l" + library);
  }
  with_driver.push_back("-lm");
  with_ld.insert(with_ld.end(), {"-lm", "-lc"});
  std::vector<std::vector<std::string>> attempts = {with_driver};
  if (!DriverOverridden()) attempts.push_back(with_ld);

  std::string tried;
  for (const auto& command : attempts) {
    RunResult run = Run(command, log_path);
    if (run.spawn_error == ENOENT) {
      tried += (tried.empty() ? "" : ", ") + std::string("'") + command[0] + "'";
      continue;
    }
    if (run.spawn_error != 0) {
      return Status(ErrorStatus() << "cannot run the linker `" << Join(command)
                                  << "`: " << std::strerror(run.spawn_error));
    }
    if (run.exit_code != 0) {
      return Status(ErrorStatus() << "linking the kernel shared object failed: `" << Join(command)
                                  << "` exited with status " << run.exit_code << (run.output.empty() ? "" : ":\n")
                                  << run.output);
    }
    std::vector<uint8_t> library = ReadFile(library_path);
    if (library.empty()) return Status(ErrorStatus() << "the linker `" << Join(command) << "` produced no output");
    return library;
  }
  return Status(ErrorStatus() << "no system linker found (tried " << tried
                              << "); install a C toolchain or set STRATA_LINKER to a cc-compatible driver");
}

StatusOr<std::vector<uint8_t>> CompileCSharedObject(const std::string& source,
                                                    const std::vector<std::string>& include_dirs,
                                                    const std::vector<std::string>& link_inputs) {
  STRATA_ASSIGN_OR_RETURN(TempDir dir, TempDir::Create());
  const std::string source_path = dir.File("generated.c");
  const std::string library_path = dir.File("generated.so");
  const std::string log_path = dir.File("compile.log");
  STRATA_RETURN_IF_ERROR(
      WriteFile(source_path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(source.data()), source.size())));
  std::vector<std::string> command = {Driver(),        "-O2",         "-fPIC", "-shared",
                                      "-nostartfiles", "-Wl,-z,defs", "-o",    library_path};
  for (const std::string& dir_path : include_dirs) command.push_back("-I" + dir_path);
  command.push_back(source_path);
  for (const std::string& input : link_inputs) command.push_back(input);
  command.push_back("-lm");
  RunResult run = Run(command, log_path);
  if (run.spawn_error != 0) {
    return Status(ErrorStatus() << "cannot run the C compiler `" << Join(command)
                                << "`: " << std::strerror(run.spawn_error)
                                << " (install a C toolchain or set STRATA_LINKER to a cc-compatible driver)");
  }
  if (run.exit_code != 0) {
    const char* keep = std::getenv("STRATA_KEEP_GENERATED_SOURCE");
    std::string kept;
    if (keep != nullptr && *keep != '\0') {
      kept = std::string(keep) + "/generated.c";
      std::ofstream(kept, std::ios::binary) << source;
    }
    return Status(ErrorStatus() << "compiling generated C code failed: `" << Join(command) << "` exited with status "
                                << run.exit_code << (kept.empty() ? "" : " (source kept in " + kept + ")")
                                << (run.output.empty() ? "" : ":\n") << run.output);
  }
  std::vector<uint8_t> library = ReadFile(library_path);
  if (library.empty()) return Status(ErrorStatus() << "the C compiler `" << Join(command) << "` produced no output");
  return library;
}

}  // namespace strata::codegen
