// A program that uses the consumer's shared library (plugin.hpp); exit 0 when it is right.
#include <cstdio>

#include "plugin.hpp"

int main() {
  const int wrong = plugin_wrong_results();
  std::printf("consumer_plugin (a shared library linking torusgate): %d wrong\n", wrong);
  std::printf("%s\n", wrong == 0 ? "plugin correct" : "plugin WRONG");
  return wrong == 0 ? 0 : 1;
}
