// The stderr progress bar of the long-running programs.
#include "progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <utility>

namespace torusgate::apps {

ProgressBar::ProgressBar(std::string label, std::string unit, bool enabled)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      enabled_(enabled),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

std::string ProgressBar::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%lld s", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

std::string ProgressBar::render(const std::string& label, const std::string& unit,
                                std::uint64_t done, std::uint64_t total, double elapsed) {
  const double fraction = total == 0 ? 0.0 : static_cast<double>(done) / static_cast<double>(total);
  constexpr int width = 24;
  const int filled = static_cast<int>(fraction * width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(width, '.');
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  const double left = rate > 0 ? static_cast<double>(total - done) / rate : NAN;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s [%s] %3d%% %llu/%llu %s, %.0f/s, %s %s", label.c_str(),
                bar.c_str(), static_cast<int>(fraction * 100), static_cast<unsigned long long>(done),
                static_cast<unsigned long long>(total), unit.c_str(), rate,
                done == total ? "took" : "ETA",
                format_duration(done == total ? elapsed : left).c_str());
  return buf;
}

void ProgressBar::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_ || total == 0) return;
  if (done > total) done = total;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (tty_) {
    if (done != total && open_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
    last_draw_ = now;
    std::fprintf(stderr, "\r%s\033[K", render(label_, unit_, done, total, elapsed).c_str());
    open_ = true;
  } else {
    const int tenth = static_cast<int>(10 * done / total);
    if (tenth == last_tenth_) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "%s\n", render(label_, unit_, done, total, elapsed).c_str());
  }
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

}  // namespace torusgate::apps
