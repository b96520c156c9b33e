// The cycle-level streaming model: the unit chain (stride permutations and arithmetic
// stages), its latency and resources, and the cycle-by-cycle simulation.
#include "torusgate/fpga_fft/streaming.hpp"

#include <algorithm>
#include <bit>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "torusgate/core/error.hpp"

namespace torusgate::fpga_fft {
namespace {

unsigned log2u(std::size_t v) { return static_cast<unsigned>(std::countr_zero(v)); }

// Nontrivial twiddle multiplications inside one radix-r butterfly built from radix-2
// layers (decimation in frequency): sum over L = r, r/2, ..., 8 of (r/L)(L/2 - 2).
std::uint64_t internal_multipliers(std::size_t r) {
  std::uint64_t count = 0;
  for (std::size_t L = r; L >= 8; L /= 2) count += (r / L) * (L / 2 - 2);
  return count;
}

}  // namespace

void StreamingConfig::validate(const FixedFftConfig& fft) const {
  const std::uint32_t low = std::max<std::uint32_t>(2, fft.radix);
  const std::uint32_t high = std::min<std::uint32_t>(256, fft.size);
  EXPECTS(std::has_single_bit(width) && width >= low && width <= high,
          "StreamingConfig: width=" + std::to_string(width) +
              " but expected a power of two in [max(2, radix)=" + std::to_string(low) +
              ", min(256, size)=" + std::to_string(high) + "] (whole butterflies per cycle)");
  EXPECTS(multiplier_latency <= 64, "StreamingConfig: multiplier_latency=" +
                                        std::to_string(multiplier_latency) +
                                        " but expected 0..64 cycles");
  EXPECTS(adder_latency <= 64, "StreamingConfig: adder_latency=" + std::to_string(adder_latency) +
                                   " but expected 0..64 cycles");
}

StreamingFft::StreamingFft(const FixedFft& fft, const StreamingConfig& config, Direction direction)
    : fft_(fft), config_(config), direction_(direction) {
  config_.validate(fft_.config());
  build();
}

std::size_t StreamingFft::stage_position(std::size_t stage, std::size_t index) const {
  EXPECTS(stage < fft_.stages(), "StreamingFft::stage_position: stage=" + std::to_string(stage) +
                                     " but the transform has stages 0.." +
                                     std::to_string(fft_.stages() - 1));
  EXPECTS(index < fft_.size(), "StreamingFft::stage_position: index=" + std::to_string(index) +
                                   " but the transform has M=" + std::to_string(fft_.size()) +
                                   " points (0.." + std::to_string(fft_.size() - 1) + ")");
  return position(stage, index);
}

std::size_t StreamingFft::position(std::size_t stage, std::size_t index) const {
  const std::size_t L = fft_.size() >> (log2u(fft_.radix()) * stage), w = config_.width;
  if (L <= w) return index;
  const unsigned j = log2u(fft_.radix()), d = log2u(L) - j;
  const std::size_t mask = fft_.radix() - 1;
  const std::size_t high = (index >> d) & mask, low = index & mask;
  return (index & ~(mask << d) & ~mask) | (low << d) | high;
}

void StreamingFft::build() {
  const std::size_t M = fft_.size(), w = config_.width, r = fft_.radix(), S = fft_.stages();
  const std::uint64_t cycles = M / w;
  // The arrangement (index -> position) of the stream before the next unit.
  std::vector<std::size_t> arrangement(M);
  for (std::size_t i = 0; i < M; ++i) arrangement[i] = i;

  auto add_permutation = [&](const std::vector<std::size_t>& target, std::size_t feeds) {
    if (target == arrangement) return;
    StreamingUnit perm;
    perm.kind = StreamingUnit::Kind::Permutation;
    perm.stage = feeds;
    perm.source.resize(M);
    for (std::size_t i = 0; i < M; ++i) perm.source[target[i]] = arrangement[i];
    // Delay: 0 when every word stays in its cycle (wires), else one cycle more than the
    // largest number of cycles any word must move forward in the stream.
    bool wires = true;
    std::int64_t ahead = 0;
    for (std::size_t q = 0; q < M; ++q) {
      const auto in_cycle = static_cast<std::int64_t>(perm.source[q] / w);
      const auto out_cycle = static_cast<std::int64_t>(q / w);
      wires = wires && in_cycle == out_cycle;
      ahead = std::max(ahead, in_cycle - out_cycle);
    }
    perm.latency = wires ? 0 : static_cast<std::uint64_t>(ahead) + 1;
    // Memory: words written and not yet read at the end of a cycle, at the peak of
    // continuous streaming (two transforms overlap at most).
    std::vector<std::int64_t> change(3 * cycles + perm.latency + 2, 0);
    if (!wires) {
      for (std::uint64_t k = 0; k < 2; ++k) {
        for (std::size_t q = 0; q < M; ++q) {
          change[k * cycles + perm.source[q] / w] += 1;               // written
          change[k * cycles + q / w + perm.latency] -= 1;             // read
        }
      }
    }
    std::int64_t held = 0, peak = 0;
    for (const std::int64_t c : change) peak = std::max(peak, held += c);
    perm.memory_words = static_cast<std::uint64_t>(peak);
    perm.description = wires ? "lane wiring (no memory)"
                             : "stride permutation, delay " + std::to_string(perm.latency) +
                                   " cycles, " + std::to_string(peak) + " words";
    units_.push_back(std::move(perm));
    arrangement = target;
  };

  const unsigned j = log2u(r);
  auto add_stage = [&](std::size_t s) {
    std::vector<std::size_t> target(M);
    for (std::size_t i = 0; i < M; ++i) target[i] = position(s, i);
    add_permutation(target, s);
    StreamingUnit unit;
    unit.kind = StreamingUnit::Kind::Stage;
    unit.stage = s;
    const bool multiplies = fft_.stage_has_multiplier(s);
    unit.latency = (multiplies ? config_.multiplier_latency : 0) + j * config_.adder_latency +
                   (r >= 8 ? config_.multiplier_latency : 0);
    const std::uint64_t complex_mults =
        (multiplies ? w / r * (r - 1) : 0) + w / r * internal_multipliers(r);
    unit.multipliers = 4 * complex_mults;
    unit.adders = 2 * complex_mults + (w / r) * (r / 2) * j * 4;
    unit.description = to_string(direction_) + " stage " + std::to_string(s) + ": " +
                       std::to_string(w / r) + " radix-" + std::to_string(r) + " butterflies" +
                       (multiplies ? ", twiddle multipliers" : "") + ", latency " +
                       std::to_string(unit.latency);
    units_.push_back(unit);
  };

  if (direction_ == Direction::Forward) {
    for (std::size_t s = 0; s < S; ++s) add_stage(s);
  } else {
    for (std::size_t s = S; s-- > 0;) add_stage(s);
  }
  std::vector<std::size_t> natural(M);
  for (std::size_t i = 0; i < M; ++i) natural[i] = i;
  add_permutation(natural, S);
}

std::uint64_t StreamingFft::multipliers() const {
  std::uint64_t sum = 0;
  for (const auto& u : units_) sum += u.multipliers;
  return sum;
}

std::uint64_t StreamingFft::adders() const {
  std::uint64_t sum = 0;
  for (const auto& u : units_) sum += u.adders;
  return sum;
}

std::uint64_t StreamingFft::memory_words() const {
  std::uint64_t sum = 0;
  for (const auto& u : units_) sum += u.memory_words;
  return sum;
}

std::uint64_t StreamingFft::run_bytes(std::uint64_t transforms) const {
  const std::uint64_t M = fft_.size(), w = config_.width;
  // A std::map node of (transform, position) -> CWord with its allocator header; a register
  // slot (its vector of w words); a unit's least (a std::deque's map and first buffer); the
  // run's own (its state vectors, a cycle's temporaries of w words).
  constexpr std::uint64_t node_bytes = 96, slot_bytes = 64, unit_bytes = 768;
  std::uint64_t fixed = 2048 + 8 * w * sizeof(CWord) + units_.size() * unit_bytes;
  for (const auto& u : units_) {
    fixed += u.kind == StreamingUnit::Kind::Permutation
                 ? u.memory_words * node_bytes + (u.latency + 1) * slot_bytes
                 : (u.latency + 1) * (slot_bytes + w * sizeof(CWord));
  }
  const std::uint64_t per_transform = M * sizeof(CWord) + sizeof(std::vector<CWord>);
  const std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
  if (transforms > (most - fixed) / per_transform) return most;
  return fixed + transforms * per_transform;
}

std::uint64_t StreamingFft::latency_formula() const {
  const std::uint64_t M = fft_.size(), w = config_.width, r = fft_.radix();
  const std::uint64_t Lm = config_.multiplier_latency, La = config_.adder_latency;
  const std::uint64_t j = log2u(r);
  auto term = [&](std::uint64_t L) { return 1 + L / w - std::max<std::uint64_t>(L / (r * w), 1); };
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < fft_.stages(); ++s) {
    total += (fft_.stage_has_multiplier(s) ? Lm : 0) + j * La + (r >= 8 ? Lm : 0);
    if (fft_.block_length(s) > w) total += term(fft_.block_length(s));
  }
  if (M > w) total += term(M);
  return total;
}

std::vector<std::vector<CWord>> StreamingFft::run(std::span<const std::vector<CWord>> transforms,
                                                  StreamingReport* report) const {
  const std::size_t M = fft_.size(), w = config_.width, r = fft_.radix();
  const std::uint64_t per = M / w;
  const unsigned W = fft_.config().word_bits;
  for (std::size_t k = 0; k < transforms.size(); ++k) {
    EXPECTS(transforms[k].size() == M, "StreamingFft::run: transform " + std::to_string(k) +
                                           " has " + std::to_string(transforms[k].size()) +
                                           " words but the datapath has M=" + std::to_string(M));
    for (std::size_t i = 0; i < M; ++i) {
      EXPECTS(fits(transforms[k][i].re, W) && fits(transforms[k][i].im, W),
              "StreamingFft::run: word " + std::to_string(i) + " of transform " +
                  std::to_string(k) + " does not fit a signed " + std::to_string(W) +
                  "-bit word");
    }
  }
  using Vec = std::vector<CWord>;
  struct Slot {  // what a wire carries in one cycle
    bool valid = false;
    std::uint64_t block = 0;  // stream block: transform * (M/w) + cycle within the transform
    Vec words;
  };
  // Per-unit state.
  struct PermState {
    std::map<std::pair<std::uint64_t, std::size_t>, CWord> memory;  // (transform, position)
    std::deque<Slot> pending;  // valid flags and block numbers in flight (the delay line)
    std::uint64_t peak = 0;
  };
  struct StageState {
    std::deque<Slot> pipe;  // `latency` registers
  };
  std::vector<PermState> perms;
  std::vector<StageState> stages;
  for (const auto& u : units_) {
    if (u.kind == StreamingUnit::Kind::Stage) {
      stages.push_back({std::deque<Slot>(u.latency)});
    } else {
      perms.emplace_back();
    }
  }
  std::vector<std::uint64_t> stage_overflows(fft_.stages(), 0);

  // The arrangement entering each stage unit, to find each lane's coefficient index.
  const std::uint64_t total_blocks = transforms.size() * per;
  std::vector<Vec> outputs(transforms.size(), Vec(M));
  std::uint64_t emitted = 0, cycle = 0, first_output = 0, second_output = 0;
  const std::uint64_t limit = total_blocks + latency_formula() + 4 * per + 16;
  for (; emitted < total_blocks; ++cycle) {
    EXPECTS(cycle <= limit, "StreamingFft::run: no output after " + std::to_string(cycle) +
                                " cycles (schedule error)");
    Slot wire;
    if (cycle < total_blocks) {
      const std::uint64_t k = cycle / per, c = cycle % per;
      wire.valid = true;
      wire.block = cycle;
      wire.words.assign(transforms[k].begin() + static_cast<std::ptrdiff_t>(c * w),
                        transforms[k].begin() + static_cast<std::ptrdiff_t>((c + 1) * w));
    }
    std::size_t p = 0, st = 0;
    for (const auto& unit : units_) {
      if (unit.kind == StreamingUnit::Kind::Permutation) {
        const StreamingUnit& perm = unit;
        PermState& state = perms[p++];
        if (perm.latency == 0) {  // wires within the cycle
          if (wire.valid) {
            Vec out(w);
            const std::size_t base = (wire.block % per) * w;
            for (std::size_t l = 0; l < w; ++l) out[l] = wire.words[perm.source[base + l] - base];
            wire.words = std::move(out);
          }
          continue;
        }
        if (wire.valid) {
          const std::uint64_t k = wire.block / per, base = (wire.block % per) * w;
          for (std::size_t l = 0; l < w; ++l) state.memory[{k, base + l}] = wire.words[l];
        }
        state.pending.push_back({wire.valid, wire.block, {}});
        Slot out;
        if (state.pending.size() > perm.latency) {
          const Slot due = state.pending.front();
          state.pending.pop_front();
          if (due.valid) {
            out.valid = true;
            out.block = due.block;
            out.words.resize(w);
            const std::uint64_t k = due.block / per, base = (due.block % per) * w;
            for (std::size_t l = 0; l < w; ++l) {
              const auto it = state.memory.find({k, perm.source[base + l]});
              if (it == state.memory.end()) {
                throw Error("StreamingFft::run: permutation before stage " +
                            std::to_string(unit.stage) + " reads position " +
                            std::to_string(perm.source[base + l]) + " of transform " +
                            std::to_string(k) + " before it was written (cycle " +
                            std::to_string(cycle) + ")");
              }
              out.words[l] = it->second;
              state.memory.erase(it);
            }
          }
        }
        state.peak = std::max<std::uint64_t>(state.peak, state.memory.size());
        wire = std::move(out);
      } else {
        StageState& state = stages[st++];
        if (wire.valid) {
          // Lane l holds coefficient index i = stage_position(s, l's position); the r inputs
          // of each butterfly (same block b and offset j, digits s' = 0..r-1) share the cycle.
          const std::size_t s = unit.stage, L = fft_.block_length(s), sub = L / r;
          const std::size_t base = (wire.block % per) * w;
          std::map<std::size_t, std::vector<std::size_t>> groups;  // b*L + j -> lane of digit s'
          for (std::size_t l = 0; l < w; ++l) {
            const std::size_t i = position(s, base + l);
            auto& lanes = groups[(i / L) * L + i % sub];
            lanes.resize(r, w);
            lanes[(i / sub) % r] = l;
          }
          Vec in(r), out(r), result(w);
          for (const auto& [key, lanes] : groups) {
            for (std::size_t t = 0; t < r; ++t) {
              if (lanes[t] == w) {
                throw Error("StreamingFft::run: stage " + std::to_string(s) +
                            " lacks an input of a butterfly in cycle " + std::to_string(cycle));
              }
              in[t] = wire.words[lanes[t]];
            }
            if (direction_ == Direction::Forward) {
              fft_.forward_butterfly(s, key / L, in.data(), out.data(), stage_overflows[s]);
            } else {
              fft_.inverse_butterfly(s, key / L, in.data(), out.data(), stage_overflows[s]);
            }
            for (std::size_t t = 0; t < r; ++t) result[lanes[t]] = out[t];
          }
          wire.words = std::move(result);
        }
        if (unit.latency > 0) {
          state.pipe.push_back(std::move(wire));
          wire = std::move(state.pipe.front());
          state.pipe.pop_front();
        }
      }
    }
    if (wire.valid) {
      const std::uint64_t k = wire.block / per, c = wire.block % per;
      if (emitted == 0) first_output = cycle;
      if (emitted == per) second_output = cycle;
      EXPECTS(wire.block == emitted, "StreamingFft::run: output block " +
                                         std::to_string(wire.block) + " left out of order");
      std::copy(wire.words.begin(), wire.words.end(),
                outputs[k].begin() + static_cast<std::ptrdiff_t>(c * w));
      ++emitted;
    }
  }
  if (report != nullptr) {
    report->latency = first_output;
    report->transform_interval = transforms.size() > 1 ? second_output - first_output : 0;
    report->cycles = cycle;
    report->memory_peaks.clear();
    for (const auto& s : perms) report->memory_peaks.push_back(s.peak);
    report->overflows = stage_overflows;
  }
  return outputs;
}

}  // namespace torusgate::fpga_fft
