// Cycle-level model of the streaming datapath that computes FixedFft: w complex words enter
// per clock cycle, back to back, one transform every M/w cycles. The pipeline is a chain of
// units: stride-permutation units (a memory that reorders the stream so that the r inputs of
// every butterfly arrive in the same cycle) and arithmetic stages (the twiddle multipliers and
// w/r radix-r butterflies of one FFT stage, with pipeline latencies). Each stage calls the same
// butterfly as the functional model, so when the routing is right the outputs are the
// functional model's bit for bit; the simulation checks every step of the schedule.
// docs/fpga_fft.md describes the architecture, the latency formula and the resource estimates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "torusgate/fpga_fft/fixed_fft.hpp"

namespace torusgate::fpga_fft {

struct StreamingConfig {
  std::uint32_t width = 8;               // w: complex words per cycle, a power of two in
                                         // [max(2, r), min(256, M)]
  std::uint32_t multiplier_latency = 3;  // pipeline registers of a complex multiplier, 0..64
  std::uint32_t adder_latency = 1;       // pipeline registers of one adder layer, 0..64
  // InvalidArgument naming the field, its value and what the datapath allows.
  void validate(const FixedFftConfig& fft) const;
};

// One unit of the pipeline, in stream order.
struct StreamingUnit {
  enum class Kind { Permutation, Stage };
  Kind kind = Kind::Stage;
  std::size_t stage = 0;          // Stage: the FFT stage; Permutation: the stage it feeds
                                  // (S: the output reorder)
  std::uint64_t latency = 0;      // cycles from a word entering to it leaving
  std::uint64_t memory_words = 0; // Permutation: complex words held across a clock edge at the
                                  // peak of continuous streaming
  std::uint64_t multipliers = 0;  // real multipliers (4 per complex multiplier)
  std::uint64_t adders = 0;       // real adders/subtractors (2 per complex multiplier, 4 per
                                  // radix-2 butterfly)
  std::vector<std::size_t> source;  // Permutation: output position q carries input position
                                    // source[q] (positions within one transform)
  std::string description;
};

struct StreamingReport {
  std::uint64_t latency = 0;             // cycles from the first input cycle to the first output
  std::uint64_t transform_interval = 0;  // cycles between the first outputs of consecutive
                                         // transforms (0 with one transform)
  std::uint64_t cycles = 0;              // cycles simulated until the last output
  std::vector<std::uint64_t> memory_peaks;  // per permutation unit, measured
  std::vector<std::uint64_t> overflows;     // per FFT stage (index = stage)
};

class StreamingFft {
 public:
  StreamingFft(const FixedFft& fft, const StreamingConfig& config, Direction direction);

  const FixedFft& transform() const { return fft_; }
  const StreamingConfig& config() const { return config_; }
  Direction direction() const { return direction_; }

  // The pipeline with the latency of every unit and the resource estimates (memory words from
  // the schedule's occupancy, which the simulation measures too).
  const std::vector<StreamingUnit>& units() const { return units_; }
  std::uint64_t multipliers() const;
  std::uint64_t adders() const;
  std::uint64_t memory_words() const;

  // The closed-form latency of docs/fpga_fft.md (computed without the unit list):
  //   sum over stages of A_s + [M > w] * (term(M) + sum over stages with L_s > w of term(L_s)),
  //   term(L) = 1 + L/w - max(L/(r w), 1),
  //   A_s = [stage s multiplies] Lm + log2(r) La + [r >= 8] Lm.
  std::uint64_t latency_formula() const;
  std::uint64_t transform_interval() const { return fft_.size() / config_.width; }

  // Position in the stream entering stage s of the coefficient index i (a bit permutation, its
  // own inverse): i itself when the block length L_s <= w, else i with its stage digit (bits
  // [log2(L_s/r), log2 L_s)) swapped with its lowest digit (bits [0, log2 r)). InvalidArgument
  // unless stage < S and index < M.
  std::size_t stage_position(std::size_t stage, std::size_t index) const;

  // Simulates the pipeline cycle by cycle on `transforms` (each M words), streamed back to
  // back from cycle 0, and returns each transform's M outputs in the order they leave (natural
  // order: output t holds what FixedFft would). Fills *report when given. Throws
  // InvalidArgument for bad inputs and Error if the schedule is ever violated.
  std::vector<std::vector<CWord>> run(std::span<const std::vector<CWord>> transforms,
                                      StreamingReport* report = nullptr) const;
  // An estimate of the heap run() takes beyond its inputs for `transforms` transforms: the
  // outputs and, at their peak, the permutation memories (a map node per word held), the
  // pipeline registers and fixed costs per unit and run. For callers to check before a large
  // simulation (M = 65,536 with 1,024 transforms: about 1.1 GB; the inputs take another 1 GB).
  // The tests find it above the measured peak at every size they try (M = 8 to 4,096): 1.04
  // times it for 64 transforms of 1,024, up to 2.5 times for runs of tens of KB. The outputs'
  // term is exact; the map nodes' size is libstdc++'s and glibc's.
  std::uint64_t run_bytes(std::uint64_t transforms) const;

 private:
  void build();
  // stage_position without the checks, for the schedule's loops.
  std::size_t position(std::size_t stage, std::size_t index) const;

  FixedFft fft_;  // a copy: the model owns its datapath
  StreamingConfig config_;
  Direction direction_;
  std::vector<StreamingUnit> units_;
};

}  // namespace torusgate::fpga_fft
