// Running the torusgate CLI in-process in tests (run_cli): the exit code and both outputs of
// a run, and the checks every CLI test makes (success; one error line with an exit code).
#pragma once

#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"

namespace torusgate::test {

struct Run {
  int code = -1;
  std::string out, err;
};

inline Run run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Run r;
  r.code = cli::run_cli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline std::string describe(const std::vector<std::string>& args, const Run& r) {
  std::string line = "torusgate";
  for (const std::string& a : args) line += " " + a;
  return line + "\n-> exit " + std::to_string(r.code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// Runs and requires success.
inline Run ok(const std::vector<std::string>& args) {
  const Run r = run(args);
  INFO(describe(args, r));
  REQUIRE(r.code == cli::exit_success);
  return r;
}

// Runs and requires exit code `code` and one error line on stderr that contains `fragment`.
inline void fails(int code, const std::vector<std::string>& args, const std::string& fragment) {
  const Run r = run(args);
  INFO(describe(args, r));
  CHECK(r.code == code);
  CHECK_THAT(r.err, Catch::Contains(fragment) && Catch::StartsWith("torusgate"));
  CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
}

}  // namespace torusgate::test
