// Code that must not compile, built by ctest cases (tests/CMakeLists.txt, with_backend_misuse_*)
// that expect with_backend's own one-line reason: MISUSE 1, a function that takes CpuBackend&
// (it is also called with a CudaBackend&); 2, one that returns a ciphertext array (another type
// on each backend); 3, one that returns a reference into the backend; 4, one that takes auto&
// but uses a member only CpuBackend has (the compiler's own error at the member, then the
// reason).
#include <type_traits>

#include "torusgate/backends/backends.hpp"
#include "torusgate/circuits/circuits.hpp"

using namespace torusgate;

void misuse(std::shared_ptr<const CloudKey> cloud, const SecretKey& secret, Csprng& rng) {
#if MISUSE == 1
  with_backend(BackendKind::openmp, cloud, [](CpuBackend& be) { return be.threads(); });
#elif MISUSE == 2
  with_backend(BackendKind::openmp, cloud, [&](auto& be) {
    using Array = circuits::IntArray<std::decay_t<decltype(be)>>;
    return Array::encrypt(be, secret, std::vector<std::uint64_t>{1, 2},
                          circuits::IntType{8, false}, rng);
  });
#elif MISUSE == 3
  with_backend(BackendKind::openmp, cloud, [](auto& be) -> const BackendStats& {
    return be.stats();
  });
#elif MISUSE == 4
  with_backend(BackendKind::openmp, cloud, [](auto& be) { return be.threads(); });
#endif
  (void)cloud, (void)secret, (void)rng;
}
