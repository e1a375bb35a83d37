// The subcommands of the strata tool. Each takes the arguments after its name
// and returns the process exit code (apps/option_parsing.h's ExitCode).
#pragma once

#include <string>
#include <vector>

namespace strata::apps {

int RunCompileCommand(const std::vector<std::string>& args);
int RunRunCommand(const std::vector<std::string>& args);
int RunInspectCommand(const std::vector<std::string>& args);

}  // namespace strata::apps
