// Backend fixtures shared by the test executables: a backend and the client key that goes
// with it, for the plaintext, sequential and OpenMP backends, with one CpuKeyContext per
// parameter set and engine kept for the whole executable.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "test_support.hpp"
#include "torusgate/core/plaintext_backend.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

namespace torusgate::test {

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
