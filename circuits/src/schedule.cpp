// Levelization, dead-gate removal, scratch allocation and lowering to backend ops.
#include "torusgate/circuits/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <new>
#include <optional>
#include <stdexcept>

#include "torusgate/core/error.hpp"

namespace torusgate::circuits {
namespace {

constexpr std::size_t none = static_cast<std::size_t>(-1);

// First-fit allocator over [0, inf) with coalescing free intervals; tracks the high water.
class IntervalAllocator {
 public:
  std::size_t allocate(std::size_t size) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < size) continue;
      const std::size_t offset = it->first, left = it->second - size;
      free_.erase(it);
      if (left > 0) free_.emplace(offset + size, left);
      return offset;
    }
    // Grow: extend a free block that ends at the top, or start a new one.
    std::size_t offset = top_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    top_ = offset + size;
    return offset;
  }

  void release(std::size_t offset, std::size_t size) {
    auto [it, inserted] = free_.emplace(offset, size);
    (void)inserted;
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
        it = prev;
      }
    }
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
  }

  std::size_t high_water() const { return top_; }

 private:
  std::map<std::size_t, std::size_t> free_;
  std::size_t top_ = 0;
};

void check_segment(const Circuit& circuit, const Segment& s, std::size_t output) {
  const std::string where = "compile: output " + std::to_string(output);
  if (s.kind != SourceKind::Constant) {
    EXPECTS(circuit.owns(s),
            where + " is an expression of another circuit (circuit " + std::to_string(s.circuit) +
                "; this is circuit " + std::to_string(circuit.id()) + ")");
  }
  if (s.kind == SourceKind::Input) {
    EXPECTS(s.id < circuit.inputs().size(),
            where + " reads input " + std::to_string(s.id) + " but the circuit has " +
                std::to_string(circuit.inputs().size()) + " inputs (an expression of another circuit?)");
    const std::size_t last = s.offset + (s.stride ? s.count - 1 : 0);
    EXPECTS(last < circuit.inputs()[s.id].bits(),
            where + " reads bit " + std::to_string(last) + " of input " + std::to_string(s.id) +
                ", which has " + std::to_string(circuit.inputs()[s.id].bits()) + " bits");
  } else if (s.kind == SourceKind::Node) {
    EXPECTS(s.id < circuit.nodes().size(),
            where + " reads gate " + std::to_string(s.id) + " but the circuit has " +
                std::to_string(circuit.nodes().size()) + " gates (an expression of another circuit?)");
    const std::size_t last = s.offset + (s.stride ? s.count - 1 : 0);
    EXPECTS(last < circuit.nodes()[s.id].lanes,
            where + " reads lane " + std::to_string(last) + " of gate " + std::to_string(s.id) +
                ", which has " + std::to_string(circuit.nodes()[s.id].lanes) + " lanes");
  }
}

// The sign gate computing NOT spec: every phase negated. Named kinds stay named where
// their negation is one (AND <-> NAND, ...).
GateSpec negated(const GateSpec& spec) {
  GateSpec g = spec;
  g.offset_eighths = static_cast<std::int8_t>(-g.offset_eighths);
  for (int i = 0; i < g.arity; ++i) g.weights[i] = static_cast<std::int8_t>(-g.weights[i]);
  g.kind = GateKind::Threshold;
  for (GateKind kind : {GateKind::And, GateKind::Nand, GateKind::Or, GateKind::Nor, GateKind::Xor,
                        GateKind::Xnor, GateKind::AndNY, GateKind::AndYN, GateKind::OrNY,
                        GateKind::OrYN, GateKind::Majority, GateKind::Xor3,
                        GateKind::PrefixGenerate}) {
    GateSpec named = GateSpec::of(kind);
    if (named.arity == g.arity && named.offset_eighths == g.offset_eighths &&
        named.weights == g.weights)
      return named;
  }
  return g;
}

// compile()'s work; compile() turns an allocation that fails (a broadcast to billions of
// elements records in an instant, but its schedule needs memory per element) into a
// SystemError.
Schedule compile_unguarded(const Circuit& circuit, std::span<const Expr> outputs) {
  const std::vector<Node>& nodes = circuit.nodes();
  Schedule sched;
  sched.inputs = circuit.inputs();

  // Reachable gates, from the outputs down (node ids are topological).
  std::vector<char> live(nodes.size(), 0);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Expr& out = outputs[k];
    EXPECTS(out.width() > 0, "compile: output " + std::to_string(k) + " is an empty expression");
    sched.outputs.push_back(OutputInfo{out.type(), out.rows(), out.cols()});
    for (const Plane& p : out.bits())
      for (const Segment& s : p.segments()) {
        check_segment(circuit, s, k);
        if (s.kind == SourceKind::Node) live[s.id] = 1;
      }
  }
  std::uint32_t depth = 0;
  for (std::size_t id = nodes.size(); id-- > 0;) {
    if (!live[id]) continue;
    depth = std::max(depth, nodes[id].level);
    for (const Piece& piece : nodes[id].pieces)
      for (int i = 0; i < piece.spec.arity; ++i)
        if (piece.in[i].kind == SourceKind::Node) live[piece.in[i].id] = 1;
  }

  // Who reads each gate: other gates, and output planes.
  std::vector<std::uint32_t> gate_reads(nodes.size(), 0), output_reads(nodes.size(), 0);
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    if (!live[id]) continue;
    for (const Piece& piece : nodes[id].pieces)
      for (int i = 0; i < piece.spec.arity; ++i)
        if (piece.in[i].kind == SourceKind::Node) ++gate_reads[piece.in[i].id];
  }
  for (const Expr& out : outputs)
    for (const Plane& p : out.bits())
      for (const Segment& s : p.segments())
        if (s.kind == SourceKind::Node) ++output_reads[s.id];
  // A sign gate whose only reader is one output plane that wants it negated computes the
  // negation itself (offset and weights negated) instead of needing a NOT afterwards.
  std::vector<char> flip(nodes.size(), 0);
  const auto flippable = [&](const Segment& s) {
    if (s.kind != SourceKind::Node || !s.negated || s.offset != 0 || s.stride != 1 ||
        s.count != nodes[s.id].lanes || gate_reads[s.id] != 0 || output_reads[s.id] != 1)
      return false;
    return std::all_of(nodes[s.id].pieces.begin(), nodes[s.id].pieces.end(),
                       [](const Piece& piece) { return piece.spec.is_sign_gate(); });
  };

  // Gates that fill a whole output plane write there directly.
  std::vector<std::optional<Location>> home(nodes.size());
  struct FreeCopy {
    Segment source;
    Location out;
    std::size_t batch;
  };
  std::vector<FreeCopy> copies;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Expr& out = outputs[k];
    const std::size_t lanes = out.lanes();
    for (std::size_t j = 0; j < out.width(); ++j) {
      const auto& segs = out.bit(j).segments();
      const Location plane_at{Location::Space::Output, static_cast<std::uint32_t>(k), j * lanes};
      if (segs.size() == 1) {
        const Segment& s = segs.front();
        if (s.kind == SourceKind::Node && !s.negated && s.offset == 0 && s.stride == 1 &&
            s.count == nodes[s.id].lanes && !home[s.id]) {
          home[s.id] = plane_at;
          continue;
        }
        if (flippable(s)) {
          home[s.id] = plane_at;
          flip[s.id] = 1;
          continue;
        }
      }
      std::size_t lane = 0;
      for (const Segment& s : segs) {
        Location at = plane_at;
        at.offset += lane;
        copies.push_back(FreeCopy{s, at, circuit.level(s)});
        lane += s.count;
      }
    }
  }

  // Batches: gates of level L run in batch L - 1; a copy runs in the batch after its source.
  std::size_t batch_count = depth;
  for (const FreeCopy& c : copies) batch_count = std::max(batch_count, c.batch + 1);
  sched.batches.resize(batch_count);

  // Liveness in batch numbers: a gate's bits are written in batch level - 1 and must stay
  // until the last batch that reads them.
  std::vector<std::size_t> last_read(nodes.size(), none);
  const auto note_read = [&](const Segment& s, std::size_t batch) {
    if (s.kind != SourceKind::Node) return;
    std::size_t& r = last_read[s.id];
    r = r == none ? batch : std::max(r, batch);
  };
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    if (!live[id]) continue;
    for (const Piece& piece : nodes[id].pieces)
      for (int i = 0; i < piece.spec.arity; ++i) note_read(piece.in[i], nodes[id].level - 1);
  }
  for (const FreeCopy& c : copies) note_read(c.source, c.batch);

  // Scratch slots by interval allocation, batch by batch.
  std::vector<std::vector<std::uint32_t>> born(batch_count), dies(batch_count);
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    if (!live[id] || home[id]) continue;
    const std::size_t birth = nodes[id].level - 1;
    const std::size_t death = last_read[id] == none ? birth : last_read[id];
    born[birth].push_back(static_cast<std::uint32_t>(id));
    dies[death].push_back(static_cast<std::uint32_t>(id));
  }
  IntervalAllocator alloc;
  for (std::size_t b = 0; b < batch_count; ++b) {
    if (b > 0)
      for (std::uint32_t id : dies[b - 1]) alloc.release(home[id]->offset, nodes[id].lanes);
    for (std::uint32_t id : born[b])
      home[id] = Location{Location::Space::Scratch, 0, alloc.allocate(nodes[id].lanes)};
  }
  sched.scratch_bits = alloc.high_water();

  // Lowering. A piece with a broadcast input (stride 0) becomes one op per lane (a backend's
  // gate reads whole spans), so the ops of each batch are counted and reserved first: a
  // broadcast to billions of elements fails here at once, not after filling memory op by op.
  const auto piece_ops = [](const Piece& piece) {
    for (int i = 0; i < piece.spec.arity; ++i)
      if (piece.in[i].stride == 0) return piece.count;
    return std::size_t{1};
  };
  const auto copy_ops = [](const FreeCopy& c) {
    return c.source.kind != SourceKind::Constant && c.source.stride == 0 ? c.source.count
                                                                         : std::size_t{1};
  };
  {
    std::vector<std::size_t> ops(batch_count, 0);
    for (std::size_t id = 0; id < nodes.size(); ++id) {
      if (!live[id]) continue;
      for (const Piece& piece : nodes[id].pieces) ops[nodes[id].level - 1] += piece_ops(piece);
    }
    for (const FreeCopy& c : copies) ops[c.batch] += copy_ops(c);
    for (std::size_t b = 0; b < batch_count; ++b) sched.batches[b].reserve(ops[b]);
  }
  const auto locate = [&](const Segment& s, std::size_t lane) {
    const std::size_t bit = s.offset + lane * s.stride;
    if (s.kind == SourceKind::Input)
      return Location{Location::Space::Input, s.id, bit};
    Location at = *home[s.id];
    at.offset += bit;
    return at;
  };
  ScheduleCost& cost = sched.cost;
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    if (!live[id]) continue;
    auto& batch = sched.batches[nodes[id].level - 1];
    std::size_t lane = 0;
    for (const Piece& piece : nodes[id].pieces) {
      const std::size_t ops = piece_ops(piece);
      const std::size_t width = ops == 1 ? piece.count : 1;
      const GateSpec spec = flip[id] ? negated(piece.spec) : piece.spec;
      for (std::size_t o = 0; o < ops; ++o) {
        ScheduledOp op;
        op.spec = spec;
        op.count = width;
        for (int i = 0; i < piece.spec.arity; ++i) op.in[i] = locate(piece.in[i], o);
        op.out = *home[id];
        op.out.offset += lane + o;
        batch.push_back(op);
      }
      lane += piece.count;
      cost.gates += piece.count;
      cost.bootstraps += piece.count * static_cast<std::uint64_t>(piece.spec.bootstraps());
    }
  }
  for (const FreeCopy& c : copies) {
    auto& batch = sched.batches[c.batch];
    const Segment& s = c.source;
    cost.free_gates += s.count;
    if (s.kind == SourceKind::Constant) {
      ScheduledOp op;
      op.spec = GateSpec::constant(s.value);
      op.count = s.count;
      op.out = c.out;
      batch.push_back(op);
      continue;
    }
    const GateSpec spec = GateSpec::of(s.negated ? GateKind::Not : GateKind::Copy);
    const std::size_t ops = copy_ops(c);
    for (std::size_t o = 0; o < ops; ++o) {
      ScheduledOp op;
      op.spec = spec;
      op.count = s.stride == 0 ? 1 : s.count;
      op.in[0] = locate(s, o);
      op.out = c.out;
      op.out.offset += o;
      batch.push_back(op);
    }
  }
  cost.depth = depth;
  cost.batches = batch_count;
  cost.scratch_bits = sched.scratch_bits;
  return sched;
}

}  // namespace

Schedule compile(const Circuit& circuit, std::span<const Expr> outputs) {
  try {
    return compile_unguarded(circuit, outputs);
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  std::size_t lanes = 0;
  for (const Expr& e : outputs) lanes = std::max(lanes, e.lanes());
  throw SystemError("compile: the schedule of " + std::to_string(circuit.nodes().size()) +
                    " gates for outputs of up to " + std::to_string(lanes) +
                    " elements does not fit in memory");
}

FailureBound failure_bound(const Schedule& schedule, const NoiseModel& model) {
  // log2(2^a + 2^b), exact where either underflows a double.
  const auto log2_add = [](double a, double b) {
    if (a < b) std::swap(a, b);
    if (std::isinf(b)) return a;
    return a + std::log2(1.0 + std::exp2(b - a));
  };
  FailureBound bound;
  for (const auto& batch : schedule.batches) {
    for (const ScheduledOp& op : batch) {
      const int bootstraps = op.spec.bootstraps();
      if (bootstraps == 0 || op.count == 0) continue;
      const double per_bootstrap = model.log2_failure_probability(op.spec);
      const double bootstraps_here = static_cast<double>(op.count) * bootstraps;
      bound.log2_per_run = log2_add(bound.log2_per_run, per_bootstrap + std::log2(bootstraps_here));
      if (per_bootstrap > bound.worst_gate_log2) {
        bound.worst_gate_log2 = per_bootstrap;
        bound.worst_gate = op.spec;
      }
    }
  }
  return bound;
}

}  // namespace torusgate::circuits
