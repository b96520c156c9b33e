// Fuzz harness: the readers of the kernel's text about this machine (apps/host_support.hpp):
// apps::cpu_identity on /proc/cpuinfo text and apps::keyed_value on the "KEY value" lines of
// /proc/meminfo, /proc/self/status and memory.stat, for the keys the programs read. Neither
// throws. cpu_identity gives one non-empty line (machine_description's CPU part); keyed_value
// gives -1 or a count in [0, 2^64] (a 64-bit counter of the kernel, rounded to a double), so
// that the programs' kB-to-bytes products stay finite and not negative.
//
// Input: the text.
#include <cmath>
#include <string_view>

#include "fuzz_support.hpp"
#include "host_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  const std::string text = fuzz::as_string(data, size);
  fuzz::expect_only<>("host_text: cpu_identity", [&] {
    const std::string id = apps::cpu_identity(text);
    fuzz::require(!id.empty() && id.find('\n') == std::string::npos,
                  "host_text: cpu_identity gave an empty text or more than one line");
  });
  for (const std::string_view key : {"MemAvailable:", "MemTotal:", "VmSize:", "inactive_file ",
                                     "total_inactive_file "}) {
    fuzz::expect_only<>("host_text: keyed_value", [&] {
      const double v = apps::keyed_value(text, key);
      fuzz::require(v == -1 || (v >= 0 && v <= 0x1p64),
                    "host_text: keyed_value gave " + std::to_string(v) + " for '" +
                        std::string(key) + "', neither -1 nor a count in [0, 2^64]");
    });
  }
  return 0;
}
