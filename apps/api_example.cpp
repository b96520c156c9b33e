// The API example of README.md, compiled so that it stays true: the client makes keys and
// encrypts, the server evaluates one mixed batch with only the cloud key, the client decrypts.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "torusgate/core/keys.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;

int main(int argc, char**) {
  if (argc > 1) {
    std::fprintf(stderr, "api_example takes no arguments: it is README.md's API example\n");
    return 2;
  }
  // Client: parameters, keys, inputs. The secret key never leaves the client.
  const Parameters params = tfhe_lib_128();
  Csprng rng;  // keyed from the operating system's CSPRNG
  const SecretKey secret(params, rng);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng));
  const std::vector<std::uint8_t> a = {0, 1, 0, 1}, b = {0, 0, 1, 1}, c = {1, 1, 1, 0};

  // Server: holds only the cloud key (its Fourier-domain form is made once, here).
  OpenMpBackend be(cloud);
  auto A = encrypt(be, secret, a, rng);  // bit-coalesced: 4 LWE samples in one buffer
  auto B = encrypt(be, secret, b, rng);
  auto C = encrypt(be, secret, c, rng);
  auto out = be.allocate(12);
  // One batch, three gate kinds, 12 independent bootstraps.
  be.evaluate({gate::nand(A.bits(), B.bits(), out.bits(0, 4)),
               gate::majority(A.bits(), B.bits(), C.bits(), out.bits(4, 4)),
               gate::xor3(A.bits(), B.bits(), C.bits(), out.bits(8, 4))});

  // Client: decrypt.
  const std::vector<std::uint8_t> r = decrypt(be, secret, out.bits());
  bool ok = true;
  for (int i = 0; i < 4; ++i) {
    ok &= r[i] == !(a[i] && b[i]);
    ok &= r[4 + i] == (a[i] + b[i] + c[i] >= 2);
    ok &= r[8 + i] == (a[i] ^ b[i] ^ c[i]);
  }
  std::printf("NAND %d%d%d%d  MAJ %d%d%d%d  XOR3 %d%d%d%d  %s\n", r[0], r[1], r[2], r[3], r[4],
              r[5], r[6], r[7], r[8], r[9], r[10], r[11], ok ? "correct" : "WRONG");
  return ok ? 0 : 1;
}
