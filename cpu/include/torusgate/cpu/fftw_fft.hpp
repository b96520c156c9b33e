// FFTW engine for the half-length negacyclic FFT: out-of-place split-complex plans of
// M = N/2 points made once (planning is serialised by a global lock), executed on new arrays
// (thread-safe); the inverse swaps real and imaginary parts, as FFTW documents, with a plan
// of its own (new-array execution requires the planning distances ii - ri and io - ro).
#pragma once

#include <cstddef>
#include <memory>

#include "torusgate/core/fft.hpp"

namespace torusgate {

class FftwFft final : public ComplexNegacyclicFft {
 public:
  // Throws SystemError if FFTW cannot make the plan.
  explicit FftwFft(std::uint32_t polynomial_size);
  ~FftwFft() override;
  std::string name() const override { return "fftw"; }
  // Once before each transform (FFTW's own loops cannot drain it).
  std::size_t prefetch_drains() const override { return 1; }

 protected:
  void transform_forward(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;
  void transform_inverse(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;

 private:
  // Runs `plan` (made with ii - ri = io - ro = im_offset) on new arrays.
  void execute(void* plan, std::ptrdiff_t im_offset, const double* ri, const double* ii,
               double* ro, double* io) const;
  void* forward_plan_ = nullptr;   // fftw_plan, kept opaque so this header needs no fftw3.h
  void* backward_plan_ = nullptr;  // the same transform planned on swapped parts
};

}  // namespace torusgate
