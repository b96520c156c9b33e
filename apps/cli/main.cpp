// torusgate: the command-line program (cli.hpp); see docs/cli.md or `torusgate --help`.
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return torusgate::cli::run_cli(args, std::cout, std::cerr);
}
