// Fuzz harness: the TFHE library file entry points on a file holding the fuzz input:
// identify_file, then the load_* function of the kind it names (gate ciphertexts for the set
// whose n the file's size fits first), each rejecting trailing bytes.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fuzz_support.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path& scratch_file() { return torusgate::fuzz::scratch_file("tfhe_lib_file"); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  namespace tl = tfhe_lib;
  {
    std::ofstream out(scratch_file(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) fuzz::finding("tfhe_lib_file: cannot write the scratch file");
  }
  tl::FileKind kind = tl::FileKind::Unknown;
  fuzz::expect_only<>("tfhe_lib_file: identify_file",
                      [&] { kind = tl::identify_file(scratch_file()); });
  fuzz::expect_only<FormatError>("tfhe_lib_file: load_*", [&] {
    switch (kind) {
      case tl::FileKind::Unknown: break;
      case tl::FileKind::ParameterSet: tl::load_parameter_set(scratch_file()); break;
      case tl::FileKind::LweKey: tl::load_lwe_key(scratch_file()); break;
      case tl::FileKind::TgswKey: tl::load_tgsw_key(scratch_file()); break;
      case tl::FileKind::GateCiphertexts:
        for (const Parameters& p : all_parameter_sets()) {
          if (size % tl::ciphertext_bytes(p.lwe_dimension) == 0) {
            tl::load_gate_ciphertexts(scratch_file(), p);
            break;
          }
        }
        break;
      case tl::FileKind::CloudKeySet: tl::load_cloud_keyset(scratch_file()); break;
      case tl::FileKind::SecretKeySet: tl::load_secret_keyset(scratch_file()); break;
    }
  });
  std::error_code ec;  // libFuzzer may exit without running atexit handlers
  fs::remove(scratch_file(), ec);
  return 0;
}
