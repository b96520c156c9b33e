// Gate demo: the client makes keys and encrypts a few bits; the server, holding only the
// cloud key, evaluates every gate kind in one batch; the client decrypts and checks.
//   gate_demo [--params NAME] [--backend best|gpu|sequential|openmp] [--threads T] [GPU options]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "printable.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;

namespace {

void usage() {
  std::cout << "usage: gate_demo [--params NAME] [--backend NAME] [--threads T] [GPU options]\n"
               "  --params NAME         tfhe_lib_128 (default), tfhe_lib_80, default_128,\n"
               "                        toy_INSECURE, toy_k2_INSECURE\n"
            << apps::server_options_help(24)
            << "  --help                this text\n";
}

// Server (the backend, holding only the cloud key): every gate kind in one batch on every
// input combination; client: decrypt and compare with the plaintext truth.
template <Backend Server>
int demo(Server& be, const SecretKey& secret, Csprng& rng) {
  // Every input combination (a, b, c) for 3-input gates: 8 lanes.
  std::vector<std::uint8_t> a(8), b(8), c(8);
  for (int x = 0; x < 8; ++x) {
    a[x] = x & 1;
    b[x] = (x >> 1) & 1;
    c[x] = (x >> 2) & 1;
  }

  auto A = be.upload(encrypt_bits(secret, a, rng));
  auto B = be.upload(encrypt_bits(secret, b, rng));
  auto C = be.upload(encrypt_bits(secret, c, rng));
  const std::vector<GateKind> kinds = {
      GateKind::And,  GateKind::Nand,  GateKind::Or,   GateKind::Nor,  GateKind::Xor,
      GateKind::Xnor, GateKind::AndNY, GateKind::AndYN, GateKind::OrNY, GateKind::OrYN,
      GateKind::Not,  GateKind::Copy,  GateKind::Mux,  GateKind::Majority, GateKind::Xor3,
      GateKind::PrefixGenerate};
  auto out = be.allocate(8 * (kinds.size() + 1));
  std::vector<GateOp<typename Server::Storage>> batch;
  for (std::size_t g = 0; g < kinds.size(); ++g) {
    batch.push_back(gate::make(GateSpec::of(kinds[g]), A.bits(), B.bits(), C.bits(),
                               out.bits(8 * g, 8)));
  }
  batch.push_back(gate::constant(true, out.bits(8 * kinds.size(), 8)));
  const auto t0 = std::chrono::steady_clock::now();
  be.evaluate(batch);
  const double seconds = apps::seconds_since(t0);

  // Client: decrypt and compare with the plaintext truth.
  const auto bits = decrypt_bits(secret, be.download(out.bits()));
  std::printf("\n%-16s  a: 01010101  b: 00110011  c: 00001111\n", "gate");
  int errors = 0;
  for (std::size_t g = 0; g <= kinds.size(); ++g) {
    const GateSpec spec = g < kinds.size() ? GateSpec::of(kinds[g]) : GateSpec::constant(true);
    std::string got, want;
    for (int x = 0; x < 8; ++x) {
      got += static_cast<char>('0' + bits[8 * g + x]);
      want += spec.evaluate(a[x], b[x], c[x]) ? '1' : '0';
    }
    errors += got != want;
    std::printf("%-16s  %s  %s\n", std::string(gate_kind_name(spec.kind)).c_str(), got.c_str(),
                got == want ? "ok" : ("WRONG, expected " + want).c_str());
  }
  const auto& st = be.stats();
  std::printf("\n%llu gates, %llu bootstraps in one batch: %.3f s (%.2f ms per bootstrap)\n",
              static_cast<unsigned long long>(st.gates),
              static_cast<unsigned long long>(st.bootstraps), seconds,
              1e3 * seconds / static_cast<double>(st.bootstraps));
  std::printf("(PREFIX_GENERATE: lanes with a = b = 1 lie outside its domain -- G_hi and P_hi\n"
              " are never both 1 in an adder -- and show what the sign gate computes there)\n");
  std::printf("%s\n", errors == 0 ? "all gates correct" : "SOME GATES WRONG");
  return errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string params_name = "tfhe_lib_128", backend_name = "best";
  apps::ServerOptions server;
  for (apps::CommandLine cl(argc, argv); cl.next();) {
    const std::string& arg = cl.arg();
    if (arg == "--params") params_name = cl.value();
    else if (apps::parse_server_option(cl, backend_name, server)) continue;
    else if (cl.is_help()) { usage(); return 0; }
    else cl.reject();
  }
  const Parameters params = apps::parameters_named("--params", params_name);
  backend_name = apps::resolve_server_backend(backend_name, server);
  // Before the keys are made: the GPU options as the backend will check them.
  if (backend_name == "gpu") apps::check_gpu_options(server.gpu, params);

  // Client: keys and inputs.
  auto t0 = std::chrono::steady_clock::now();
  Csprng rng;
  const SecretKey secret(params, rng);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng));
  std::printf("parameters   %s (n=%u, k=%u, N=%u)%s\n", params.name.c_str(), params.lwe_dimension,
              params.glwe_dimension, params.polynomial_size,
              params.insecure ? "  -- INSECURE, for tests only" : "");
  std::printf("key gen      %.2f s, cloud key %.1f MB\n", apps::seconds_since(t0),
              cloud->memory_bytes() / 1e6);

  // Server: only the cloud key.
  t0 = std::chrono::steady_clock::now();
  return apps::with_server_backend(backend_name, cloud, server, [&](auto& be) {
    std::printf("backend      %s (server key ready in %.2f s)\n",
                apps::backend_description(be).c_str(), apps::seconds_since(t0));
    return demo(be, secret, rng);
  });
} catch (const std::exception& e) {
  std::cerr << "gate_demo: " << torusgate::apps::terminal_text(e.what()) << "\n";
  return 2;
}
