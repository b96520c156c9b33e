// Gate kinds of the backend contract. Every bootstrapped gate is a weighted sign gate
// out = bootstrap(offset + sum_i w_i * in_i) on bits encoded as +-1/8 (DESIGN.md section 4);
// NOT, COPY and CONSTANT need no bootstrap; MUX is two bootstraps and one key switch.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace torusgate {

enum class GateKind : std::uint8_t {
  Constant,
  Copy,
  Not,
  And,
  Nand,
  Or,
  Nor,
  Xor,
  Xnor,
  AndNY,  // (not a) and b
  AndYN,  // a and (not b)
  OrNY,   // (not a) or b
  OrYN,   // a or (not b)
  Mux,    // a ? b : c
  Majority,        // MAJ(a, b, c) = bootstrap(a + b + c)
  Xor3,            // a xor b xor c = bootstrap(-2(a + b + c))
  PrefixGenerate,  // G_hi or (P_hi and G_lo) = bootstrap(1/8 + 2 G_hi + P_hi + G_lo)
  Threshold,       // any other weighted sign gate
};
inline constexpr std::size_t gate_kind_count = 18;

std::string_view gate_kind_name(GateKind kind);

// A gate: its kind and, for sign gates, the offset (in units of 1/8 of the torus) and the
// integer weights of its inputs. Input i carries phase +1/8 for bit 1 and -1/8 for bit 0, so
// the phase before bootstrapping is (offset + sum_i w_i (2 b_i - 1)) / 8.
struct GateSpec {
  GateKind kind = GateKind::Copy;
  std::uint8_t arity = 1;                  // number of inputs (0 to 3)
  std::int8_t offset_eighths = 0;          // sign gates only
  std::array<std::int8_t, 3> weights{1, 0, 0};  // sign gates (and COPY/NOT: +-1); unused 0
  bool constant_value = false;             // Constant only

  // The fixed gates of the contract (every kind but Threshold and Constant).
  static GateSpec of(GateKind kind);
  static GateSpec constant(bool value);
  // A general weighted sign gate. Throws InvalidArgument if the arity is not 1..3, if a
  // weight is 0 or larger than 8 in magnitude, or if some input combination puts the phase
  // exactly on a decision boundary (0 or 1/2), where the output would be undefined.
  static GateSpec threshold(int offset_eighths, std::initializer_list<int> weights);

  // Throws InvalidArgument unless the spec is one that of/constant/threshold can produce:
  // a known kind; fixed kinds exactly as GateSpec::of makes them; threshold gates with 1 to 3
  // non-zero weights, zero weights on unused inputs and no input on a decision boundary.
  void validate() const;

  // 0, 1 or 2.
  int bootstraps() const;
  bool is_sign_gate() const;
  // Phase before bootstrapping in eighths, reduced to (-4, 4], for the given input bits.
  int phase_eighths(bool a, bool b, bool c) const;
  // The output bit that the encrypted evaluation produces (the plaintext oracle).
  bool evaluate(bool a, bool b = false, bool c = false) const;
  // Noise variance growth of the linear combination: sum of w_i^2 (1 for copy/not).
  int variance_factor() const;
  // Noiseless distance, as a torus fraction, from the phase the (first) bootstrap decides
  // on to the nearest decision boundary (0 or 1/2), over every input: 1/8 for AND-like gates
  // and MUX, 1/4 for XOR, XNOR and XOR3. 0 for gates without a bootstrap.
  double ideal_margin() const;

  friend bool operator==(const GateSpec&, const GateSpec&) = default;
};

}  // namespace torusgate
