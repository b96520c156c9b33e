// The host-memory checks of the programs (apps/app_support.hpp): the control groups' limits
// read from a made-up cgroup hierarchy (v2 and v1, a limit on a parent group, "max", a group
// folder the namespace hides, a removed group), and the address-space limit (ulimit -v) on
// this process; parameters_named and printable, for the messages.
#include <catch2/catch.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "app_support.hpp"
#include "printable.hpp"
#include "test_support.hpp"

using namespace torusgate;
namespace fs = std::filesystem;

namespace {

// Writes `text` to `path`, making its folders.
void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

constexpr double mib = 1024.0 * 1024.0;

// Whether cgroup_free_bytes gives `expected` bytes.
bool cgroup_free_bytes_is(const fs::path& self, const fs::path& mount, double expected) {
  const double got = apps::cgroup_free_bytes(self, mount);
  INFO("cgroup_free_bytes: " << got << ", expected " << expected);
  return got == expected;
}

}  // namespace

TEST_CASE("cgroup_free_bytes takes the least a group or a group above it leaves", "[apps]") {
  const fs::path root = fs::temp_directory_path() / ("tg_cgroup_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path self = root / "self_cgroup", mount = root / "sys";

  SECTION("v2: the parent's limit binds, the group's own is max") {
    write(self, "0::/job/task\n");
    write(mount / "cgroup.controllers", "memory\n");
    write(mount / "job/memory.max", std::to_string(1000 * std::uint64_t{1} << 20) + "\n");
    write(mount / "job/memory.current", std::to_string(700 * std::uint64_t{1} << 20) + "\n");
    write(mount / "job/memory.stat", "anon 1\ninactive_file " +
                                         std::to_string(100 * std::uint64_t{1} << 20) + "\n");
    write(mount / "job/task/memory.max", "max\n");
    write(mount / "job/task/memory.current", "4096\n");
    CHECK(cgroup_free_bytes_is(self, mount, 400 * mib));
    // A tighter own limit wins.
    write(mount / "job/task/memory.max", std::to_string(300 * std::uint64_t{1} << 20) + "\n");
    write(mount / "job/task/memory.current", std::to_string(200 * std::uint64_t{1} << 20));
    CHECK(cgroup_free_bytes_is(self, mount, 100 * mib));
    // Used beyond the limit: 1 byte, not a negative amount.
    write(mount / "job/task/memory.current", std::to_string(400 * std::uint64_t{1} << 20));
    CHECK(apps::cgroup_free_bytes(self, mount) == 1);
  }
  SECTION("v2: no limit anywhere") {
    write(self, "0::/a\n");
    write(mount / "cgroup.controllers", "memory\n");
    write(mount / "a/memory.max", "max\n");
    write(mount / "a/memory.current", "123\n");
    CHECK(apps::cgroup_free_bytes(self, mount) == -1);
  }
  SECTION("v2: the group's folder hidden by the namespace: the mount's root is the group") {
    write(self, "0::/../outside/group\n");
    write(mount / "cgroup.controllers", "memory\n");
    write(mount / "memory.max", std::to_string(512 * std::uint64_t{1} << 20) + "\n");
    write(mount / "memory.current", std::to_string(12 * std::uint64_t{1} << 20) + "\n");
    CHECK(cgroup_free_bytes_is(self, mount, 500 * mib));
  }
  SECTION("v1: the memory controller's hierarchy; 2^63 less a page is no limit") {
    write(self, "9:cpu:/\n4:memory:/slurm/job_7/step_0\n0::/\n");
    const fs::path memory = mount / "memory";
    write(memory / "memory.limit_in_bytes", "9223372036854771712\n");
    write(memory / "memory.usage_in_bytes", "1\n");
    write(memory / "slurm/job_7/memory.limit_in_bytes",
          std::to_string(2048 * std::uint64_t{1} << 20) + "\n");
    write(memory / "slurm/job_7/memory.usage_in_bytes",
          std::to_string(1024 * std::uint64_t{1} << 20) + "\n");
    write(memory / "slurm/job_7/memory.stat",
          "total_inactive_file " + std::to_string(24 * std::uint64_t{1} << 20) + "\n");
    write(memory / "slurm/job_7/step_0/memory.limit_in_bytes", "9223372036854771712\n");
    write(memory / "slurm/job_7/step_0/memory.usage_in_bytes", "1\n");
    CHECK(cgroup_free_bytes_is(self, mount, 1048 * mib));
    write(memory / "slurm/job_7/memory.limit_in_bytes", "9223372036854771712\n");
    CHECK(apps::cgroup_free_bytes(self, mount) == -1);
  }
  SECTION("nothing to read: no limit") {
    CHECK(apps::cgroup_free_bytes(root / "none", root / "none") == -1);
  }
  // Found by fuzz/host_cgroup (fuzz/regressions/host_cgroup/cache_beyond_use): an inactive
  // file cache larger than the group's use left more than the limit (2^62 and beyond).
  SECTION("v1: a cache figure beyond the group's use frees at most the use") {
    write(self, ":memory:slurm/job_7\n");
    const fs::path memory = mount / "memory";
    write(memory / "slurm/job_7/memory.limit_in_bytes", "4\n");
    write(memory / "slurm/job_7/memory.usage_in_bytes", "0\n");
    write(memory / "slurm/job_7/memory.stat", "total_inactive_file 5621772036854771712\n");
    CHECK(apps::cgroup_free_bytes(self, mount) == 4);
    write(memory / "slurm/job_7/memory.usage_in_bytes", "3\n");
    write(memory / "slurm/job_7/memory.stat", "total_inactive_file 1000\n");
    CHECK(apps::cgroup_free_bytes(self, mount) == 4);
  }
  SECTION("v1: the memory controller sharing a hierarchy with another") {
    write(self, "5:cpuset,memory:/docker/abc\n1:name=systemd:/docker/abc\n");
    const fs::path memory = mount / "memory";
    write(memory / "memory.limit_in_bytes", "9223372036854771712\n");
    write(memory / "memory.usage_in_bytes", "1\n");
    write(memory / "docker/abc/memory.limit_in_bytes",
          std::to_string(256 * std::uint64_t{1} << 20) + "\n");
    write(memory / "docker/abc/memory.usage_in_bytes",
          std::to_string(6 * std::uint64_t{1} << 20) + "\n");
    CHECK(cgroup_free_bytes_is(self, mount, 250 * mib));
  }
  // The kernel adds " (deleted)" to a v2 group that was removed; the reader took it for part
  // of the folder's name, found none and read the mount's root: the parents' limits missed.
  SECTION("v2: a removed group, \" (deleted)\": its parents' limits still bind") {
    write(self, "0::/job/gone (deleted)\n");
    write(mount / "cgroup.controllers", "memory\n");
    write(mount / "job/memory.max", "1000\n");
    write(mount / "job/memory.current", "10\n");
    CHECK(apps::cgroup_free_bytes(self, mount) == 990);
    // A group of that name made again: its own limit counts too.
    write(mount / "job/gone/memory.max", "100\n");
    write(mount / "job/gone/memory.current", "60\n");
    CHECK(apps::cgroup_free_bytes(self, mount) == 40);
    // A live group whose name ends so is read as it is named.
    write(mount / "job/gone (deleted)/memory.max", "50\n");
    write(mount / "job/gone (deleted)/memory.current", "45\n");
    CHECK(apps::cgroup_free_bytes(self, mount) == 5);
  }
  SECTION("limits and uses that are no count the kernel writes: no limit") {
    write(self, "0::/a\n");
    write(mount / "cgroup.controllers", "memory\n");
    write(mount / "a/memory.current", "1\n");
    for (const char* max : {"-5\n", "1e3\n", "12abc\n", "18446744073709551616\n", ""}) {
      write(mount / "a/memory.max", max);
      CHECK(apps::cgroup_free_bytes(self, mount) == -1);
    }
  }
  fs::remove_all(root);
}

// Found by fuzz/host_text (fuzz/regressions/host_text/value_beyond_2_64): a value beyond
// 2^64 was read as it stood (available_memory_bytes made MemAvailable: 1e999 infinite bytes),
// and a sign or junk as a number ("-5": negative; "12abc": 12; "junk": 0).
TEST_CASE("keyed_value reads the kernel's counters and nothing else", "[apps]") {
  const std::string meminfo = "MemTotal:       24683772 kB\nMemAvailable:   23949052 kB\n";
  CHECK(apps::keyed_value(meminfo, "MemTotal:") == 24683772);
  CHECK(apps::keyed_value(meminfo, "MemAvailable:") == 23949052);
  CHECK(apps::keyed_value(meminfo, "MemFree:") == -1);
  CHECK(apps::keyed_value("Name:\tx\nVmSize:\t    3908 kB\n", "VmSize:") == 3908);
  CHECK(apps::keyed_value("anon 1\ninactive_file 0\n", "inactive_file ") == 0);
  CHECK(apps::keyed_value("x 18446744073709551615\n", "x ") == 0x1p64);
  for (const char* value : {"2e28", "1e999", "-5", "12abc", "junk", "nan", "1.5",
                            "18446744073709551616", "+1", ""}) {
    INFO("value: '" << value << "'");
    CHECK(apps::keyed_value(std::string("VmSize:") + value + " kB\n", "VmSize:") == -1);
  }
  // The first line with the key decides.
  CHECK(apps::keyed_value("k 1x\nk 2\n", "k ") == -1);
}

TEST_CASE("available_memory_bytes heeds the address-space limit (ulimit -v)", "[apps]") {
  const double unlimited = apps::available_memory_bytes();
  REQUIRE(unlimited > 0);  // Linux: MemAvailable
  rlimit saved{};
  REQUIRE(getrlimit(RLIMIT_AS, &saved) == 0);
  // 256 MiB beyond what the process has mapped now.
  std::ifstream status("/proc/self/status");
  double mapped_kib = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) mapped_kib = std::stod(line.substr(7));
  }
  REQUIRE(mapped_kib > 0);
  const double room = 256.0 * 1024 * 1024;
  rlimit lowered = saved;
  lowered.rlim_cur = static_cast<rlim_t>(mapped_kib * 1024 + room);
  // Where other limits are near the test's, it could not tell them apart.
  if (unlimited < 4 * room ||
      (saved.rlim_cur != RLIM_INFINITY && saved.rlim_cur < lowered.rlim_cur + room)) {
    WARN("not run: less than 1 GiB free, or the address space already limited near 256 MiB");
    return;
  }
  REQUIRE(setrlimit(RLIMIT_AS, &lowered) == 0);
  const double limited = apps::available_memory_bytes();
  bool refused = false;
  try {
    apps::check_host_memory("a run", 1e9, "run less");
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    refused =
        what.starts_with("a run would hold about 954 MiB in memory, more than 90% of the ") &&
        what.ends_with(" MiB this program may take now; run less");
  }
  REQUIRE(setrlimit(RLIMIT_AS, &saved) == 0);
  CHECK(limited <= room);
  CHECK(limited > room / 2);  // nothing mapped in between but the test's own strings
  CHECK(refused);
  CHECK(apps::available_memory_bytes() > room);
}

TEST_CASE("parameters_named names the option, not the library function", "[apps]") {
  CHECK(apps::parameters_named("--params", "toy_INSECURE").name == "toy_INSECURE");
  REQUIRE_INVALID_ARGUMENT(apps::parameters_named("--params", "bogus"),
                           "--params: unknown parameter set 'bogus'; known sets: tfhe_lib_128");
  try {
    apps::parameters_named("--params", "bogus");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("parameters_by_name") == std::string::npos);
  }
}

namespace {

// The (option, value) pairs CommandLine gives for `args`, every argument an option with a value.
std::vector<std::pair<std::string, std::string>> walk(std::vector<std::string> args,
                                                      std::vector<std::string> repeatable = {}) {
  args.insert(args.begin(), "program");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<std::pair<std::string, std::string>> got;
  for (apps::CommandLine cl(static_cast<int>(argv.size()), argv.data(), std::move(repeatable));
       cl.next();) {
    const std::string option = cl.arg();
    got.emplace_back(option, cl.value());
  }
  return got;
}

}  // namespace

TEST_CASE("CommandLine: a value is never the next option, and an option is given once",
          "[apps]") {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(walk({"--out", "dir", "--reps", "3"}) == Pairs{{"--out", "dir"}, {"--reps", "3"}});
  // Values that only look like options: a negative number, a lone dash, a path.
  CHECK(walk({"--x", "-1", "--y", "-", "--z", "./--name", "--w", "--"}) ==
        Pairs{{"--x", "-1"}, {"--y", "-"}, {"--z", "./--name"}, {"--w", "--"}});
  REQUIRE_INVALID_ARGUMENT(walk({"--out", "--quick"}),
                           "--out needs a value but the next argument is the option '--quick' "
                           "(see --help)");
  REQUIRE_INVALID_ARGUMENT(walk({"--out"}), "--out needs a value (see --help)");
  REQUIRE_INVALID_ARGUMENT(walk({"--reps", "1", "--out", "d", "--reps", "2"}),
                           "--reps is given twice ('1', then '2'); give it once");
  // Repeatable options add up.
  CHECK(walk({"--batch", "1", "--reps", "2", "--batch", "16,64"}, {"--batch"}) ==
        Pairs{{"--batch", "1"}, {"--reps", "2"}, {"--batch", "16,64"}});
  REQUIRE_INVALID_ARGUMENT(walk({"--batch", "1", "--reps", "2", "--reps", "2"}, {"--batch"}),
                           "--reps is given twice");
}

TEST_CASE("printable escapes control bytes and bytes that are not UTF-8, and cuts long text",
          "[apps]") {
  CHECK(apps::printable("plain text") == "plain text");
  CHECK(apps::printable("a\tb\x1b[0m") == "a\\x09b\\x1B[0m");
  CHECK(apps::printable("caf\xC3\xA9 \xE2\x82\xAC") == "caf\xC3\xA9 \xE2\x82\xAC");  // é €
  CHECK(apps::printable("\xFF\xFE\x80") == "\\xFF\\xFE\\x80");
  CHECK(apps::printable("\xE2\x82") == "\\xE2\\x82");  // a sequence cut short
  CHECK(apps::printable("\xEF\xBB\xBFx") == "\\xEF\\xBB\\xBFx");
  CHECK(apps::printable(std::string(49, 'a')) == std::string(48, 'a') + "... (49 bytes)");
  CHECK(apps::printable(std::string(48, 'a')) == std::string(48, 'a'));
  // Not well formed (RFC 3629): overlong, a surrogate, above U+10FFFF; C1 controls.
  CHECK(apps::printable("\xE0\x80\xAF") == "\\xE0\\x80\\xAF");
  CHECK(apps::printable("\xED\xA0\x80") == "\\xED\\xA0\\x80");
  CHECK(apps::printable("\xF4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80");
  CHECK(apps::printable("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");  // U+1F600
  CHECK(apps::printable("\xC2\x9B" "31m") == "\\xC2\\x9B31m");           // U+009B, CSI
  CHECK(apps::printable("\xC2\xA0") == "\xC2\xA0");                    // U+00A0
  // A long text is cut before a character it would split.
  CHECK(apps::printable(std::string(47, 'a') + "\xE2\x82\xAC" + "b") ==
        std::string(47, 'a') + "... (51 bytes)");
}

TEST_CASE("terminal_text escapes a whole message as printable does, keeping lines and tabs",
          "[apps]") {
  CHECK(apps::terminal_text("--x: 'a\x1b[2Jb' is not a number") ==
        "--x: 'a\\x1B[2Jb' is not a number");
  CHECK(apps::terminal_text("two\nlines\tand a tab\r") == "two\nlines\tand a tab\\x0D");
  CHECK(apps::terminal_text("caf\xC3\xA9 \xC2\x9B \xFF") == "caf\xC3\xA9 \\xC2\\x9B \\xFF");
  // Never cut; text printable already escaped stays as it is.
  CHECK(apps::terminal_text(std::string(1000, 'z')) == std::string(1000, 'z'));
  CHECK(apps::terminal_text(apps::printable("a\x1b")) == "a\\x1B");
}

TEST_CASE("cpu_identity names the family, model, generation and widest vectors", "[apps]") {
  const std::string zen5 =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
      "model name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2 fma avx512f avx512dq\n\n"
      "processor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
      "model name\t: another\n\n";
  CHECK(apps::cpu_identity(zen5) == "AMD EPYC (family 26, model 2: Zen 5; AVX-512)");
  const std::string zen3 =
      "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
      "flags\t\t: sse2 avx avx2 fma\n";
  CHECK(apps::cpu_identity(zen3) == "AMD EPYC (family 25, model 1: Zen 3; AVX2)");
  const std::string zen4 =
      "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9654\n"
      "flags\t\t: sse2 avx2 avx512f\n";
  CHECK(apps::cpu_identity(zen4) == "AMD EPYC 9654 (family 25, model 17: Zen 4; AVX-512)");
  // Intel: the numbers, no generation name.
  const std::string intel =
      "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
      "model name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: sse2 avx2 avx512f\n";
  CHECK(apps::cpu_identity(intel) ==
        "Intel(R) Xeon(R) Platinum 8480+ (family 6, model 143; AVX-512)");
  // Not x86 (no family, no x86 flags), an unreadable number, nothing at all.
  CHECK(apps::cpu_identity("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n") ==
        "unknown CPU");
  CHECK(apps::cpu_identity("model name\t: X\ncpu family\t: 2x\nmodel\t\t: 1\nflags\t: sse2\n") ==
        "X (SSE2)");
  CHECK(apps::cpu_identity("") == "unknown CPU");
}
