// compile(): turns a recorded Circuit into backend batches. Gates are levelized (a gate runs
// in the batch after the last of its inputs), so every gate whose inputs are ready shares one
// batch, whatever operation recorded it: the number of bootstrapping batches is the depth.
// Gates no output needs are dropped. Intermediate bits live in one scratch buffer whose slots
// are reused once their last reader has run (sized by interval allocation over the levels);
// gates that produce a whole output plane write straight into the output buffer.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "torusgate/circuits/netlist.hpp"
#include "torusgate/core/noise.hpp"

namespace torusgate::circuits {

// Where a run of bits lives while a schedule executes.
struct Location {
  enum class Space : std::uint8_t { Input, Scratch, Output };
  Space space = Space::Scratch;
  std::uint32_t index = 0;  // input or output number
  std::size_t offset = 0;   // first bit
};

// One backend GateOp: `count` lanes, inputs and output contiguous.
struct ScheduledOp {
  GateSpec spec;
  std::array<Location, 3> in{};
  Location out{};
  std::size_t count = 0;
};

using OutputInfo = ArrayInfo;

// What a schedule will cost, counted in single-bit gates.
struct ScheduleCost {
  std::uint32_t depth = 0;          // bootstrapping levels (batches with a bootstrap)
  std::size_t batches = 0;          // backend evaluate() calls
  std::uint64_t bootstraps = 0;     // blind rotations (MUX counts 2)
  std::uint64_t gates = 0;          // bootstrapped gates
  std::uint64_t free_gates = 0;     // copies, negations and constants into output buffers
  std::size_t scratch_bits = 0;     // peak intermediate storage, in encrypted bits
};

struct Schedule {
  std::vector<std::vector<ScheduledOp>> batches;
  std::vector<InputInfo> inputs;
  std::vector<OutputInfo> outputs;
  std::size_t scratch_bits = 0;
  ScheduleCost cost;
};

// Schedules the gates `outputs` need. Throws InvalidArgument if an output does not belong
// to the circuit (refers to an input or gate it does not have), SystemError if the schedule
// does not fit in memory.
Schedule compile(const Circuit& circuit, std::span<const Expr> outputs);

// The chance that one run of a schedule gives a wrong output bit, by a noise model
// (core/noise.hpp; docs/security.md section 3): the union bound over its bootstraps, each at
// its gate's worst input (NoiseModel::failure_probability; a MUX counts its two), so an upper
// estimate under the model, which is itself an estimate. An unrolled bootstrapping key
// (noise_model(params, unroll)) raises it most for the weighted gates of adders.
struct FailureBound {
  double log2_per_run = -INFINITY;     // log2 of the sum; -infinity without bootstraps
  GateSpec worst_gate;                 // the gate whose bootstraps fail most often
  double worst_gate_log2 = -INFINITY;  // log2 of its failure probability per bootstrap
  bool has_bootstraps() const { return std::isfinite(log2_per_run); }
};
FailureBound failure_bound(const Schedule& schedule, const NoiseModel& model);

}  // namespace torusgate::circuits
