// ThreadTeam: a fixed number of threads that run one piece of work together in phases (the
// blind rotation of a small batch, split over the CPU backend's threads): a spinning barrier
// between phases, and an abort that releases the others when one member fails. Plain C++
// atomics: it synchronises any threads (OpenMP's, std::thread's).
#pragma once

#include <atomic>
#include <cstddef>

#include "torusgate/core/error.hpp"

namespace torusgate {

// Thrown by ThreadTeam::arrive_and_wait() in the members of a team another member aborted: the
// failing member reports the error; the others only stop.
class TeamAborted : public Error {
 public:
  TeamAborted() : Error("ThreadTeam: another member of the team failed") {}
};

class ThreadTeam {
 public:
  // InvalidArgument unless 1 <= members <= 4096.
  explicit ThreadTeam(unsigned members);
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;
  unsigned members() const { return members_; }
  // Returns once every member has arrived: what each member wrote before arriving is then
  // visible to all. Every member must call it the same number of times. Spins, then yields
  // (a phase is microseconds long). Throws TeamAborted once a member has called abort().
  void arrive_and_wait();
  // Marks the team failed: members waiting, or arriving later, throw TeamAborted. Never throws.
  void abort() noexcept { aborted_.store(true, std::memory_order_release); }
  bool aborted() const noexcept { return aborted_.load(std::memory_order_acquire); }

 private:
  unsigned members_;
  alignas(64) std::atomic<unsigned> arrived_{0};
  alignas(64) std::atomic<unsigned> generation_{0};
  std::atomic<bool> aborted_{false};
};

// One member's share of a team's work; a lone thread is member 0 of 1 with no team.
struct TeamPart {
  ThreadTeam* team = nullptr;
  unsigned member = 0;
  unsigned members = 1;

  // Work unit u (numbered the same way by every member) is this member's.
  bool mine(std::size_t unit) const { return unit % members == member; }
  // [begin, end) of this member's share of `count` items, cut at multiples of `granule`.
  std::size_t begin(std::size_t count, std::size_t granule = 1) const {
    return count / granule * member / members * granule;
  }
  std::size_t end(std::size_t count, std::size_t granule = 1) const {
    return member + 1 == members ? count : count / granule * (member + 1) / members * granule;
  }
  void sync() const {
    if (team != nullptr) team->arrive_and_wait();
  }
};

// Runs f() as a member of `team` (nullptr: alone). An exception other than TeamAborted aborts
// the team before it propagates, so the other members stop instead of waiting for this one.
template <class F>
void run_as_member(ThreadTeam* team, F&& f) {
  try {
    f();
  } catch (const TeamAborted&) {
    throw;
  } catch (...) {
    if (team != nullptr) team->abort();
    throw;
  }
}

// The part of member `member` of `team` (nullptr: a lone thread, member 0); InvalidArgument
// unless member < the team's members, naming `fn`.
TeamPart team_part(ThreadTeam* team, unsigned member, const char* fn);

}  // namespace torusgate
