// The two kinds of failure of the torusgate CLI, and the exit codes they map to.
#pragma once

#include <stdexcept>

namespace torusgate::cli {

// Exit codes of `torusgate` (documented in docs/cli.md).
inline constexpr int exit_success = 0;
// A file, the data in it, or the system: a missing, unreadable, corrupted or foreign file, a
// file of the wrong kind, inputs whose parameter sets, types or shapes do not match, an
// output that exists (without --force), a failed write.
inline constexpr int exit_failure = 1;
// The command line: an unknown command or option, a missing or malformed option value, an
// unknown operation or parameter set, a value on the command line that does not fit.
inline constexpr int exit_usage = 2;

// Something wrong with the command line (exit_usage).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure the user can act on that is not about the command line (exit_failure).
class CommandError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace torusgate::cli
