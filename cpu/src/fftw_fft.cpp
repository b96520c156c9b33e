// FFTW-based negacyclic FFT engine (split-complex guru plan, new-array execute).
#include "torusgate/cpu/fftw_fft.hpp"

#include <fftw3.h>

#include <cstdint>
#include <cstring>
#include <mutex>

#include "torusgate/core/aligned.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate {
namespace {

std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

bool aligned64(const double* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

}  // namespace

FftwFft::FftwFft(std::uint32_t polynomial_size) : NegacyclicFft(polynomial_size) {
  const int M = static_cast<int>(polynomial_size / 2);
  std::lock_guard lock(planner_mutex());
  double* buf = fftw_alloc_real(4 * static_cast<std::size_t>(M));
  if (buf == nullptr) throw SystemError("FftwFft: fftw_alloc_real failed for M=" + std::to_string(M));
  // Out of place: FFTW 3.3.10 split-complex in-place plans with new-array execution crash
  // for M >= 256 (seen here), so the engine never runs in place.
  fftw_iodim dim{M, 1, 1};
  fftw_plan plan = fftw_plan_guru_split_dft(1, &dim, 0, nullptr, buf, buf + M, buf + 2 * M,
                                            buf + 3 * M, FFTW_MEASURE | FFTW_PRESERVE_INPUT);
  fftw_free(buf);
  if (plan == nullptr) {
    throw SystemError("FftwFft: FFTW could not plan a split-complex DFT of M=" +
                      std::to_string(M) + " points");
  }
  plan_ = plan;
}

FftwFft::~FftwFft() {
  std::lock_guard lock(planner_mutex());
  fftw_destroy_plan(static_cast<fftw_plan>(plan_));
}

void FftwFft::execute(const double* ri, const double* ii, double* ro, double* io) const {
  auto* plan = static_cast<fftw_plan>(plan_);
  // FFTW_PRESERVE_INPUT: the input arrays are only read, so casting const away is safe.
  if (aligned64(ri) && aligned64(ii) && aligned64(ro) && aligned64(io)) {
    fftw_execute_split_dft(plan, const_cast<double*>(ri), const_cast<double*>(ii), ro, io);
    return;
  }
  // New-array execution needs the planning alignment: go through aligned copies.
  const std::size_t M = polynomial_size() / 2;
  thread_local AlignedVector<double> tmp;
  if (tmp.size() < 4 * M) tmp.resize(4 * M);
  double* t = tmp.data();
  std::memcpy(t, ri, M * sizeof(double));
  std::memcpy(t + M, ii, M * sizeof(double));
  fftw_execute_split_dft(plan, t, t + M, t + 2 * M, t + 3 * M);
  std::memcpy(ro, t + 2 * M, M * sizeof(double));
  std::memcpy(io, t + 3 * M, M * sizeof(double));
}

void FftwFft::transform_forward(const double* in_re, const double* in_im, double* out_re,
                                double* out_im) const {
  execute(in_re, in_im, out_re, out_im);
}

// FFTW computes the backward transform when real and imaginary parts are swapped.
void FftwFft::transform_inverse(const double* in_re, const double* in_im, double* out_re,
                                double* out_im) const {
  execute(in_im, in_re, out_im, out_re);
}

}  // namespace torusgate
