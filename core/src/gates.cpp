// Gate specifications as weighted sign gates, and their plaintext semantics.
#include "torusgate/core/gates.hpp"

#include <algorithm>

#include "torusgate/core/error.hpp"

namespace torusgate {
namespace {

GateSpec sign_gate(GateKind kind, int offset, std::array<int, 3> w, int arity) {
  GateSpec g;
  g.kind = kind;
  g.arity = static_cast<std::uint8_t>(arity);
  g.offset_eighths = static_cast<std::int8_t>(offset);
  for (int i = 0; i < 3; ++i) g.weights[i] = static_cast<std::int8_t>(w[i]);
  return g;
}

}  // namespace

std::string_view gate_kind_name(GateKind kind) {
  static constexpr std::array<std::string_view, gate_kind_count> names = {
      "CONSTANT", "COPY",  "NOT",   "AND",  "NAND", "OR",       "NOR",  "XOR",
      "XNOR",     "ANDNY", "ANDYN", "ORNY", "ORYN", "MUX",      "MAJORITY",
      "XOR3",     "PREFIX_GENERATE", "THRESHOLD"};
  const auto i = static_cast<std::size_t>(kind);
  return i < names.size() ? names[i] : std::string_view("UNKNOWN");
}

GateSpec GateSpec::of(GateKind kind) {
  switch (kind) {
    case GateKind::Copy: return GateSpec{GateKind::Copy, 1, 0, {1, 0, 0}, false};
    case GateKind::Not: return GateSpec{GateKind::Not, 1, 0, {-1, 0, 0}, false};
    // TFHE library gates: the offset and weights of its bootsAND, bootsNAND, ...
    case GateKind::And: return sign_gate(kind, -1, {1, 1, 0}, 2);
    case GateKind::Nand: return sign_gate(kind, 1, {-1, -1, 0}, 2);
    case GateKind::Or: return sign_gate(kind, 1, {1, 1, 0}, 2);
    case GateKind::Nor: return sign_gate(kind, -1, {-1, -1, 0}, 2);
    case GateKind::Xor: return sign_gate(kind, 2, {2, 2, 0}, 2);
    case GateKind::Xnor: return sign_gate(kind, -2, {-2, -2, 0}, 2);
    case GateKind::AndNY: return sign_gate(kind, -1, {-1, 1, 0}, 2);
    case GateKind::AndYN: return sign_gate(kind, -1, {1, -1, 0}, 2);
    case GateKind::OrNY: return sign_gate(kind, 1, {-1, 1, 0}, 2);
    case GateKind::OrYN: return sign_gate(kind, 1, {1, -1, 0}, 2);
    case GateKind::Mux: return GateSpec{GateKind::Mux, 3, 0, {0, 0, 0}, false};
    case GateKind::Majority: return sign_gate(kind, 0, {1, 1, 1}, 3);
    case GateKind::Xor3: return sign_gate(kind, 0, {-2, -2, -2}, 3);
    case GateKind::PrefixGenerate: return sign_gate(kind, 1, {2, 1, 1}, 3);
    case GateKind::Constant:
    case GateKind::Threshold: break;
  }
  throw InvalidArgument("GateSpec::of: kind " + std::string(gate_kind_name(kind)) +
                        " has no fixed form; use GateSpec::constant or GateSpec::threshold");
}

GateSpec GateSpec::constant(bool value) {
  GateSpec g;
  g.kind = GateKind::Constant;
  g.arity = 0;
  g.constant_value = value;
  return g;
}

GateSpec GateSpec::threshold(int offset_eighths, std::initializer_list<int> weights) {
  EXPECTS(weights.size() >= 1 && weights.size() <= 3,
          "GateSpec::threshold: " + std::to_string(weights.size()) +
              " weights given but expected 1 to 3");
  EXPECTS(offset_eighths >= -8 && offset_eighths <= 8,
          "GateSpec::threshold: offset_eighths=" + std::to_string(offset_eighths) +
              " but expected -8..8");
  std::array<int, 3> w{};
  int i = 0;
  for (int v : weights) {
    EXPECTS(v != 0 && v >= -8 && v <= 8, "GateSpec::threshold: weight " + std::to_string(i) +
                                             " is " + std::to_string(v) +
                                             " but expected a non-zero value in -8..8");
    w[i++] = v;
  }
  GateSpec g = sign_gate(GateKind::Threshold, offset_eighths, w, i);
  for (int x = 0; x < (1 << g.arity); ++x) {
    const int e = g.phase_eighths(x & 1, (x >> 1) & 1, (x >> 2) & 1);
    EXPECTS(e != 0 && e != 4, "GateSpec::threshold: inputs (" + std::to_string(x & 1) + "," +
                                  std::to_string((x >> 1) & 1) + "," + std::to_string(x >> 2) +
                                  ") put the phase on a decision boundary (" +
                                  std::to_string(e) + "/8); the output would be undefined");
  }
  return g;
}

void GateSpec::validate() const {
  const auto k = static_cast<std::size_t>(kind);
  EXPECTS(k < gate_kind_count,
          "GateSpec::validate: unknown gate kind " + std::to_string(k));
  const std::string name(gate_kind_name(kind));
  switch (kind) {
    case GateKind::Constant:
      EXPECTS(arity == 0, "GateSpec::validate: CONSTANT has arity " + std::to_string(arity) +
                              " but expected 0");
      return;
    case GateKind::Threshold: {
      EXPECTS(arity >= 1 && arity <= 3, "GateSpec::validate: THRESHOLD has arity " +
                                            std::to_string(arity) + " but expected 1 to 3");
      for (int i = 0; i < 3; ++i) {
        EXPECTS((i < arity) == (weights[i] != 0),
                "GateSpec::validate: THRESHOLD weight " + std::to_string(i) + " is " +
                    std::to_string(weights[i]) + " but inputs below the arity need a non-zero "
                    "weight and the others weight 0");
      }
      const GateSpec check = arity == 1   ? threshold(offset_eighths, {weights[0]})
                             : arity == 2 ? threshold(offset_eighths, {weights[0], weights[1]})
                                          : threshold(offset_eighths,
                                                      {weights[0], weights[1], weights[2]});
      (void)check;  // threshold() throws for boundary phases and out-of-range values
      return;
    }
    default:
      EXPECTS(*this == of(kind), "GateSpec::validate: a " + name +
                                     " gate whose arity, offset or weights differ from "
                                     "GateSpec::of(GateKind::" + name + ")");
  }
}

int GateSpec::bootstraps() const {
  switch (kind) {
    case GateKind::Constant:
    case GateKind::Copy:
    case GateKind::Not: return 0;
    case GateKind::Mux: return 2;
    default: return 1;
  }
}

bool GateSpec::is_sign_gate() const { return bootstraps() == 1; }

int GateSpec::phase_eighths(bool a, bool b, bool c) const {
  const bool in[3] = {a, b, c};
  int e = offset_eighths;
  for (int i = 0; i < arity; ++i) e += weights[i] * (in[i] ? 1 : -1);
  e %= 8;
  if (e <= -4) e += 8;
  if (e > 4) e -= 8;
  return e;
}

bool GateSpec::evaluate(bool a, bool b, bool c) const {
  switch (kind) {
    case GateKind::Constant: return constant_value;
    case GateKind::Copy: return a;
    case GateKind::Not: return !a;
    case GateKind::Mux: return a ? b : c;
    default: {
      const int e = phase_eighths(a, b, c);
      return e > 0 && e < 4;
    }
  }
}

double GateSpec::ideal_margin() const {
  if (bootstraps() == 0) return 0;
  if (kind == GateKind::Mux) return GateSpec::of(GateKind::And).ideal_margin();
  int eighths = 4;
  for (int x = 0; x < (1 << arity); ++x) {
    const int e = phase_eighths(x & 1, (x >> 1) & 1, (x >> 2) & 1);
    eighths = std::min(eighths, std::min(e < 0 ? -e : e, 4 - (e < 0 ? -e : e)));
  }
  return eighths / 8.0;
}

int GateSpec::variance_factor() const {
  int f = 0;
  for (int i = 0; i < arity; ++i) f += weights[i] * weights[i];
  return kind == GateKind::Mux ? 2 : f;
}

}  // namespace torusgate
