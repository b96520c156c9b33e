// Backend fixtures shared by the test executables: a backend and the client key that goes
// with it, for the plaintext, sequential and OpenMP backends, with one CpuKeyContext per
// parameter set and engine kept for the whole executable.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/plaintext_backend.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

namespace torusgate::test {

// Every gate of the contract, two custom threshold gates included.
inline std::vector<GateSpec> all_specs() {
  std::vector<GateSpec> s = {GateSpec::constant(false), GateSpec::constant(true)};
  for (GateKind k : {GateKind::Copy, GateKind::Not, GateKind::And, GateKind::Nand, GateKind::Or,
                     GateKind::Nor, GateKind::Xor, GateKind::Xnor, GateKind::AndNY,
                     GateKind::AndYN, GateKind::OrNY, GateKind::OrYN, GateKind::Mux,
                     GateKind::Majority, GateKind::Xor3, GateKind::PrefixGenerate}) {
    s.push_back(GateSpec::of(k));
  }
  s.push_back(GateSpec::threshold(1, {3, -1, 2}));
  s.push_back(GateSpec::threshold(2, {1, 2}));
  return s;
}

// The three inputs of a truth table: bit x of a, b, c is bit 0, 1, 2 of x (x < 8).
struct TruthTableInputs {
  std::vector<std::uint8_t> a, b, c;
};
inline TruthTableInputs truth_table_inputs() {
  TruthTableInputs t{std::vector<std::uint8_t>(8), std::vector<std::uint8_t>(8),
                     std::vector<std::uint8_t>(8)};
  for (int x = 0; x < 8; ++x) {
    t.a[x] = x & 1;
    t.b[x] = (x >> 1) & 1;
    t.c[x] = (x >> 2) & 1;
  }
  return t;
}

// Every gate of all_specs() on the 8-bit spans a, b, c, gate g into out bits 8g..8g+7.
template <class S>
std::vector<GateOp<S>> every_gate_batch(BitSpan<S> a, BitSpan<S> b, BitSpan<S> c,
                                        BitSpan<S> out) {
  const auto specs = all_specs();
  std::vector<GateOp<S>> batch;
  for (std::size_t g = 0; g < specs.size(); ++g) {
    batch.push_back(gate::make<S>(specs[g], a, b, c, out.subspan(8 * g, 8)));
  }
  return batch;
}

// Checks the decrypted outputs of every_gate_batch on the truth-table inputs.
inline void check_every_gate(const std::vector<std::uint8_t>& got, const TruthTableInputs& t) {
  const auto specs = all_specs();
  REQUIRE(got.size() == 8 * specs.size());
  for (std::size_t g = 0; g < specs.size(); ++g) {
    for (int x = 0; x < 8; ++x) {
      INFO("gate " << gate_kind_name(specs[g].kind) << " #" << g << " inputs " << x);
      CHECK(got[8 * g + x] == specs[g].evaluate(t.a[x], t.b[x], t.c[x]));
    }
  }
}

// One CpuKeyContext (default FFT engine, Fourier-domain key) per parameter set and key form.
inline std::shared_ptr<const CpuKeyContext> cpu_context_for(const Parameters& params,
                                                            std::uint32_t unroll = 1) {
  static std::map<std::string, std::shared_ptr<const CpuKeyContext>> cache;
  auto& ctx = cache[params.name + "/" + std::to_string(unroll)];
  if (!ctx) ctx = std::make_shared<const CpuKeyContext>(keys_for(params, unroll).cloud);
  return ctx;
}

struct PlaintextFixture {
  using Backend = PlaintextBackend;
  static constexpr bool encrypted = false;
  explicit PlaintextFixture(const Parameters& = toy_insecure(), CpuOptions = {}) {}
  PlaintextBackend be;
  PlaintextKey key;
};

template <class B>
struct CpuFixture {
  using Backend = B;
  static constexpr bool encrypted = true;
  // The shared default-engine context; another engine gets a context of its own (a backend
  // made from a context uses that context's engine whatever options.fft says).
  // unroll 2: the cloud key with an unrolled bootstrapping key (same secret key).
  explicit CpuFixture(const Parameters& params = toy_insecure(), CpuOptions options = {},
                      std::uint32_t unroll = 1)
      : keys(keys_for(params, unroll)),
        be(options.fft == FftEngineKind::Auto
               ? cpu_context_for(params, unroll)
               : std::make_shared<const CpuKeyContext>(keys.cloud, options.fft),
           options),
        key(keys.secret) {}
  const TestKeys& keys;
  B be;
  const SecretKey& key;
};
using SequentialFixture = CpuFixture<SequentialBackend>;
using OpenMpFixture = CpuFixture<OpenMpBackend>;

}  // namespace torusgate::test
