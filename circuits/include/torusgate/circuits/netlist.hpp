// The circuit netlist that every encrypted integer operation is written against: bit planes
// (one bit position across many lanes, as views of inputs, constants and gate outputs), integer
// expressions over planes, and the Circuit that records gates.
//
// A Circuit does not compute anything. Operations record vector gates into it; compile()
// (schedule.hpp) levelizes the recorded graph so that every gate whose inputs are ready is in
// the same backend batch, and execute() (program.hpp) runs it on any backend. Recording first
// is what merges independent operations (the sub-products of Karatsuba, the rows of a matrix
// product) into one batch per level: the number of batches is the circuit depth.
//
// Free operations cost nothing: NOT is a flag on a plane, shifts, slices, concatenations and
// broadcasts are views, and constants are folded into the gates that read them (AND with 1 is
// the other input, XOR with 1 its negation, MAJ(a, b, 1) is OR(a, b), ...). Identical gates
// on identical inputs are recorded once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "torusgate/core/gates.hpp"

namespace torusgate::circuits {

// Where the bits of a segment come from.
enum class SourceKind : std::uint8_t {
  Constant,  // a plaintext constant bit (trivial ciphertext)
  Input,     // a buffer bound when the circuit runs
  Node,      // the output of a recorded gate
};

// `count` lanes of one source: lane e reads bit offset + e * stride of input/node `id`
// (stride 1, or 0 to broadcast one bit), negated when `negated` is set.
struct Segment {
  SourceKind kind = SourceKind::Constant;
  bool value = false;    // Constant only
  bool negated = false;  // Input and Node only
  std::uint8_t stride = 1;
  std::uint32_t id = 0;
  std::uint32_t circuit = 0;  // Input and Node only: the id() of the Circuit that made it
  std::size_t offset = 0;
  std::size_t count = 0;

  // Lanes [first, first + n) of this segment.
  Segment sub(std::size_t first, std::size_t n) const;
  bool is_constant() const { return kind == SourceKind::Constant; }
  friend bool operator==(const Segment&, const Segment&) = default;
};

// One bit position across `lanes()` lanes: a list of segments.
class Plane {
 public:
  Plane() = default;
  static Plane constant(bool value, std::size_t lanes);
  static Plane of(const Segment& segment);
  // Lanes of the given planes, one after the other.
  static Plane concat(std::span<const Plane> planes);

  std::size_t lanes() const { return lanes_; }
  bool empty() const { return lanes_ == 0; }
  const std::vector<Segment>& segments() const { return segments_; }

  Plane slice(std::size_t first, std::size_t count) const;
  // A one-lane plane repeated over `lanes` lanes.
  Plane broadcast(std::size_t lanes) const;
  // The lanes of this plane in the order `lanes` lists them.
  Plane gather(std::span<const std::size_t> lanes) const;
  // Free negation.
  Plane operator~() const;
  // The value when every lane is the same constant.
  std::optional<bool> constant_value() const;

  // Appends a segment, merging it with the last one when they continue each other.
  void append(const Segment& segment);

  friend bool operator==(const Plane&, const Plane&) = default;

 private:
  std::vector<Segment> segments_;
  std::size_t lanes_ = 0;
};

// The type of an encrypted integer: width in bits (little-endian) and signedness.
struct IntType {
  std::size_t width = 0;
  bool is_signed = false;
  friend bool operator==(const IntType&, const IntType&) = default;
};
std::string to_string(const IntType& type);  // "u8", "s32", ...
// The widest integer a caller can ask a circuit for (an input, a constant, resize, or the
// result width of sum, dot, matmul, Cannon's step and multiply_constant): 2^16 bits. Recording
// costs about 160 bytes per bit and element plane, and a product that wide is already 2^32
// gates; wider requests throw InvalidArgument instead of exhausting memory. Operations may
// make wider results themselves (a full product of two max_width-bit integers has twice it).
inline constexpr std::size_t max_width = std::size_t{1} << 16;
// Throws InvalidArgument naming `who` unless 1 <= width <= max_width.
void check_width(std::size_t width, std::string_view who);

// The bits of rows x cols integers of `type`: width * rows * cols. Throws InvalidArgument
// naming `who` when the count does not fit std::size_t (it would wrap).
std::size_t bit_count(const IntType& type, std::size_t rows, std::size_t cols,
                      std::string_view who);

// An array of integers inside a circuit: bit plane j holds bit j of every element (lane).
// Elements are arranged as a rows x cols matrix, row-major (a vector is one row).
class Expr {
 public:
  Expr() = default;
  // Throws InvalidArgument unless there is at least one plane and all have `lanes` lanes.
  Expr(std::vector<Plane> bits, bool is_signed);

  std::size_t width() const { return bits_.size(); }
  std::size_t lanes() const { return rows_ * cols_; }
  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  bool is_signed() const { return is_signed_; }
  IntType type() const { return IntType{width(), is_signed_}; }
  const std::vector<Plane>& bits() const { return bits_; }
  const Plane& bit(std::size_t j) const;
  const Plane& sign_bit() const;  // the highest bit; InvalidArgument for an empty expression

  // Elements [first, first + count) as a vector.
  Expr elements(std::size_t first, std::size_t count) const;
  // Elements in the order `lanes` lists them, as a vector.
  Expr gather(std::span<const std::size_t> lanes) const;
  // The same elements viewed as a rows x cols matrix (rows * cols must equal lanes()).
  Expr reshape(std::size_t rows, std::size_t cols) const;
  // The same bits read as signed or unsigned.
  Expr as_signed(bool is_signed) const;

 private:
  std::vector<Plane> bits_;
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  bool is_signed_ = false;
};

// One gate of a node over `count` consecutive output lanes; inputs are non-negated input or
// node segments (negations and constants are folded into the spec when the gate is recorded).
struct Piece {
  GateSpec spec;
  std::array<Segment, 3> in{};
  std::size_t count = 0;
};

// A recorded gate over `lanes` lanes; pieces fill its lanes in order. level: bootstraps on the
// longest path from the inputs (inputs and constants are level 0).
struct Node {
  std::vector<Piece> pieces;
  std::size_t lanes = 0;
  std::uint32_t level = 0;
};

// The type and shape of an input or output array of a circuit.
struct ArrayInfo {
  IntType type;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t bits() const { return type.width * rows * cols; }
};
using InputInfo = ArrayInfo;

class Circuit {
 public:
  // Each circuit gets an id of its own, which its inputs' and gates' segments carry:
  // recording or compiling an expression of another circuit throws InvalidArgument instead of
  // reading this circuit's inputs and gates of the same numbers.
  Circuit();
  // A copy gets an id of its own too, and accepts the expressions the original had recorded
  // when it was copied (the same inputs and gates): what either records afterwards is
  // refused by the other, so two copies that go separate ways cannot mix their gates.
  Circuit(const Circuit& other);
  Circuit& operator=(const Circuit& other);
  // A move takes the circuit's id and everything it recorded; `other` is left an empty circuit
  // with a new id.
  Circuit(Circuit&& other) noexcept;
  Circuit& operator=(Circuit&& other) noexcept;
  std::uint32_t id() const { return id_; }
  // Whether `segment` (an input's or a gate's) is of this circuit: recorded by it, or by a
  // circuit it was copied from before the copy. Constants are of every circuit. The bit and
  // lane bounds are not checked here.
  bool owns(const Segment& segment) const;

  // An input of `rows * cols` integers of `type`, bound to a buffer of width * lanes bits
  // (bit j of element e at j * lanes + e) when the circuit runs.
  Expr input(IntType type, std::size_t rows, std::size_t cols);
  Expr input(IntType type, std::size_t lanes) { return input(type, 1, lanes); }
  // Plaintext constants (trivial encryptions): one value per lane, or one value for all lanes.
  // Values are taken modulo 2^width; a value that does not fit `type` throws InvalidArgument.
  Expr constant(std::span<const std::uint64_t> values, IntType type);
  Expr constant(std::uint64_t value, IntType type, std::size_t lanes);
  Expr constant_signed(std::int64_t value, IntType type, std::size_t lanes);

  // Records out[e] = spec(a[e], b[e], c[e]) over the lanes of its inputs (arity of them, all
  // with the same lane count) and returns the output plane. Constant, negated and repeated
  // inputs are folded; a gate that folds to a constant or to one of its inputs records nothing,
  // and one whose inputs are all broadcasts or constants is recorded on one lane, broadcast.
  Plane gate(const GateSpec& spec, const Plane& a, const Plane& b = {}, const Plane& c = {});

  Plane and_(const Plane& a, const Plane& b) { return gate(GateSpec::of(GateKind::And), a, b); }
  Plane or_(const Plane& a, const Plane& b) { return gate(GateSpec::of(GateKind::Or), a, b); }
  Plane xor_(const Plane& a, const Plane& b) { return gate(GateSpec::of(GateKind::Xor), a, b); }
  Plane mux(const Plane& s, const Plane& a, const Plane& b) {
    return gate(GateSpec::of(GateKind::Mux), s, a, b);
  }
  Plane majority(const Plane& a, const Plane& b, const Plane& c) {
    return gate(GateSpec::of(GateKind::Majority), a, b, c);
  }
  Plane xor3(const Plane& a, const Plane& b, const Plane& c) {
    return gate(GateSpec::of(GateKind::Xor3), a, b, c);
  }
  // G_hi or (P_hi and G_lo); the caller guarantees G_hi and P_hi are never both 1.
  Plane prefix_generate(const Plane& g_hi, const Plane& p_hi, const Plane& g_lo) {
    return gate(GateSpec::of(GateKind::PrefixGenerate), g_hi, p_hi, g_lo);
  }

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<InputInfo>& inputs() const { return inputs_; }
  // The bootstrapping level of a segment's gate (0 for inputs and constants); InvalidArgument
  // for a segment of another circuit or a gate this circuit does not have.
  std::uint32_t level(const Segment& segment) const;

 private:
  // The move: everything of `other`, its id included; `other` becomes empty under a new id.
  void take(Circuit& other) noexcept;
  // Records the folded gate of one piece (every input one segment); returns its output.
  Segment gate_piece(const GateSpec& spec, std::array<Segment, 3> in, std::size_t arity,
                     std::size_t count, std::vector<Piece>& pieces, std::size_t& node_lanes);
  Plane commit(std::vector<Piece> pieces, std::size_t lanes, const Plane& shape);
  // Shannon expansion for the rare function no single gate computes (a MUX with one negated
  // data input): three sign gates over two levels.
  Segment expand(const std::array<Segment, 3>& vars, std::size_t nvars, std::uint8_t table,
                 std::size_t count);

  // A circuit this one was copied from (directly or through copies), and how many inputs and
  // gates it had then.
  struct Origin {
    std::uint32_t id;
    std::size_t inputs, nodes;
  };

  std::uint32_t id_;
  std::vector<Origin> origins_;
  std::vector<Node> nodes_;
  std::vector<InputInfo> inputs_;
  std::unordered_map<std::string, std::uint32_t> dedup_;  // node key -> node id
};

}  // namespace torusgate::circuits
