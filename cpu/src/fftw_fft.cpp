// FFTW-based negacyclic FFT engine (split-complex guru plan, new-array execute). FFTW's
// transforms cannot be entered, so the prefetch queue is drained once before each.
#include "torusgate/cpu/fftw_fft.hpp"

#include <fftw3.h>

#include <cstdint>
#include <cstring>
#include <mutex>

#include "torusgate/core/aligned.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/prefetch.hpp"

namespace torusgate {
namespace {

std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

bool aligned64(const double* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

}  // namespace

FftwFft::FftwFft(std::uint32_t polynomial_size) : ComplexNegacyclicFft(polynomial_size) {
  const int M = static_cast<int>(polynomial_size / 2);
  std::lock_guard lock(planner_mutex());
  double* buf = fftw_alloc_real(4 * static_cast<std::size_t>(M));
  if (buf == nullptr) throw SystemError("FftwFft: fftw_alloc_real failed for M=" + std::to_string(M));
  // FFTW's new-array execution needs the planning alignment and the same distances ii - ri
  // and io - ro as at planning. The backward transform is the forward one on swapped real and
  // imaginary parts, whose distances have the other sign: so it gets a plan of its own.
  // Out of place, with the input preserved.
  fftw_iodim dim{M, 1, 1};
  const unsigned flags = FFTW_MEASURE | FFTW_PRESERVE_INPUT;
  fftw_plan forward =
      fftw_plan_guru_split_dft(1, &dim, 0, nullptr, buf, buf + M, buf + 2 * M, buf + 3 * M, flags);
  fftw_plan backward =
      fftw_plan_guru_split_dft(1, &dim, 0, nullptr, buf + M, buf, buf + 3 * M, buf + 2 * M, flags);
  fftw_free(buf);
  if (forward == nullptr || backward == nullptr) {
    if (forward != nullptr) fftw_destroy_plan(forward);
    if (backward != nullptr) fftw_destroy_plan(backward);
    throw SystemError("FftwFft: FFTW could not plan a split-complex DFT of M=" +
                      std::to_string(M) + " points");
  }
  forward_plan_ = forward;
  backward_plan_ = backward;
}

FftwFft::~FftwFft() {
  std::lock_guard lock(planner_mutex());
  fftw_destroy_plan(static_cast<fftw_plan>(forward_plan_));
  fftw_destroy_plan(static_cast<fftw_plan>(backward_plan_));
}

void FftwFft::execute(void* plan_handle, std::ptrdiff_t im_offset, const double* ri,
                      const double* ii, double* ro, double* io) const {
  auto* plan = static_cast<fftw_plan>(plan_handle);
  const std::size_t M = polynomial_size() / 2;
  // FFTW_PRESERVE_INPUT: the input arrays are only read, so casting const away is safe.
  if (aligned64(ri) && aligned64(ii) && aligned64(ro) && aligned64(io) &&
      ii - ri == im_offset && io - ro == im_offset) {
    fftw_execute_split_dft(plan, const_cast<double*>(ri), const_cast<double*>(ii), ro, io);
    return;
  }
  // Otherwise through aligned copies laid out as at planning.
  thread_local AlignedVector<double> tmp;
  if (tmp.size() < 4 * M) tmp.resize(4 * M);
  double* t = tmp.data();
  double* tri = im_offset > 0 ? t : t + M;
  double* tro = im_offset > 0 ? t + 2 * M : t + 3 * M;
  std::memcpy(tri, ri, M * sizeof(double));
  std::memcpy(tri + im_offset, ii, M * sizeof(double));
  fftw_execute_split_dft(plan, tri, tri + im_offset, tro, tro + im_offset);
  std::memcpy(ro, tro, M * sizeof(double));
  std::memcpy(io, tro + im_offset, M * sizeof(double));
}

void FftwFft::transform_forward(const double* in_re, const double* in_im, double* out_re,
                                double* out_im) const {
  const auto M = static_cast<std::ptrdiff_t>(polynomial_size() / 2);
  this_thread_prefetch.drain();
  execute(forward_plan_, M, in_re, in_im, out_re, out_im);
}

// The backward transform: the forward one with real and imaginary parts swapped.
void FftwFft::transform_inverse(const double* in_re, const double* in_im, double* out_re,
                                double* out_im) const {
  const auto M = static_cast<std::ptrdiff_t>(polynomial_size() / 2);
  this_thread_prefetch.drain();
  execute(backward_plan_, -M, in_im, in_re, out_im, out_re);
}

}  // namespace torusgate
