// The consumer's shared library (plugin.hpp): torusgate::core, torusgate::cpu and
// torusgate::fpga_fft used from inside a shared object, with the insecure toy parameters.
#include "plugin.hpp"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "torusgate/core/keys.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/fpga_fft/fixed_fft.hpp"

using namespace torusgate;

namespace {

template <class Backend>
int wrong_nands(Backend& be, const SecretKey& secret, Csprng& rng) {
  const std::vector<std::uint8_t> a = {0, 1, 0, 1}, b = {0, 0, 1, 1};
  auto A = encrypt(be, secret, a, rng);
  auto B = encrypt(be, secret, b, rng);
  auto out = be.allocate(a.size());
  be.evaluate({gate::nand(A.bits(), B.bits(), out.bits())});
  const std::vector<std::uint8_t> r = decrypt(be, secret, out.bits());
  int wrong = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    wrong += r[i] != !(a[i] && b[i]);
  }
  return wrong;
}

}  // namespace

int plugin_wrong_results() {
  const Parameters params = toy_insecure();  // INSECURE: a test's parameters, fast
  Csprng rng;
  const SecretKey secret(params, rng);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng));
  int wrong = 0;
  for (FftEngineKind engine : {FftEngineKind::Fftw, FftEngineKind::Portable}) {
    SequentialBackend sequential(cloud, CpuOptions{engine});
    OpenMpBackend openmp(cloud, CpuOptions{engine});
    wrong += wrong_nands(sequential, secret, rng) + wrong_nands(openmp, secret, rng);
  }
  // The fixed-point FFT: forward then inverse (which scales by 1/M) gives the input again,
  // within the rounding of 4 radix-2 stages each way.
  fpga_fft::FixedFftConfig config;
  config.size = 16;
  const fpga_fft::FixedFft fft(config);
  std::vector<fpga_fft::CWord> in(16), spectrum(16), back(16);
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = {static_cast<std::int64_t>(i + 3) << 20, static_cast<std::int64_t>(i) << 19};
  }
  fft.forward(in, spectrum);
  fft.inverse(spectrum, back);
  for (std::size_t i = 0; i < in.size(); ++i) {
    wrong += std::llabs(back[i].re - in[i].re) > 16 || std::llabs(back[i].im - in[i].im) > 16;
  }
  return wrong;
}
