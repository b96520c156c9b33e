// Encrypted integer demo: the client encrypts two vectors and a matrix of signed integers;
// the server, holding only the cloud key, computes sums, products, comparisons, a dot product
// and a matrix product in ONE scheduled run (every level of every operation in one batch);
// the client decrypts and checks each result against plain integer arithmetic.
//   circuit_demo [--params NAME] [--width BITS] [--backend best|gpu|sequential|openmp]
//                [--threads T] [GPU options]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "printable.hpp"
#include "torusgate/circuits/circuits.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;
using namespace torusgate::circuits;

namespace {

void usage() {
  std::cout << "usage: circuit_demo [--params NAME] [--width BITS] [--backend NAME] [--threads T]\n"
               "                    [GPU options]\n"
               "  --params NAME         tfhe_lib_128 (default), tfhe_lib_80, default_128,\n"
               "                        toy_INSECURE, toy_k2_INSECURE\n"
               "  --width BITS          integer width, 5..16 (default 8; the demo's values,\n"
               "                        3, -7, 12, -1 and 5, 6, -4, -1, need 5 bits)\n"
            << apps::server_options_help(24)
            << "  --help                this text\n";
}

// value modulo 2^width, read as a signed width-bit integer.
std::int64_t wrap(std::int64_t value, std::size_t width) {
  const std::uint64_t mask = (std::uint64_t{1} << width) - 1;
  std::uint64_t u = static_cast<std::uint64_t>(value) & mask;
  if ((u >> (width - 1)) & 1) u |= ~mask;
  return static_cast<std::int64_t>(u);
}

int check(const char* what, const std::vector<std::int64_t>& got,
          const std::vector<std::int64_t>& want) {
  std::printf("  %-26s", what);
  for (std::int64_t v : got) std::printf(" %6lld", static_cast<long long>(v));
  const bool ok = got == want;
  std::printf("   %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}

// Client: encrypt; server (the backend, holding only the cloud key): every operation in one
// scheduled run; client: decrypt and check against plain integer arithmetic.
template <Backend Server>
int demo(Server& be, const SecretKey& secret, Csprng& rng, std::size_t width) {
  const IntType type{width, true};
  const std::vector<std::int64_t> xs = {3, -7, 12, -1}, ys = {5, 6, -4, -1};
  const std::vector<std::int64_t> ms = {1, -2, 3, 4};  // a 2 x 2 matrix, row-major
  using Array = IntArray<Server>;
  const Array x = Array::encrypt_signed(be, secret, xs, type, rng);
  const Array y = Array::encrypt_signed(be, secret, ys, type, rng);
  const Array m = Array::encrypt_signed(be, secret, ms, type, rng, 2);

  // Server: record every operation, then run them together.
  const auto t0 = std::chrono::steady_clock::now();
  Program<Server> prog(be);
  Circuit& c = prog.circuit();
  const Expr ex = prog.input(x), ey = prog.input(y), em = prog.input(m);
  const auto out = prog.run({
      add(c, ex, ey),
      multiply(c, ex, ey),
      less(c, ex, ey).as_signed(false),
      max(c, ex, ey),
      dot(c, ex, ey, 2 * width),
      matmul(c, em, em),
  });
  const double seconds = apps::seconds_since(t0);
  const ScheduleCost& cost = prog.last_schedule().cost;
  std::printf("server       %llu bootstraps in %zu batches (depth %u) in %.2f s\n",
              static_cast<unsigned long long>(cost.bootstraps), cost.batches, cost.depth, seconds);

  // Client: decrypt and compare with plain arithmetic modulo 2^width.
  std::printf("x = {3, -7, 12, -1}, y = {5, 6, -4, -1}, M = [[1, -2], [3, 4]], %zu-bit signed\n",
              width);
  std::vector<std::int64_t> sum, product, lt, mx;
  for (std::size_t e = 0; e < xs.size(); ++e) {
    sum.push_back(wrap(xs[e] + ys[e], width));
    product.push_back(wrap(xs[e] * ys[e], width));
    lt.push_back(xs[e] < ys[e] ? 1 : 0);
    mx.push_back(std::max(xs[e], ys[e]));
  }
  std::int64_t dot_value = 0;
  for (std::size_t e = 0; e < xs.size(); ++e) dot_value += xs[e] * ys[e];
  const std::vector<std::int64_t> square = {wrap(1 * 1 + -2 * 3, width), wrap(1 * -2 + -2 * 4, width),
                                            wrap(3 * 1 + 4 * 3, width), wrap(3 * -2 + 4 * 4, width)};
  int wrong = 0;
  wrong += check("x + y", out[0].decrypt_signed(be, secret), sum);
  wrong += check("x * y (mod 2^width)", out[1].decrypt_signed(be, secret), product);
  wrong += check("x < y", out[2].decrypt_signed(be, secret), lt);
  wrong += check("max(x, y)", out[3].decrypt_signed(be, secret), mx);
  wrong += check("dot(x, y), 2*width bits", out[4].decrypt_signed(be, secret),
                 {wrap(dot_value, 2 * width)});
  wrong += check("M * M", out[5].decrypt_signed(be, secret), square);
  std::printf(wrong ? "%d results WRONG\n" : "all results correct\n", wrong);
  return wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string params_name = "tfhe_lib_128", backend_name = "best";
  std::size_t width = 8;
  apps::ServerOptions server;
  for (apps::CommandLine cl(argc, argv); cl.next();) {
    const std::string& arg = cl.arg();
    if (arg == "--params") params_name = cl.value();
    else if (apps::parse_server_option(cl, backend_name, server)) continue;
    else if (arg == "--width") width = apps::parse_count("--width", cl.value(), 5, 16);
    else if (cl.is_help()) { usage(); return 0; }
    else cl.reject();
  }
  const Parameters params = apps::parameters_named("--params", params_name);
  backend_name = apps::resolve_server_backend(backend_name, server);
  // Before the keys are made: the GPU options as the backend will check them.
  if (backend_name == "gpu") apps::check_gpu_options(server.gpu, params);

  // Client: keys and encrypted inputs.
  auto t0 = std::chrono::steady_clock::now();
  Csprng rng;
  const SecretKey secret(params, rng);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng));
  std::printf("parameters   %s%s\n", params.name.c_str(),
              params.insecure ? "  -- INSECURE, for tests only" : "");
  std::printf("key gen      %.2f s\n", apps::seconds_since(t0));

  return apps::with_server_backend(backend_name, cloud, server, [&](auto& be) {
    std::printf("backend      %s\n", apps::backend_description(be).c_str());
    return demo(be, secret, rng, width);
  });
} catch (const std::exception& e) {
  std::cerr << "circuit_demo: " << torusgate::apps::terminal_text(e.what()) << "\n";
  return 2;
}
