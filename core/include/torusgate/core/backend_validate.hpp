// validate_batch: the shared checks every backend runs on a batch before evaluating it.
#pragma once

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "torusgate/core/backend.hpp"

namespace torusgate {

template <class S, class OwnsFn>
void validate_batch(std::span<const GateOp<S>> batch, OwnsFn&& owns, const char* who) {
  const std::string fn(who);
  std::vector<std::tuple<const S*, std::size_t, std::size_t, std::size_t>> outputs;
  outputs.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const GateOp<S>& op = batch[i];
    const std::string where = fn + ": op " + std::to_string(i) + " (" +
                              std::string(gate_kind_name(op.spec.kind)) + ")";
    try {
      op.spec.validate();
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(where + ": " + e.what());
    }
    EXPECTS(op.out.storage != nullptr, where + " has no output span");
    EXPECTS(owns(op.out.storage), where + ": the output span belongs to another backend");
    EXPECTS(span_in_bounds(op.out), where + ": output: " + span_bounds_error(op.out));
    for (int j = 0; j < 3; ++j) {
      const BitSpan<S>& in = op.in[j];
      if (j < op.spec.arity) {
        EXPECTS(in.storage != nullptr, where + " needs input " + std::to_string(j) +
                                           " but it is an empty span");
        EXPECTS(owns(in.storage), where + ": input " + std::to_string(j) +
                                      " belongs to another backend");
        EXPECTS(span_in_bounds(in),
                where + ": input " + std::to_string(j) + ": " + span_bounds_error(in));
        EXPECTS(in.count == op.out.count,
                where + ": input " + std::to_string(j) + " has " + std::to_string(in.count) +
                    " bits but the output has " + std::to_string(op.out.count));
      }
    }
    if (op.out.count > 0) outputs.emplace_back(op.out.storage, op.out.offset, op.out.count, i);
  }
  std::sort(outputs.begin(), outputs.end());
  for (std::size_t i = 1; i < outputs.size(); ++i) {
    const auto& [s0, off0, n0, op0] = outputs[i - 1];
    const auto& [s1, off1, n1, op1] = outputs[i];
    EXPECTS(s0 != s1 || off0 + n0 <= off1,
            fn + ": outputs of ops " + std::to_string(op0) + " and " + std::to_string(op1) +
                " overlap; the gates of one batch must write distinct bits");
  }
}

}  // namespace torusgate
