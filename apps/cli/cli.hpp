// The torusgate command-line program for the client/server split: keygen, encrypt, eval,
// decrypt and info, and import/export of the TFHE library v1.1 formats (docs/cli.md). The
// program is one function, so tests run it in-process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "errors.hpp"

namespace torusgate::cli {

// Runs `torusgate args...` (`args`: the arguments after the program name). Results and help
// go to `out`; errors and warnings to `err`, one line each, starting "torusgate COMMAND: ".
// Returns the exit code: exit_success (0), exit_failure (1: a file, data or system problem)
// or exit_usage (2: a command-line error). Never throws.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace torusgate::cli
