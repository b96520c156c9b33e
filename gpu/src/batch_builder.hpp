// Flattens a validated batch of GateOps into the descriptors of batch_plan.hpp: results
// numbered in batch order, bootstrapped jobs and their rotations, input and output pointers
// from each span's storage. Host compiler only (it needs core's gate and backend types);
// the CUDA backend passes device pointers, the CPU tests host pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <span>

#include "batch_plan.hpp"
#include "torusgate/core/backend.hpp"
#include "torusgate/core/lwe.hpp"

namespace torusgate::gpu::detail {

// `data(storage)` returns the pointer to sample 0 of a storage; n1 = n+1 words per sample.
template <class S, class DataFn>
BatchPlan build_batch_plan(std::span<const GateOp<S>> batch, std::size_t n1, DataFn&& data) {
  BatchPlan plan;
  auto sample = [&](const BitSpan<S>& span) { return data(span.storage) + span.offset * n1; };
  for (const GateOp<S>& op : batch) {
    if (op.out.count == 0) continue;
    EXPECTS(op.out.count <= UINT32_MAX,
            "CudaBackend::evaluate: an op of " + std::to_string(op.out.count) +
                " bits; one op may hold at most 2^32-1 (split it into several ops)");
    OpDesc d;
    d.out = sample(op.out);
    d.first_result = plan.results;
    d.count = static_cast<std::uint32_t>(op.out.count);
    switch (op.spec.kind) {
      case GateKind::Constant:
        d.kind = kernel::OpKind::Constant;
        d.constant = encode_bit(op.spec.constant_value);
        plan.has_free_gates = true;
        break;
      case GateKind::Copy:
      case GateKind::Not:
        d.kind = op.spec.kind == GateKind::Copy ? kernel::OpKind::Copy : kernel::OpKind::Not;
        d.in = sample(op.in[0]);
        plan.has_free_gates = true;
        break;
      default: {
        d.kind = kernel::OpKind::Bootstrapped;
        BootOpDesc b;
        for (int j = 0; j < op.spec.arity; ++j) b.in[j] = sample(op.in[j]);
        b.first_job = plan.jobs;
        b.first_rotation = plan.rotations;
        b.first_result = plan.results;
        b.count = d.count;
        if (op.spec.kind == GateKind::Mux) {
          // MUX(a, b, c) = KS(BR(-1/8 + a + b) + BR(-1/8 - a + c) + 1/8), as the CPU backend.
          b.bootstraps = 2;
          b.offset_eighths[0] = b.offset_eighths[1] = -1;
          b.weights[0][0] = 1;
          b.weights[0][1] = 1;
          b.weights[1][0] = -1;
          b.weights[1][2] = 1;
        } else {
          b.bootstraps = 1;
          b.offset_eighths[0] = op.spec.offset_eighths;
          for (int j = 0; j < op.spec.arity; ++j) b.weights[0][j] = op.spec.weights[j];
        }
        plan.jobs += b.count;
        plan.rotations += std::uint64_t{b.count} * b.bootstraps;
        plan.boot_ops.push_back(b);
      }
    }
    plan.results += d.count;
    plan.ops.push_back(d);
  }
  return plan;
}

}  // namespace torusgate::gpu::detail
