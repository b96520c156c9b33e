// A program built against an installed torusgate (tests/install/run_install.sh): encrypted
// 8-bit signed add, multiply and compare on the sequential and OpenMP backends, chosen by name
// (with_backend), with the insecure toy parameters, checked against integer arithmetic; the
// GPU library's device query; a round trip through the fixed-point FFT model; the version.
// Exit 0 when everything is right.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#include "torusgate/backends/backends.hpp"
#include "torusgate/circuits/circuits.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/version.hpp"
#include "torusgate/fpga_fft/fixed_fft.hpp"
#include "torusgate/gpu/device.hpp"

using namespace torusgate;
using namespace torusgate::circuits;

namespace {

// Wraps v to a signed 8-bit value, as the circuits' wrapping arithmetic does.
std::int64_t wrap8(std::int64_t v) {
  return static_cast<std::int8_t>(static_cast<std::uint8_t>(v));
}

// Written once over the backend contract: with_backend gives a CpuBackend& for both CPU kinds.
template <class Backend>
int check_circuits(Backend& be, const SecretKey& secret, Csprng& rng) {
  const std::vector<std::int64_t> xs = {3, -7, 12, -1, 100}, ys = {5, 6, -4, -1, 90};
  using Array = IntArray<Backend>;
  const Array x = Array::encrypt_signed(be, secret, xs, IntType{8, true}, rng);
  const Array y = Array::encrypt_signed(be, secret, ys, IntType{8, true}, rng);
  Program<Backend> prog(be);
  Circuit& c = prog.circuit();
  const Expr ex = prog.input(x), ey = prog.input(y);
  auto out = prog.run({add(c, ex, ey), multiply(c, ex, ey), less(c, ex, ey)});
  const std::vector<std::int64_t> sums = out[0].decrypt_signed(be, secret);
  const std::vector<std::int64_t> products = out[1].decrypt_signed(be, secret);
  const std::vector<std::uint64_t> less_than = out[2].decrypt(be, secret);
  int wrong = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    wrong += sums[i] != wrap8(xs[i] + ys[i]);
    wrong += products[i] != wrap8(xs[i] * ys[i]);
    wrong += less_than[i] != static_cast<std::uint64_t>(xs[i] < ys[i]);
  }
  std::printf("%s: add, multiply, less on %zu elements: %d wrong\n", be.name().c_str(), xs.size(),
              wrong);
  return wrong;
}

int check_fpga_fft() {
  fpga_fft::FixedFftConfig config;
  config.size = 16;
  const fpga_fft::FixedFft fft(config);
  std::vector<fpga_fft::CWord> in(16), spectrum(16), back(16);
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = {static_cast<std::int64_t>(i + 1) << 20, -static_cast<std::int64_t>(i) << 20};
  }
  fft.forward(in, spectrum);
  fft.inverse(spectrum, back);
  // The inverse scales by 1/r per stage, 1/M in all: the input again, within the rounding of
  // 4 radix-2 stages each way.
  int wrong = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    wrong += std::llabs(back[i].re - in[i].re) > 16 || std::llabs(back[i].im - in[i].im) > 16;
  }
  std::printf("fpga_fft: %s forward and inverse: %d wrong\n", config.describe().c_str(), wrong);
  return wrong;
}

}  // namespace

int main() {
  const Parameters params = toy_insecure();  // INSECURE: a test's parameters, fast
  Csprng rng;
  const SecretKey secret(params, rng);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng));
  int wrong = 0;
  for (const char* name : {"sequential", "openmp"}) {
    wrong += with_backend(backend_kind(name), cloud, {},
                          [&](auto& be) { return check_circuits(be, secret, rng); });
  }
  wrong += check_fpga_fft();
  std::printf("gpu: built with CUDA %s, %zu usable device(s)\n",
              gpu::built_with_cuda() ? "yes" : "no", gpu::devices().size());
  // The installed header and the library linked are the same version.
  const bool same_version = std::string_view(version()) == TORUSGATE_VERSION_STRING;
  std::printf("version: header %s (%d), library %s\n", TORUSGATE_VERSION_STRING,
              TORUSGATE_VERSION_NUMBER, version());
  wrong += !same_version;
  std::printf("%s\n", wrong == 0 ? "all correct" : "WRONG");
  return wrong == 0 ? 0 : 1;
}
