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

// One CpuKeyContext (default FFT engine, Fourier-domain key) per parameter set.
inline std::shared_ptr<const CpuKeyContext> cpu_context_for(const Parameters& params) {
  static std::map<std::string, std::shared_ptr<const CpuKeyContext>> cache;
  auto& ctx = cache[params.name];
  if (!ctx) ctx = std::make_shared<const CpuKeyContext>(keys_for(params).cloud);
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
  explicit CpuFixture(const Parameters& params = toy_insecure(), CpuOptions options = {})
      : keys(keys_for(params)),
        be(options.fft == FftEngineKind::Auto
               ? cpu_context_for(params)
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
