// The readers of the kernel's text about this machine that need no backend: /proc/cpuinfo,
// the "KEY value" lines of /proc/meminfo, /proc/self/status and memory.stat, and the control
// groups' memory limits. app_support.hpp includes this header; the fuzz harnesses
// (fuzz/host_text.cpp, fuzz/host_cgroup.cpp) link host_support.cpp without the backends.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace torusgate::apps {

// The CPU part of machine_description's line, from the text of /proc/cpuinfo (its first
// processor): the model name, then in parentheses what of family, model, generation and
// vectors it states.
std::string cpu_identity(const std::string& cpuinfo);

// The value of the first line "KEY value" of `text` (/proc/meminfo, /proc/self/status,
// memory.stat), `key` with its colon or space ("MemAvailable:", "inactive_file "): a count in
// [0, 2^64) as the kernel writes it (decimal digits, a unit after a blank), or -1 where no
// line has the key or its value is no such count (a sign, a fraction, junk, 2^64 or more).
double keyed_value(std::string_view text, std::string_view key);
// The same of the file at `path`; -1 where it cannot be read.
double keyed_file_value(const std::filesystem::path& path, std::string_view key);

// What the memory limits of a process's control group and of the groups above it leave, as
// available_memory_bytes reads them from `proc_cgroup` (/proc/self/cgroup) and the cgroup
// mount `mount` (/sys/fs/cgroup: v2 where it holds cgroup.controllers, else v1 under
// memory/, the memory controller's line of proc_cgroup naming the group even where it shares
// a hierarchy with other controllers): the least, over the groups with a limit below 2^62, of
// the limit less the group's use, its inactive file cache (at most that use) counted as free
// (the kernel reclaims it first), at least 1 byte; -1 where none has one. A removed v2 group
// (its path ends in " (deleted)") counts the groups left above it.
double cgroup_free_bytes(const std::filesystem::path& proc_cgroup,
                         const std::filesystem::path& mount);

}  // namespace torusgate::apps
