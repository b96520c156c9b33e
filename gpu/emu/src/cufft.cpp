// The CUDA emulator's cuFFT (gpu/emu/include/cufft.h): batched rank-1 Z2Z plans of a
// power-of-two length, each transform of the batch run by FFTW in double precision (an
// error of the order of cuFFT's) on the CPU.
#include <cufft.h>
#include <fftw3.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "emulator.hpp"

namespace cuda_emu {
namespace {

struct Plan {
  int device = 0;
  bool made = false;
  bool auto_allocate = true;
  int n = 0;
  int batch = 0;
  std::size_t work_bytes = 0;
  void* work_area = nullptr;
  bool owns_work_area = false;
  cudaStream_t stream = nullptr;
};

std::mutex plans_mutex;
std::map<cufftHandle, std::shared_ptr<Plan>> plans;
cufftHandle next_handle = 1;

std::shared_ptr<Plan> find_plan(cufftHandle h) {
  std::lock_guard lock(plans_mutex);
  const auto it = plans.find(h);
  return it == plans.end() ? nullptr : it->second;
}

// An in-place FFTW plan of one length-n transform (sign -1 forward, +1 inverse,
// unnormalised: cuFFT's definition), made once per length and sign; FFTW's planner is not
// thread-safe, its new-array execution is.
fftw_plan plan_for(int n, int sign) {
  static std::mutex mutex;
  static auto* cache = new std::map<std::pair<int, int>, fftw_plan>;  // kept for the process
  std::lock_guard lock(mutex);
  fftw_plan& plan = (*cache)[{n, sign}];
  if (plan == nullptr) {
    std::vector<fftw_complex> scratch(static_cast<std::size_t>(n));
    plan = fftw_plan_dft_1d(n, scratch.data(), scratch.data(), sign,
                            FFTW_ESTIMATE | FFTW_UNALIGNED);
  }
  return plan;
}

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace
}  // namespace cuda_emu

using namespace cuda_emu;

cufftResult cufftCreate(cufftHandle* plan) {
  if (plan == nullptr) return CUFFT_INVALID_VALUE;
  std::lock_guard lock(plans_mutex);
  const cufftHandle h = next_handle++;
  plans[h] = std::make_shared<Plan>();
  plans[h]->device = current_device();
  *plan = h;
  return CUFFT_SUCCESS;
}

cufftResult cufftDestroy(cufftHandle plan) {
  std::shared_ptr<Plan> p;
  {
    std::lock_guard lock(plans_mutex);
    const auto it = plans.find(plan);
    if (it == plans.end()) return CUFFT_INVALID_PLAN;
    p = it->second;
    plans.erase(it);
  }
  if (p->owns_work_area) release(p->work_area);
  return CUFFT_SUCCESS;
}

cufftResult cufftSetAutoAllocation(cufftHandle plan, int auto_allocate) {
  const auto p = find_plan(plan);
  if (p == nullptr) return CUFFT_INVALID_PLAN;
  if (p->made) return CUFFT_INVALID_VALUE;  // only before the plan is made
  p->auto_allocate = auto_allocate != 0;
  return CUFFT_SUCCESS;
}

cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int* n, int* inembed, int istride,
                              int idist, int* onembed, int ostride, int odist, cufftType type,
                              int batch, std::size_t* work_size) {
  const auto p = find_plan(plan);
  if (p == nullptr) return CUFFT_INVALID_PLAN;
  if (p->made) return CUFFT_INVALID_PLAN;
  if (refuse_during_capture("cufftMakePlanMany")) return CUFFT_SETUP_FAILED;
  if (rank != 1 || n == nullptr || batch <= 0) return CUFFT_INVALID_VALUE;
  if (type != CUFFT_Z2Z) {
    std::fprintf(stderr, "cuda emulator: cufftMakePlanMany: only CUFFT_Z2Z is emulated\n");
    return CUFFT_NOT_IMPLEMENTED;
  }
  if (!power_of_two(n[0])) {
    std::fprintf(stderr, "cuda emulator: cufftMakePlanMany: only power-of-two sizes are emulated\n");
    return CUFFT_NOT_IMPLEMENTED;
  }
  const bool contiguous = (inembed == nullptr || (istride == 1 && idist == n[0])) &&
                          (onembed == nullptr || (ostride == 1 && odist == n[0]));
  if (!contiguous) {
    std::fprintf(stderr, "cuda emulator: cufftMakePlanMany: only contiguous batches are emulated\n");
    return CUFFT_NOT_IMPLEMENTED;
  }
  if (std::int64_t{batch} * n[0] > INT_MAX) {
    // The 32-bit planning interface: more points in one plan need cufftMakePlanMany64.
    std::fprintf(stderr, "cuda emulator: cufftMakePlanMany: %d x %d points exceed 2^31-1\n",
                 batch, n[0]);
    return CUFFT_INVALID_SIZE;
  }
  p->n = n[0];
  p->batch = batch;
  // As much work area as the data (what cuFFT may ask of a large batch).
  p->work_bytes = std::size_t(batch) * std::size_t(n[0]) * sizeof(cufftDoubleComplex);
  if (p->auto_allocate) {
    if (allocate(&p->work_area, p->work_bytes) != cudaSuccess) {
      cudaGetLastError();
      return CUFFT_ALLOC_FAILED;
    }
    p->owns_work_area = true;
  }
  if (work_size != nullptr) *work_size = p->work_bytes;
  p->made = true;
  return CUFFT_SUCCESS;
}

cufftResult cufftSetWorkArea(cufftHandle plan, void* work_area) {
  const auto p = find_plan(plan);
  if (p == nullptr || !p->made) return CUFFT_INVALID_PLAN;
  if (work_area != nullptr && !is_device_range(work_area, p->work_bytes)) {
    std::fprintf(stderr,
                 "cuda emulator: cufftSetWorkArea: the work area is not %zu bytes of device "
                 "memory\n",
                 p->work_bytes);
    return CUFFT_INVALID_VALUE;
  }
  if (p->owns_work_area) release(p->work_area);
  p->owns_work_area = false;
  p->work_area = work_area;
  return CUFFT_SUCCESS;
}

cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
  const auto p = find_plan(plan);
  if (p == nullptr) return CUFFT_INVALID_PLAN;
  p->stream = stream;
  return CUFFT_SUCCESS;
}

cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex* in, cufftDoubleComplex* out,
                         int direction) {
  const auto p = find_plan(plan);
  if (p == nullptr || !p->made) return CUFFT_INVALID_PLAN;
  if (direction != CUFFT_FORWARD && direction != CUFFT_INVERSE) return CUFFT_INVALID_VALUE;
  if (fault() != cudaSuccess) return CUFFT_EXEC_FAILED;
  const std::size_t bytes = std::size_t(p->batch) * std::size_t(p->n) * sizeof(cufftDoubleComplex);
  if (!is_device_range(in, bytes) || !is_device_range(out, bytes)) {
    std::fprintf(stderr,
                 "cuda emulator: cufftExecZ2Z: the data (%d x %d points) is not inside one "
                 "device allocation\n",
                 p->batch, p->n);
    return CUFFT_INVALID_VALUE;
  }
  if (p->work_area == nullptr || !is_device_range(p->work_area, p->work_bytes)) {
    std::fprintf(stderr, "cuda emulator: cufftExecZ2Z: no work area of %zu bytes\n",
                 p->work_bytes);
    return CUFFT_EXEC_FAILED;
  }
  const std::shared_ptr<Plan> keep = p;
  const cudaError_t e = enqueue(
      p->stream,
      [keep, in, out, direction, bytes] {
        // Through the work area: the input is read whole before the output is written.
        auto* work = static_cast<fftw_complex*>(keep->work_area);
        std::memcpy(static_cast<void*>(work), in, bytes);
        const fftw_plan plan = plan_for(keep->n, direction);
        for (int b = 0; b < keep->batch; ++b) {
          fftw_complex* x = work + std::size_t(b) * keep->n;
          fftw_execute_dft(plan, x, x);
        }
        std::memcpy(static_cast<void*>(out), work, bytes);
      },
      false);
  return e == cudaSuccess ? CUFFT_SUCCESS : CUFFT_EXEC_FAILED;
}
