// Planes, expressions and gate recording with constant, negation and repeated-input folding.
#include "torusgate/circuits/netlist.hpp"

#include "torusgate/circuits/int_codec.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "torusgate/core/error.hpp"

namespace torusgate::circuits {

// ----------------------------------------------------------------------------- segments

Segment Segment::sub(std::size_t first, std::size_t n) const {
  Segment s = *this;
  s.count = n;
  if (kind != SourceKind::Constant) s.offset = offset + first * stride;
  // The canonical form Plane::append keeps: one lane has stride 1, so a lane of a broadcast
  // and the same bit read per lane are one variable of a gate.
  if (n == 1) s.stride = 1;
  return s;
}

namespace {

// True when `next` continues `prev` (same source, adjacent lanes).
bool continues(const Segment& prev, const Segment& next) {
  if (prev.kind != next.kind) return false;
  if (prev.kind == SourceKind::Constant) return prev.value == next.value;
  if (prev.id != next.id || prev.circuit != next.circuit || prev.negated != next.negated) {
    return false;
  }
  if (prev.stride == 0 && next.stride == 0) return prev.offset == next.offset;
  // Two single lanes of consecutive bits join into a stride-1 run.
  const bool prev_run = prev.stride == 1 || prev.count == 1;
  const bool next_run = next.stride == 1 || next.count == 1;
  return prev_run && next_run && next.offset == prev.offset + prev.count;
}

}  // namespace

// ----------------------------------------------------------------------------- planes

Plane Plane::constant(bool value, std::size_t lanes) {
  Segment s;
  s.kind = SourceKind::Constant;
  s.value = value;
  s.count = lanes;
  return of(s);
}

Plane Plane::of(const Segment& segment) {
  Plane p;
  p.append(segment);
  return p;
}

Plane Plane::concat(std::span<const Plane> planes) {
  Plane p;
  for (const Plane& q : planes)
    for (const Segment& s : q.segments_) p.append(s);
  return p;
}

void Plane::append(const Segment& segment) {
  if (segment.count == 0) return;
  Segment s = segment;
  // Canonical form: single lanes and constants have stride 1.
  if (s.count == 1 || s.kind == SourceKind::Constant) s.stride = 1;
  lanes_ += s.count;
  if (!segments_.empty() && continues(segments_.back(), s)) {
    Segment& last = segments_.back();
    if (last.kind != SourceKind::Constant && !(last.stride == 0 && s.stride == 0)) last.stride = 1;
    last.count += s.count;
    return;
  }
  segments_.push_back(s);
}

Plane Plane::slice(std::size_t first, std::size_t count) const {
  EXPECTS(first <= lanes_ && count <= lanes_ - first,
          "Plane::slice: lanes [" + std::to_string(first) + ", " + std::to_string(first + count) +
              ") are outside a plane of " + std::to_string(lanes_) + " lanes");
  Plane p;
  std::size_t pos = 0;
  for (const Segment& s : segments_) {
    const std::size_t lo = std::max(pos, first), hi = std::min(pos + s.count, first + count);
    if (lo < hi) p.append(s.sub(lo - pos, hi - lo));
    pos += s.count;
    if (pos >= first + count) break;
  }
  return p;
}

Plane Plane::broadcast(std::size_t lanes) const {
  EXPECTS(lanes_ == 1, "Plane::broadcast: the plane has " + std::to_string(lanes_) +
                           " lanes but only a one-lane plane can be broadcast");
  Segment s = segments_.front();
  s.stride = 0;
  s.count = lanes;
  return of(s);
}

Plane Plane::gather(std::span<const std::size_t> lanes) const {
  // Index each lane's segment once, then append lane by lane (runs merge again).
  std::vector<std::size_t> starts;
  starts.reserve(segments_.size());
  std::size_t pos = 0;
  for (const Segment& s : segments_) {
    starts.push_back(pos);
    pos += s.count;
  }
  Plane p;
  for (std::size_t lane : lanes) {
    EXPECTS(lane < lanes_, "Plane::gather: lane " + std::to_string(lane) +
                               " is outside a plane of " + std::to_string(lanes_) + " lanes");
    const std::size_t k =
        static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), lane) -
                                 starts.begin()) - 1;
    p.append(segments_[k].sub(lane - starts[k], 1));
  }
  return p;
}

Plane Plane::operator~() const {
  Plane p = *this;
  for (Segment& s : p.segments_) {
    if (s.kind == SourceKind::Constant)
      s.value = !s.value;
    else
      s.negated = !s.negated;
  }
  return p;
}

std::optional<bool> Plane::constant_value() const {
  if (segments_.size() != 1 || !segments_.front().is_constant()) return std::nullopt;
  return segments_.front().value;
}

std::string to_string(const IntType& type) {
  std::string name(type.is_signed ? "s" : "u");
  name += std::to_string(type.width);
  return name;
}

void check_width(std::size_t width, std::string_view who) {
  EXPECTS(width >= 1, std::string(who) + ": width 0; an integer needs at least one bit");
  EXPECTS(width <= max_width, std::string(who) + ": width " + std::to_string(width) +
                                  " but at most " + std::to_string(max_width) +
                                  " bits (max_width) are supported");
}

std::size_t bit_count(const IntType& type, std::size_t rows, std::size_t cols,
                      std::string_view who) {
  std::size_t lanes = 0;
  std::size_t bits = 0;
  EXPECTS(!__builtin_mul_overflow(rows, cols, &lanes) &&
              !__builtin_mul_overflow(lanes, type.width, &bits),
          std::string(who) + ": " + std::to_string(rows) + " x " + std::to_string(cols) + " " +
              to_string(type) + " has more than 2^64 bits");
  return bits;
}

// ----------------------------------------------------------------------------- expressions

Expr::Expr(std::vector<Plane> bits, bool is_signed) : bits_(std::move(bits)), is_signed_(is_signed) {
  EXPECTS(!bits_.empty(), "Expr: an integer needs at least one bit");
  const std::size_t lanes = bits_.front().lanes();
  EXPECTS(lanes > 0, "Expr: an integer array needs at least one element");
  for (std::size_t j = 0; j < bits_.size(); ++j)
    EXPECTS(bits_[j].lanes() == lanes, "Expr: bit " + std::to_string(j) + " has " +
                                           std::to_string(bits_[j].lanes()) +
                                           " lanes but bit 0 has " + std::to_string(lanes));
  rows_ = 1;
  cols_ = lanes;
}

const Plane& Expr::sign_bit() const {
  EXPECTS(!bits_.empty(), "Expr::sign_bit: an empty expression has no bits");
  return bits_.back();
}

const Plane& Expr::bit(std::size_t j) const {
  EXPECTS(j < bits_.size(), "Expr::bit: bit " + std::to_string(j) + " of a " +
                                std::to_string(bits_.size()) + "-bit integer");
  return bits_[j];
}

Expr Expr::elements(std::size_t first, std::size_t count) const {
  EXPECTS(first <= lanes() && count <= lanes() - first && count > 0,
          "Expr::elements: [" + std::to_string(first) + ", " + std::to_string(first + count) +
              ") is not a non-empty range of the " + std::to_string(lanes()) + " elements");
  std::vector<Plane> bits;
  bits.reserve(width());
  for (const Plane& p : bits_) bits.push_back(p.slice(first, count));
  return Expr(std::move(bits), is_signed_);
}

Expr Expr::gather(std::span<const std::size_t> lanes) const {
  EXPECTS(!lanes.empty(), "Expr::gather: no elements selected");
  std::vector<Plane> bits;
  bits.reserve(width());
  for (const Plane& p : bits_) bits.push_back(p.gather(lanes));
  return Expr(std::move(bits), is_signed_);
}

Expr Expr::reshape(std::size_t rows, std::size_t cols) const {
  EXPECTS(rows > 0 && cols > 0 && rows * cols == lanes() && cols == lanes() / rows,
          "Expr::reshape: " + std::to_string(rows) + " x " + std::to_string(cols) +
              " does not hold the " + std::to_string(lanes()) + " elements");
  Expr e = *this;
  e.rows_ = rows;
  e.cols_ = cols;
  return e;
}

Expr Expr::as_signed(bool is_signed) const {
  Expr e = *this;
  e.is_signed_ = is_signed;
  return e;
}

// ----------------------------------------------------------------------------- gate realizations

namespace {

// A gate computing a given function of k variables: the spec and, for each of its inputs,
// which variable it reads.
struct Realization {
  GateSpec spec;
  std::array<std::uint8_t, 3> var{};
  bool valid = false;
};

// Truth table (bit x = f(x0, x1, x2), variable i = bit i of x) of `spec` with input i
// reading variable perm[i].
std::uint8_t table_of(const GateSpec& spec, std::size_t k, const std::array<std::uint8_t, 3>& perm) {
  std::uint8_t t = 0;
  for (unsigned x = 0; x < (1u << k); ++x) {
    bool in[3] = {false, false, false};
    for (int i = 0; i < spec.arity; ++i) in[i] = (x >> perm[i]) & 1;
    if (spec.evaluate(in[0], in[1], in[2])) t = static_cast<std::uint8_t>(t | (1u << x));
  }
  return t;
}

double quality(const GateSpec& spec) {
  return spec.ideal_margin() / std::sqrt(static_cast<double>(spec.variance_factor()));
}

// For every function of k = 2 or 3 variables that one gate computes, the best such gate:
// largest noise margin per standard deviation, then a named kind, then the fewest bootstraps.
class RealizationTable {
 public:
  RealizationTable() {
    const GateKind fixed2[] = {GateKind::And,   GateKind::Nand,  GateKind::Or,   GateKind::Nor,
                               GateKind::Xor,   GateKind::Xnor,  GateKind::AndNY, GateKind::AndYN,
                               GateKind::OrNY,  GateKind::OrYN};
    const GateKind fixed3[] = {GateKind::Majority, GateKind::Xor3, GateKind::PrefixGenerate,
                               GateKind::Mux};
    for (GateKind kind : fixed2) offer_all(GateSpec::of(kind), 2, true);
    for (GateKind kind : fixed3) offer_all(GateSpec::of(kind), 3, true);
    for (std::size_t k = 2; k <= 3; ++k) {
      const int lo = -4, hi = 4;
      for (int o = -7; o <= 7; ++o)
        for (int w0 = lo; w0 <= hi; ++w0)
          for (int w1 = lo; w1 <= hi; ++w1)
            for (int w2 = (k == 3 ? lo : 0); w2 <= (k == 3 ? hi : 0); ++w2) {
              if (w0 == 0 || w1 == 0 || (k == 3 && w2 == 0)) continue;
              if (!phases_valid(o, {w0, w1, w2}, k)) continue;
              const GateSpec spec = k == 2 ? GateSpec::threshold(o, {w0, w1})
                                           : GateSpec::threshold(o, {w0, w1, w2});
              offer(spec, k, {0, 1, 2}, false);
            }
    }
  }

  const Realization& find(std::size_t k, std::uint8_t table) const {
    return k == 2 ? best2_[table & 0xF] : best3_[table];
  }

 private:
  static bool phases_valid(int offset, std::array<int, 3> w, std::size_t k) {
    for (unsigned x = 0; x < (1u << k); ++x) {
      int e = offset;
      for (std::size_t i = 0; i < k; ++i) e += ((x >> i) & 1) ? w[i] : -w[i];
      e = ((e % 8) + 8) % 8;
      if (e == 0 || e == 4) return false;
    }
    return true;
  }

  void offer_all(const GateSpec& spec, std::size_t k, bool named) {
    static constexpr std::array<std::array<std::uint8_t, 3>, 6> perms = {{
        {0, 1, 2}, {1, 0, 2}, {0, 2, 1}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};
    for (std::size_t i = 0; i < (k == 2 ? 2 : 6); ++i) offer(spec, k, perms[i], named);
  }

  void offer(const GateSpec& spec, std::size_t k, const std::array<std::uint8_t, 3>& perm,
             bool named) {
    const std::uint8_t t = table_of(spec, k, perm);
    Realization& r = k == 2 ? best2_[t & 0xF] : best3_[t];
    const double q = quality(spec);
    if (r.valid) {
      const double rq = quality(r.spec);
      const bool r_named = r.spec.kind != GateKind::Threshold;
      if (q < rq - 1e-12) return;
      if (std::abs(q - rq) <= 1e-12) {
        if (r_named && !named) return;
        if (r_named == named && spec.bootstraps() >= r.spec.bootstraps()) return;
      }
    }
    r = Realization{spec, perm, true};
  }

  std::array<Realization, 16> best2_{};
  std::array<Realization, 256> best3_{};
};

const RealizationTable& realizations() {
  static const RealizationTable table;
  return table;
}

// A variable of a piece: a non-constant segment without its negation flag.
bool same_variable(const Segment& a, const Segment& b) {
  return a.kind == b.kind && a.id == b.id && a.offset == b.offset && a.stride == b.stride &&
         a.count == b.count;
}

Segment literal(const Segment& var, bool negated) {
  Segment s = var;
  s.negated = negated;
  return s;
}

constexpr std::uint32_t pending_node = std::numeric_limits<std::uint32_t>::max();

void append_key(std::string& key, const void* p, std::size_t n) {
  key.append(static_cast<const char*>(p), n);
}

std::string node_key(const std::vector<Piece>& pieces) {
  std::string key;
  key.reserve(pieces.size() * 96);
  for (const Piece& piece : pieces) {
    const GateSpec& g = piece.spec;
    append_key(key, &g.kind, 1);
    append_key(key, &g.arity, 1);
    append_key(key, &g.offset_eighths, 1);
    append_key(key, g.weights.data(), 3);
    append_key(key, &piece.count, sizeof piece.count);
    for (int i = 0; i < g.arity; ++i) {
      const Segment& s = piece.in[i];
      append_key(key, &s.kind, 1);
      append_key(key, &s.stride, 1);
      append_key(key, &s.id, sizeof s.id);
      append_key(key, &s.offset, sizeof s.offset);
    }
  }
  return key;
}

// Throws InvalidArgument unless every segment of `plane` (input `i` of a gate) reads bits that
// exist in `circuit`: an expression recorded in another circuit names inputs and gates by
// their ids there, which here are other objects or none at all.
void check_plane_in(const Circuit& circuit, const Plane& plane, std::size_t i, GateKind kind) {
  // Messages are built only on failure: gate() runs for every recorded plane operation.
  const auto where = [&] {
    return "Circuit::gate(" + std::string(gate_kind_name(kind)) + "): input " + std::to_string(i);
  };
  for (const Segment& s : plane.segments()) {
    if (s.kind == SourceKind::Constant || s.count == 0) continue;
    EXPECTS(circuit.owns(s),
            where() + " is an expression of another circuit (circuit " +
                std::to_string(s.circuit) + "; this is circuit " + std::to_string(circuit.id()) +
                "): record an operation's operands in the circuit that records it");
    const std::size_t last = s.offset + (s.stride ? s.count - 1 : 0);
    if (s.kind == SourceKind::Input) {
      EXPECTS(s.id < circuit.inputs().size() && last < circuit.inputs()[s.id].bits(),
              where() + " reads bit " + std::to_string(last) + " of input " + std::to_string(s.id) +
                  " but the circuit has " + std::to_string(circuit.inputs().size()) +
                  " inputs" +
                  (s.id < circuit.inputs().size()
                       ? " and that one has " + std::to_string(circuit.inputs()[s.id].bits()) +
                             " bits"
                       : std::string()) +
                  " (an expression of another circuit?)");
    } else {
      EXPECTS(s.id < circuit.nodes().size() && last < circuit.nodes()[s.id].lanes,
              where() + " reads lane " + std::to_string(last) + " of gate " + std::to_string(s.id) +
                  " but the circuit has " + std::to_string(circuit.nodes().size()) + " gates" +
                  (s.id < circuit.nodes().size()
                       ? " and that one has " + std::to_string(circuit.nodes()[s.id].lanes) +
                             " lanes"
                       : std::string()) +
                  " (an expression of another circuit?)");
    }
  }
}

}  // namespace

// ----------------------------------------------------------------------------- circuit

namespace {

std::uint32_t new_circuit_id() {
  static std::atomic<std::uint32_t> next_id{1};  // 0: no circuit (constants)
  return next_id.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

Circuit::Circuit() : id_(new_circuit_id()) {}

Circuit::Circuit(const Circuit& other)
    : id_(new_circuit_id()),
      origins_(other.origins_),
      nodes_(other.nodes_),
      inputs_(other.inputs_),
      dedup_(other.dedup_) {
  origins_.push_back(Origin{other.id_, other.inputs_.size(), other.nodes_.size()});
}

Circuit& Circuit::operator=(const Circuit& other) {
  if (this != &other) *this = Circuit(other);
  return *this;
}

Circuit::Circuit(Circuit&& other) noexcept : id_(0) { take(other); }

Circuit& Circuit::operator=(Circuit&& other) noexcept {
  if (this != &other) take(other);
  return *this;
}

void Circuit::take(Circuit& other) noexcept {
  id_ = std::exchange(other.id_, new_circuit_id());
  origins_ = std::exchange(other.origins_, {});
  nodes_ = std::exchange(other.nodes_, {});
  inputs_ = std::exchange(other.inputs_, {});
  dedup_ = std::exchange(other.dedup_, {});
}

bool Circuit::owns(const Segment& segment) const {
  if (segment.kind == SourceKind::Constant || segment.circuit == id_) return true;
  for (const Origin& origin : origins_) {
    if (origin.id == segment.circuit) {
      return segment.id < (segment.kind == SourceKind::Input ? origin.inputs : origin.nodes);
    }
  }
  return false;
}

Expr Circuit::input(IntType type, std::size_t rows, std::size_t cols) {
  check_width(type.width, "Circuit::input");
  EXPECTS(rows >= 1 && cols >= 1, "Circuit::input: shape " + std::to_string(rows) + " x " +
                                      std::to_string(cols) + " has no elements");
  bit_count(type, rows, cols, "Circuit::input");
  EXPECTS(inputs_.size() < pending_node, "Circuit::input: too many inputs");
  const auto id = static_cast<std::uint32_t>(inputs_.size());
  inputs_.push_back(InputInfo{type, rows, cols});
  const std::size_t lanes = rows * cols;
  std::vector<Plane> bits;
  bits.reserve(type.width);
  for (std::size_t j = 0; j < type.width; ++j) {
    Segment s;
    s.kind = SourceKind::Input;
    s.id = id;
    s.circuit = id_;
    s.offset = j * lanes;
    s.count = lanes;
    bits.push_back(Plane::of(s));
  }
  return Expr(std::move(bits), type.is_signed).reshape(rows, cols);
}

Expr Circuit::constant(std::span<const std::uint64_t> values, IntType type) {
  check_width(type.width, "Circuit::constant");
  EXPECTS(!values.empty(), "Circuit::constant: no values");
  // Wider than 64 bits: unsigned values always fit, signed ones extend their sign.
  check_values(values, IntType{std::min<std::size_t>(type.width, 64), type.is_signed},
               "Circuit::constant");
  std::vector<Plane> bits(type.width);
  for (std::size_t j = 0; j < type.width; ++j) {
    const unsigned shift = static_cast<unsigned>(std::min<std::size_t>(j, 63));
    for (std::uint64_t v : values) {
      bool bit = (v >> shift) & 1;
      if (j >= 64) bit = type.is_signed && ((v >> 63) & 1);
      Segment s;
      s.kind = SourceKind::Constant;
      s.value = bit;
      s.count = 1;
      bits[j].append(s);
    }
  }
  return Expr(std::move(bits), type.is_signed);
}

Expr Circuit::constant(std::uint64_t value, IntType type, std::size_t lanes) {
  EXPECTS(lanes >= 1, "Circuit::constant: no elements");
  check_width(type.width, "Circuit::constant");
  bit_count(type, 1, lanes, "Circuit::constant");  // the result's bits must fit std::size_t
  const std::uint64_t one[] = {value};
  Expr e = constant(one, type);
  std::vector<Plane> bits;
  for (const Plane& p : e.bits()) bits.push_back(Plane::constant(*p.constant_value(), lanes));
  return Expr(std::move(bits), type.is_signed);
}

Expr Circuit::constant_signed(std::int64_t value, IntType type, std::size_t lanes) {
  EXPECTS(type.is_signed, "Circuit::constant_signed: type " + to_string(type) + " is unsigned");
  return constant(static_cast<std::uint64_t>(value), type, lanes);
}

std::uint32_t Circuit::level(const Segment& segment) const {
  if (segment.kind != SourceKind::Node) return 0;
  EXPECTS(owns(segment) && segment.id < nodes_.size(),
          "Circuit::level: gate " + std::to_string(segment.id) + " of circuit " +
              std::to_string(segment.circuit) + " is not a gate of this circuit (circuit " +
              std::to_string(id_) + ", " + std::to_string(nodes_.size()) + " gates)");
  return nodes_[segment.id].level;
}

Plane Circuit::gate(const GateSpec& spec, const Plane& a, const Plane& b, const Plane& c) {
  spec.validate();
  EXPECTS(spec.kind != GateKind::Constant,
          "Circuit::gate: a constant has no lane count; use Plane::constant");
  if (spec.kind == GateKind::Copy) return a;
  if (spec.kind == GateKind::Not) return ~a;
  const std::array<const Plane*, 3> in = {&a, &b, &c};
  const std::size_t arity = spec.arity;
  const std::size_t lanes = a.lanes();
  EXPECTS(lanes > 0, "Circuit::gate(" + std::string(gate_kind_name(spec.kind)) +
                         "): input 0 has no lanes");
  for (std::size_t i = 1; i < arity; ++i)
    EXPECTS(in[i]->lanes() == lanes,
            "Circuit::gate(" + std::string(gate_kind_name(spec.kind)) + "): input " +
                std::to_string(i) + " has " + std::to_string(in[i]->lanes()) +
                " lanes but input 0 has " + std::to_string(lanes));
  for (std::size_t i = 0; i < arity; ++i)
    check_plane_in(*this, *in[i], i, spec.kind);
  // Inputs that are each one bit repeated (broadcasts, constants) give one bit repeated: the
  // gate on one lane, broadcast, instead of one bootstrap per lane.
  const auto repeated = [](const Plane& p) {
    return p.segments().size() == 1 &&
           (p.segments().front().is_constant() || p.segments().front().stride == 0);
  };
  if (lanes > 1 && std::all_of(in.begin(), in.begin() + static_cast<long>(arity),
                               [&](const Plane* p) { return repeated(*p); })) {
    std::array<Plane, 3> one;
    for (std::size_t i = 0; i < arity; ++i) one[i] = in[i]->slice(0, 1);
    return gate(spec, one[0], one[1], one[2]).broadcast(lanes);
  }

  // Walk the inputs' segments together; each stretch where every input stays inside one
  // segment is one piece.
  std::vector<Piece> pieces;
  std::size_t node_lanes = 0;
  Plane out;
  std::array<std::size_t, 3> seg{0, 0, 0}, used{0, 0, 0};
  std::size_t pos = 0;
  while (pos < lanes) {
    std::size_t len = lanes - pos;
    for (std::size_t i = 0; i < arity; ++i)
      len = std::min(len, in[i]->segments()[seg[i]].count - used[i]);
    std::array<Segment, 3> piece_in{};
    for (std::size_t i = 0; i < arity; ++i)
      piece_in[i] = in[i]->segments()[seg[i]].sub(used[i], len);
    out.append(gate_piece(spec, piece_in, arity, len, pieces, node_lanes));
    for (std::size_t i = 0; i < arity; ++i) {
      used[i] += len;
      if (used[i] == in[i]->segments()[seg[i]].count) {
        ++seg[i];
        used[i] = 0;
      }
    }
    pos += len;
  }
  if (pieces.empty()) return out;
  return commit(std::move(pieces), node_lanes, out);
}

Segment Circuit::gate_piece(const GateSpec& spec, std::array<Segment, 3> in, std::size_t arity,
                            std::size_t count, std::vector<Piece>& pieces,
                            std::size_t& node_lanes) {
  // Distinct variables and each input as a literal over them.
  std::array<Segment, 3> vars{};
  std::size_t nvars = 0;
  std::array<int, 3> var_of{-1, -1, -1};
  bool folded = false;
  for (std::size_t i = 0; i < arity; ++i) {
    if (in[i].is_constant()) {
      folded = true;
      continue;
    }
    if (in[i].negated) folded = true;
    std::size_t v = 0;
    while (v < nvars && !same_variable(vars[v], in[i])) ++v;
    if (v == nvars) vars[nvars++] = literal(in[i], false);
    if (v != i) folded = true;
    var_of[i] = static_cast<int>(v);
  }
  std::uint8_t table = 0;
  for (unsigned x = 0; x < (1u << nvars); ++x) {
    bool bits[3] = {false, false, false};
    for (std::size_t i = 0; i < arity; ++i)
      bits[i] = var_of[i] < 0 ? in[i].value : (((x >> var_of[i]) & 1) != 0) != in[i].negated;
    if (spec.evaluate(bits[0], bits[1], bits[2])) table = static_cast<std::uint8_t>(table | (1u << x));
  }
  // Keep only the variables the function depends on.
  std::array<Segment, 3> rel{};
  std::size_t nrel = 0;
  std::uint8_t reduced = 0;
  {
    std::array<std::size_t, 3> keep{};
    for (std::size_t v = 0; v < nvars; ++v) {
      bool depends = false;
      for (unsigned x = 0; x < (1u << nvars); ++x)
        depends |= ((table >> x) & 1) != ((table >> (x ^ (1u << v))) & 1);
      if (depends) keep[nrel++] = v;
    }
    if (nrel != nvars) folded = true;
    for (unsigned y = 0; y < (1u << nrel); ++y) {
      unsigned x = 0;
      for (std::size_t r = 0; r < nrel; ++r)
        if ((y >> r) & 1) x |= 1u << keep[r];
      if ((table >> x) & 1) reduced = static_cast<std::uint8_t>(reduced | (1u << y));
    }
    for (std::size_t r = 0; r < nrel; ++r) rel[r] = vars[keep[r]];
  }
  if (nrel == 0) {
    Segment s;
    s.kind = SourceKind::Constant;
    s.value = reduced & 1;
    s.count = count;
    return s;
  }
  if (nrel == 1) return literal(rel[0], reduced == 0b01);  // 0b10: identity, 0b01: negation

  Piece piece;
  piece.count = count;
  bool negate_output = false;
  if (!folded) {
    piece.spec = spec;
    piece.in = in;
  } else {
    // The function itself, or else its complement (a free negation of the gate's output:
    // a MUX of two negated inputs is a negated MUX).
    const Realization* r = &realizations().find(nrel, reduced);
    if (!r->valid) {
      const auto complement = static_cast<std::uint8_t>(~reduced & ((1u << (1u << nrel)) - 1));
      r = &realizations().find(nrel, complement);
      if (!r->valid) return expand(rel, nrel, reduced, count);
      negate_output = true;
    }
    piece.spec = r->spec;
    for (int i = 0; i < r->spec.arity; ++i) piece.in[i] = rel[r->var[i]];
  }
  Segment s;
  s.negated = negate_output;
  s.kind = SourceKind::Node;
  s.id = pending_node;
  s.circuit = id_;
  s.offset = node_lanes;
  s.count = count;
  node_lanes += count;
  pieces.push_back(piece);
  return s;
}

Segment Circuit::expand(const std::array<Segment, 3>& vars, std::size_t nvars, std::uint8_t table,
                        std::size_t count) {
  // f = (v and f1) or (not v and f0) with v the first variable; f1 and f0 depend on the
  // other variables only, so each is one gate (or free), and the two products never overlap.
  const auto cofactor = [&](bool v) {
    std::uint8_t t = 0;
    for (unsigned y = 0; y < (1u << (nvars - 1)); ++y)
      if ((table >> ((y << 1) | (v ? 1u : 0u))) & 1) t = static_cast<std::uint8_t>(t | (1u << y));
    return t;
  };
  const auto plane_of_table = [&](std::uint8_t t) {
    // A gate with inputs vars[1..] and this truth table: pick the spec by searching.
    if (nvars - 1 == 1) {
      if (t == 0b00 || t == 0b11) return Plane::constant(t & 1, count);
      return Plane::of(literal(vars[1], t == 0b01));
    }
    const Realization& r = realizations().find(2, t);
    if (!r.valid) {  // constants or single literals of two variables
      const bool depends1 = ((t ^ (t >> 1)) & 0b0101) != 0;
      const bool depends2 = ((t ^ (t >> 2)) & 0b0011) != 0;
      if (!depends1 && !depends2) return Plane::constant(t & 1, count);
      // One variable: its identity when f(0, 0) = 0, else its negation.
      return Plane::of(literal(depends1 ? vars[1] : vars[2], (t & 1) != 0));
    }
    std::array<Plane, 3> ins;
    for (int i = 0; i < r.spec.arity; ++i) ins[i] = Plane::of(vars[1 + r.var[i]]);
    return gate(r.spec, ins[0], ins[1], ins[2]);
  };
  const Plane v = Plane::of(vars[0]);
  const Plane f1 = plane_of_table(cofactor(true));
  const Plane f0 = plane_of_table(cofactor(false));
  const Plane hi = gate(GateSpec::of(GateKind::And), v, f1);
  const Plane lo = gate(GateSpec::of(GateKind::AndNY), v, f0);
  const Plane out = gate(GateSpec::of(GateKind::Or), hi, lo);
  EXPECTS(out.segments().size() == 1, "Circuit::gate: internal error in the Shannon expansion");
  return out.segments().front();
}

Plane Circuit::commit(std::vector<Piece> pieces, std::size_t lanes, const Plane& shape) {
  std::uint32_t level = 0;
  for (const Piece& piece : pieces)
    for (int i = 0; i < piece.spec.arity; ++i) level = std::max(level, this->level(piece.in[i]));
  std::string key = node_key(pieces);
  std::uint32_t id;
  if (auto it = dedup_.find(key); it != dedup_.end()) {
    id = it->second;
  } else {
    EXPECTS(nodes_.size() < pending_node, "Circuit::gate: too many gates in one circuit");
    id = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back(Node{std::move(pieces), lanes, level + 1});
    dedup_.emplace(std::move(key), id);
  }
  Plane out;
  for (Segment s : shape.segments()) {
    if (s.kind == SourceKind::Node && s.id == pending_node) s.id = id;
    out.append(s);
  }
  return out;
}

}  // namespace torusgate::circuits
