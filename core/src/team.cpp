// ThreadTeam: a sense-counting spin barrier (generation number) with an abort flag.
#include "torusgate/core/team.hpp"

#include <string>
#include <thread>

namespace torusgate {

ThreadTeam::ThreadTeam(unsigned members) : members_(members) {
  EXPECTS(members >= 1 && members <= 4096,
          "ThreadTeam: members=" + std::to_string(members) + " but expected 1..4096");
}

void ThreadTeam::arrive_and_wait() {
  if (aborted()) throw TeamAborted();
  const unsigned generation = generation_.load(std::memory_order_acquire);
  // acq_rel: the last member to arrive sees every member's writes, and publishes them all
  // with the release of the new generation.
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == members_) {
    arrived_.store(0, std::memory_order_relaxed);
    generation_.store(generation + 1, std::memory_order_release);
    return;
  }
  for (unsigned spins = 0; generation_.load(std::memory_order_acquire) == generation; ++spins) {
    if (aborted()) throw TeamAborted();
    if (spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();  // more threads than cores, or a slow member
    }
  }
}

TeamPart team_part(ThreadTeam* team, unsigned member, const char* fn) {
  if (team == nullptr) {
    EXPECTS(member == 0, std::string(fn) + ": member=" + std::to_string(member) +
                             " but without a team the only member is 0");
    return {};
  }
  EXPECTS(member < team->members(), std::string(fn) + ": member=" + std::to_string(member) +
                                        " but the team has " +
                                        std::to_string(team->members()) + " members");
  return {team, member, team->members()};
}

}  // namespace torusgate
