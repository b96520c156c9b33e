// FFTW engine for the half-length negacyclic FFT: one out-of-place split-complex plan of
// M = N/2 points made once (planning is serialised by a global lock), executed on new arrays
// (thread-safe); the inverse swaps real and imaginary parts, as FFTW documents.
#pragma once

#include <memory>

#include "torusgate/core/fft.hpp"

namespace torusgate {

class FftwFft final : public NegacyclicFft {
 public:
  // Throws SystemError if FFTW cannot make the plan.
  explicit FftwFft(std::uint32_t polynomial_size);
  ~FftwFft() override;
  std::string name() const override { return "fftw"; }

 protected:
  void transform_forward(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;
  void transform_inverse(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;

 private:
  void execute(const double* ri, const double* ii, double* ro, double* io) const;
  void* plan_ = nullptr;  // fftw_plan, kept opaque so this header does not need fftw3.h
};

}  // namespace torusgate
