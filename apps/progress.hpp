// A progress bar on stderr for long runs: done/total, rate and time left.
//   ProgressBar bar("X^T X", "bootstraps");
//   prog.on_progress([&](const RunProgress& p) { bar.update(p.bootstraps_done, p.bootstraps_total); });
//   ... bar.finish();
// On a terminal it redraws one line (at most 5 times a second); otherwise (a log file, CI) it
// prints a line at every tenth of the work, so logs stay short. Disabled bars print nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace torusgate::apps {

class ProgressBar {
 public:
  ProgressBar(std::string label, std::string unit, bool enabled = true);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Reports that `done` of `total` units are finished (total 0: unknown work, nothing shown).
  void update(std::uint64_t done, std::uint64_t total);
  // Ends the line (idempotent; the destructor calls it).
  void finish();

  // "1:02:03", "4:05" or "12 s" for a duration in seconds ("?" when not finite).
  static std::string format_duration(double seconds);
  // The line drawn for a state: label, bar, percent, counts, rate and ETA.
  static std::string render(const std::string& label, const std::string& unit,
                            std::uint64_t done, std::uint64_t total, double elapsed_seconds);

 private:
  std::string label_, unit_;
  bool enabled_, tty_, open_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int last_tenth_ = -1;
};

}  // namespace torusgate::apps
