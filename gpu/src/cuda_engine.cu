// The CUDA side of the backend: device and stream, the keys on the device (bootstrapping key
// transformed to the Fourier domain there), stream-ordered memory, transfers, and the
// cuFFT-batched blind-rotation engine of DESIGN.md section 6.1 (TFHE, J. Cryptology 2020,
// algorithm 3; external products as in core/bootstrap.cpp):
//   per chunk of a batch: linear combinations -> [CUDA graph of the bucket size: accumulator
//   init, then per CMUX step i < n: rotate+decompose+twist kernel, one batched cuFFT Z2Z
//   forward over capacity*(k+1)*l polynomials, multiply-accumulate kernel against GGSW i,
//   one batched inverse over capacity*(k+1), untwist/round/accumulate kernel] -> sample
//   extraction -> key switching into the batch's results; then the results to the outputs.
// Workspaces (scratch, cuFFT plans and work area, graph) are made once per bucket size and
// kept (least recently used dropped first); chunks follow the memory budget.
// With CudaOptions::engine = fused, the blind rotation of a chunk is instead one kernel
// (fused_kernels.cu: a block per 1 to 8 rotations, accumulators in shared memory, its own FFT)
// against a Fourier key in that FFT's order, made on the device by the same FFT; before it one
// kernel makes the linear combinations' switched masks and fresh accumulators. Key
// switching is the gather kernel or, with CudaOptions::key_switching = tensor_core, one
// matrix product on the tensor cores (ks_gemm.cu) against the key's byte planes.
#include "cuda_engine.hpp"

#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_kernels.cuh"
#include "cuda_resources.cuh"
#include "fused_fft.hpp"
#include "fused_kernels.cuh"
#include "fused_rotation.hpp"
#include "host_copy.hpp"
#include "kernel_grid.hpp"
#include "ks_gemm.cuh"
#include "ks_gemm.hpp"
#include "rotation_tables.hpp"

namespace torusgate::gpu::detail {

// ---- errors -----------------------------------------------------------------------------

namespace {

std::string source_place(const char* file, int line) {
  std::string f(file);
  const auto pos = f.rfind("gpu/src/");
  if (pos != std::string::npos) f = f.substr(pos);
  return f + ":" + std::to_string(line);
}

}  // namespace

std::string format_bytes(std::size_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (std::size_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1 << 30));
  else if (bytes >= (std::size_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
  else if (bytes >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  else std::snprintf(buf, sizeof buf, "%zu bytes", bytes);
  return buf;
}

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  std::string msg = "CudaBackend: " + std::string(call) + " failed (" +
                    source_place(file, line) + "): " + cudaGetErrorName(error) + ": " +
                    cudaGetErrorString(error);
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
      msg += " (a kernel fault: the CUDA context of this process is now unusable; "
             "TORUSGATE_CUDA_DEBUG=1 names the faulting launch, compute-sanitizer the access)";
      break;
    default: break;
  }
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw DeviceOutOfMemory(msg);
  }
  throw SystemError(msg);
}

const char* cufft_result_name(cufftResult result) {
  switch (result) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED (out of memory)";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "unknown cufftResult";
  }
}

bool cuda_debug_mode() {
  static const bool on = [] {
    const char* v = std::getenv("TORUSGATE_CUDA_DEBUG");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

void set_kernel_attribute(const void* kernel, cudaFuncAttribute attribute, int value) {
  static std::mutex mutex;
  static std::map<std::tuple<int, const void*, int>, int> set;  // (device, kernel, attribute)
  int device = 0;
  CUDA_TRY(cudaGetDevice(&device));
  const std::lock_guard lock(mutex);
  const auto key = std::make_tuple(device, kernel, static_cast<int>(attribute));
  const auto it = set.find(key);
  if (it != set.end() &&
      (it->second == value ||
       (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize && it->second >= value))) {
    return;
  }
  CUDA_TRY(cudaFuncSetAttribute(kernel, attribute, value));
  set[key] = value;
}

void check_launch(const char* kernel_name, cudaStream_t stream, const char* file, int line) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && cuda_debug_mode()) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    e = cudaStreamIsCapturing(stream, &capture);
    if (e == cudaSuccess && capture == cudaStreamCaptureStatusNone) e = cudaStreamSynchronize(stream);
  }
  if (e != cudaSuccess) {
    throw_cuda_error(e, (std::string("the launch of ") + kernel_name).c_str(), file, line);
  }
}

void throw_cufft_error(cufftResult result, const char* call, const char* file, int line) {
  const std::string msg = "CudaBackend: " + std::string(call) + " failed (" +
                          source_place(file, line) + "): " + cufft_result_name(result) +
                          " (cufftResult " + std::to_string(static_cast<int>(result)) + ")";
  if (result == CUFFT_ALLOC_FAILED) throw DeviceOutOfMemory(msg);
  throw SystemError(msg);
}

// ---- the engine -------------------------------------------------------------------------

namespace {

// Device memory an automatic budget leaves to everything else.
std::size_t reserve_bytes(std::size_t total) {
  return std::max<std::size_t>(std::size_t{256} << 20, total / 20);
}

cufftDoubleComplex* as_cufft(Complex* p) { return reinterpret_cast<cufftDoubleComplex*>(p); }

static_assert(sizeof(Complex) == sizeof(cufftDoubleComplex) &&
              alignof(Complex) == alignof(cufftDoubleComplex));

// Scratch, plans and graph for chunks of up to `capacity` blind rotations.
struct Workspace {
  std::uint64_t capacity = 0;
  DeviceBuffer<std::uint32_t> pre, powers, acc, extracted;
  DeviceBuffer<Complex> digits, product;
  DeviceBuffer<std::uint64_t> result_index;
  DeviceBuffer<unsigned char> fft_work;
  DeviceBuffer<Complex> bundle;  // fused engine: the chunk's bundled keys, where it bundles
  // and, where its rotation starts while they are made (fused_bundle_overlap), the counters of
  // their row sets (BundleReady) and the bundlings they have counted
  DeviceBuffer<std::uint64_t> ready;
  std::uint64_t bundlings = 0;
  CufftPlan forward, inverse;
  GraphExec graph;
  std::size_t bytes = 0;
  std::uint64_t last_use = 0;
};

}  // namespace

struct CudaEngine::Impl {
  Impl(const Shape& shape, const std::uint32_t* bk, const std::uint32_t* ksk_words,
       const CudaOptions& options);
  ~Impl();

  cudaStream_t st() const { return stream->get(); }
  Event& record_event();
  template <class T>
  void ensure(DeviceBuffer<T>& buffer, std::size_t count, const char* what);
  std::size_t cached_bytes() const;
  std::size_t budget();
  std::unique_ptr<Workspace> make_workspace(std::uint64_t capacity);
  // The workspace made for chunks of `capacity` rotations, or null.
  Workspace* held_workspace(std::uint64_t capacity) const;
  Workspace& workspace_for(std::uint64_t capacity, std::size_t budget_bytes);
  void record_rotation(Workspace& ws);
  // Throws InvalidArgument when `launch` does not fit the device: its blocks' threads or shared
  // memory, or clusters the device cannot run (a forced shape; the automatic ones fit).
  void check_launch_fits(const kernel::fused::LaunchShape& launch) const;
  // Unrolled keys: roots and unit, from the engine's transform of the polynomial X.
  void make_rotation_tables();
  // The engine's forward transform of `polys` coefficient polynomials (device memory) into
  // `out` (polys x M, the engine's slot order): the key's and the probe's; waits for cuFFT.
  void transform_polynomials(const std::uint32_t* coefficients, std::size_t polys, Complex* out);
  kernel::fused::LaunchShape fused_shape_for(std::uint64_t capacity) const;
  // fused_shape_for's shape before the key stage (CudaOptions::fused_key_stage) is applied.
  kernel::fused::LaunchShape unstaged_shape_for(std::uint64_t capacity) const;
  bool fused() const { return options.engine == GpuEngine::fused; }
  // Whether a chunk of `capacity` rotations runs its group steps on bundled keys
  // (CudaOptions::fused_bundle): 0 or 2, an unrolled key, and a cluster of 8 points per
  // thread; a key in fours always (fused_shape_for gives it such a cluster for every chunk).
  // Automatic since an H200 measured it (docs/gpu.md section 6.31): pairs' and threes'
  // rotations 1.32x and 1.67x faster at batch 1, 1.25x and 1.54x at 8.
  bool bundles(std::uint64_t capacity) const {
    if (fused() && fours()) return true;
    if (!bundles_clusters()) return false;
    const kernel::fused::LaunchShape launch = fused_shape_for(capacity);
    return launch.cluster > 1 && launch.points == kernel::fused::points_per_thread;
  }
  // Whether this key's clusters of 8 points per thread run on bundled keys: an unrolled key
  // in the fused engine, fused_bundle not 1 (bundles() for a chunk, fused_shape_for's waves).
  bool bundles_clusters() const { return may_bundle(shape, options); }
  // A key in fours: the fused engine runs it on bundled clusters only (max_kernel_unroll).
  bool fours() const { return shape.unroll > kernel::fused::max_kernel_unroll; }
  // Whether a chunk of `capacity` rotations that bundles starts its rotation while the
  // bundling runs (CudaOptions::fused_bundle_overlap). Automatic (0): a key in fours whose
  // clusters take at most half the multiprocessors, so that the bundling has the rest. On an
  // H200 (docs/gpu.md section 6.31) that overlap made fours' rotation 1.03x faster at batch 1
  // (6 of 132 multiprocessors) and 1.34x at 8 (48), but 0.88x at 22 (132); pairs' and threes'
  // 0.95x at batch 1 and 0.91x and 0.92x at 8: never theirs.
  bool overlaps_bundling(std::uint64_t capacity) const {
    if (options.fused_bundle_overlap != 0) return options.fused_bundle_overlap == 2;
    if (!fours()) return false;
    const std::uint64_t blocks = capacity * fused_shape_for(capacity).cluster;
    return 2 * blocks <= static_cast<std::uint64_t>(std::max(info.multiprocessors, 1));
  }
  // The bundling's blocks where the rotation starts beside it (fused_bundle_overlap_blocks;
  // asked at its first use).
  std::uint64_t bundle_overlap_blocks = 0;
  // Device bytes of one rotation's bundled key.
  std::size_t bundle_bytes() const { return detail::bundle_bytes(shape); }
  // Points per thread of the clusters' transforms (CudaOptions::fused_cluster_points).
  std::uint32_t cluster_points() const {
    return options.fused_cluster_points == 0 ? kernel::fused::points_per_thread
                                             : options.fused_cluster_points;
  }
  // Who sums the products of a cluster of `blocks` (CudaOptions::fused_cluster_sums, which
  // validate_cuda_options admitted as 2 only where every block can sum its column; 0: every
  // block where it can, as choose_shape takes it).
  std::uint32_t cluster_sums(std::uint32_t blocks) const {
    if (options.fused_cluster_sums == 0) return kernel::fused::automatic_cluster_sums(blocks, shape);
    return options.fused_cluster_sums == kernel::fused::every_block_sums
               ? kernel::fused::every_block_sums
               : kernel::fused::owner_sums;
  }
  void run_rotation(Workspace& ws);
  void evaluate(const BatchPlan& plan);
  // A synchronous copy of `words` 32-bit words (direct or staged, as options.transfer says),
  // the caller's wait into times.*field.
  void timed_copy(void* dst, const void* src, std::size_t words, cudaMemcpyKind kind,
                  double CudaPhaseTimes::*field);
  // GpuTransfer::pinned: the copy in pieces through the two staging buffers, the host copy of
  // one piece overlapping the DMA of the other.
  void ensure_staging();
  void staged_upload(unsigned char* dst, const unsigned char* src, std::size_t bytes);
  void staged_download(unsigned char* dst, const unsigned char* src, std::size_t bytes);

  Shape shape;
  CudaOptions options;
  DeviceInfo info;
  std::shared_ptr<Stream> stream;  // first: destroyed after every buffer below
  kernel::GadgetConstants gadget;
  kernel::KeySwitchConstants ks;
  std::uint64_t ks_target_blocks = 0;  // key switching below this many blocks runs in slices
  DeviceBuffer<Complex> twist, untwist, bk_fourier;
  DeviceBuffer<Complex> twiddles;  // fused engine: its FFT's twiddle table (fused_fft.hpp)
  // Unrolled keys (shape.unroll > 1): the root exponent of each slot of the engine's spectra
  // (probed from its transform of X) and the unit table zeta^x (kernel_math.hpp).
  DeviceBuffer<std::uint32_t> roots;
  DeviceBuffer<Complex> unit;
  FusedLimits limits;              // fused engine: the rotation kernel on this device
  // Fused engine: clusters of the forced size, else of the automatic one, that the device
  // runs at once (0: none, or clusters not asked for), and of those the rotations the
  // automatic shape gives a cluster (a multiprocessor per block). Asked once, at construction.
  std::uint64_t clusters = 0, cluster_room = 0;
  DeviceBuffer<std::uint32_t> ksk;         // gather key switching: core's layout
  DeviceBuffer<std::uint8_t> ks_matrix;    // tensor-core key switching: byte planes
  // The batch's op descriptors, both kinds in one buffer (the bootstrapped ops' from
  // boot_offset), copied in one transfer from a page-locked copy. The host writes that copy
  // again only once the previous transfer from it is done: every evaluate() that queued one
  // waits for its stream before it returns, and one that failed before its wait leaves
  // descriptors_in_flight set, so the next waits first.
  DeviceBuffer<unsigned char> descriptors;
  PinnedBuffer descriptor_staging;
  bool descriptors_in_flight = false;
  std::size_t boot_offset = 0;
  const OpDesc* ops() const { return reinterpret_cast<const OpDesc*>(descriptors.data()); }
  const BootOpDesc* boot_ops() const {
    return reinterpret_cast<const BootOpDesc*>(descriptors.data() + boot_offset);
  }
  void upload_descriptors(const BatchPlan& plan);
  DeviceBuffer<std::uint32_t> results;
  std::vector<std::unique_ptr<Workspace>> workspaces;
  std::uint64_t use_clock = 0;
  std::deque<Event> events;  // reused across calls; references stay valid as it grows
  std::size_t next_event = 0;
  // The last evaluate()'s phases (a field of times, from one event to another), read from
  // their events only when times are asked for (resolved_times), not on the way out of
  // evaluate(), whose caller waits for it; dropped by the next evaluate(), which records the
  // events again.
  using Phases = std::vector<std::tuple<double CudaPhaseTimes::*, const Event*, const Event*>>;
  Phases pending_phases;
  const CudaPhaseTimes& resolved_times();
  PinnedBuffer staging[2];                   // GpuTransfer::pinned, made at the first transfer
  std::unique_ptr<Event> staged[2];          // the last DMA from or into staging[i] is done
  CudaPhaseTimes times;
};

CudaEngine::Impl::Impl(const Shape& s, const std::uint32_t* bk, const std::uint32_t* ksk_words,
                       const CudaOptions& o)
    : shape(s), options(o) {
  if (cuda_debug_mode()) options.use_cuda_graphs = false;  // launches checked one by one
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw SystemError(std::string("CudaBackend: no CUDA device is available (cudaGetDeviceCount: ") +
                      cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")");
  }
  if (count == 0) {
    throw SystemError("CudaBackend: no CUDA device is available (the driver reports 0 devices)");
  }
  EXPECTS(o.device < count, "CudaBackend: CudaOptions::device=" + std::to_string(o.device) +
                                " but this machine has " + std::to_string(count) +
                                " CUDA device(s), numbered from 0");
  DeviceGuard guard(o.device);
  if (!query_device(o.device, info)) {
    throw SystemError("CudaBackend: the CUDA runtime cannot read the properties of device " +
                      std::to_string(o.device));
  }
  int pools = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, o.device));
  if (pools == 0) {
    throw SystemError("CudaBackend: device " + std::to_string(o.device) + " (" + info.name +
                      ") has no stream-ordered allocator (cudaMallocAsync), which this "
                      "backend needs");
  }
  stream = std::make_shared<Stream>(o.device);
  gadget = kernel::make_gadget(s.bk_base_log, s.bk_level_count);
  ks = kernel::make_key_switch(s.ks_base_log, s.ks_level_count, s.n, s.extracted_dimension());
  ks_target_blocks = 2 * static_cast<std::uint64_t>(std::max(info.multiprocessors, 1));

  const std::size_t M = s.M();
  const std::vector<Complex> tw = kernel::twist_factors(s.N), utw = kernel::untwist_factors(s.N);
  twist = DeviceBuffer<Complex>(M, st(), "the twist table");
  untwist = DeviceBuffer<Complex>(M, st(), "the untwist table");
  CUDA_TRY(cudaMemcpyAsync(twist.data(), tw.data(), twist.bytes(), cudaMemcpyHostToDevice, st()));
  CUDA_TRY(cudaMemcpyAsync(untwist.data(), utw.data(), untwist.bytes(), cudaMemcpyHostToDevice,
                           st()));
  std::vector<std::uint8_t> matrix;  // alive until the synchronisation at the end
  if (o.key_switching != GpuKeySwitching::gather) {
    const kernel::ks_gemm::Layout layout = kernel::ks_gemm::make_layout(ks);
    matrix = kernel::ks_gemm::build_matrix(ksk_words, s.ksk_words(), layout);
    ks_matrix = DeviceBuffer<std::uint8_t>(matrix.size(), st(),
                                           "the key-switching key as byte planes");
    CUDA_TRY(cudaMemcpyAsync(ks_matrix.data(), matrix.data(), matrix.size(),
                             cudaMemcpyHostToDevice, st()));
  }
  if (o.key_switching != GpuKeySwitching::tensor_core) {
    ksk = DeviceBuffer<std::uint32_t>(s.ksk_words(), st(), "the key-switching key");
    CUDA_TRY(cudaMemcpyAsync(ksk.data(), ksk_words, ksk.bytes(), cudaMemcpyHostToDevice, st()));
  }

  // The bootstrapping key: coefficients to the device, then to the engine's Fourier form.
  const std::size_t polys = std::size_t{s.ggsw_count()} * s.rows() * s.k1();
  DeviceBuffer<std::uint32_t> coefficients(s.bk_words(), st(),
                                           "the bootstrapping key in coefficient form");
  CUDA_TRY(cudaMemcpyAsync(coefficients.data(), bk, coefficients.bytes(), cudaMemcpyHostToDevice,
                           st()));
  bk_fourier = DeviceBuffer<Complex>(polys * M, st(), "the Fourier bootstrapping key");
  std::vector<Complex> w;
  if (fused()) {
    // The fused engine's own transform of every polynomial (point order of its FFT).
    limits = fused_limits(s, o.device, o.fused_key_stage == 2);
    EXPECTS(o.fused_key_stage != 2 || limits.stage,
            "CudaBackend: CudaOptions fused_key_stage=2 needs the TMA's bulk copies; device " +
                info.name + " (compute capability " +
                std::to_string(info.compute_capability_major) + "." +
                std::to_string(info.compute_capability_minor) +
                ") cannot run the key stage's kernels (they need 9.0, and a build with code for "
                "9.0: CMAKE_CUDA_ARCHITECTURES; fused_key_stage 0 or 1 runs without)");
    const kernel::fused::LaunchShape one{1, 1};
    const std::size_t need = kernel::fused::block_shared_bytes(one, s);
    if (limits.max_threads < kernel::fused::block_threads(one, s) || limits.max_shared_bytes < need) {
      throw SystemError("CudaBackend: the fused engine needs blocks of " +
                        std::to_string(kernel::fused::block_threads(one, s)) + " threads and " +
                        format_bytes(need) + " of shared memory for parameter set N=" +
                        std::to_string(s.N) + ", k=" + std::to_string(s.k) + "; device " +
                        info.name + " allows " + std::to_string(limits.max_threads) +
                        " threads and " + format_bytes(limits.max_shared_bytes) +
                        " for its kernel; use GpuEngine::cufft");
    }
    const bool automatic = o.fused_shape_automatic();
    if (automatic || o.fused_cluster_blocks > 1) {
      const std::uint32_t cluster_blocks =
          automatic ? kernel::fused::preferred_cluster(s) : o.fused_cluster_blocks;
      clusters = fused_clusters(s, cluster_blocks, cluster_points(), o.device);
      if (automatic) {
        const auto per_device = static_cast<unsigned>(info.multiprocessors) / cluster_blocks;
        cluster_room = std::min<std::uint64_t>(clusters, per_device);
      }
    }
    if (fours() && clusters == 0) {
      throw SystemError(
          "CudaBackend: a bootstrapping key in fours (unroll " + std::to_string(s.unroll) +
          ") runs on the fused engine's bundled thread block clusters only, and device " +
          info.name + " (compute capability " + std::to_string(info.compute_capability_major) +
          "." + std::to_string(info.compute_capability_minor) +
          ") runs none (clusters need 9.0, and a build with code for 9.0); use GpuEngine::cufft");
    }
    // A forced shape is the same for every chunk: checked before any batch (and before the
    // key's transform).
    if (!automatic) check_launch_fits(fused_shape_for(2));
    w = kernel::fused::twiddles(static_cast<std::uint32_t>(M));
    twiddles = DeviceBuffer<Complex>(w.size(), st(), "the fused engine's twiddle table");
    CUDA_TRY(cudaMemcpyAsync(twiddles.data(), w.data(), twiddles.bytes(), cudaMemcpyHostToDevice,
                             st()));
  }
  transform_polynomials(coefficients.data(), polys, bk_fourier.data());
  CUDA_TRY(cudaStreamSynchronize(st()));  // the host tables above are read by now
  if (s.unroll > 1) make_rotation_tables();
}

void CudaEngine::Impl::transform_polynomials(const std::uint32_t* coefficients, std::size_t polys,
                                             Complex* out) {
  const std::size_t M = shape.M();
  if (fused()) {
    // The fused engine's own transform of every polynomial (point order of its FFT).
    launch_fused_key(coefficients, polys, shape, twist.data(), twiddles.data(), out, st());
    return;
  }
  // Fold and twist, then one batched forward transform of every polynomial, in place (the
  // same cuFFT transform as the digits', so both spectra share cuFFT's point order).
  EXPECTS(polys <= static_cast<std::size_t>(INT_MAX),
          "CudaBackend: the bootstrapping key has " + std::to_string(polys) +
              " polynomials; cuFFT batches hold at most 2^31-1");
  launch_bk_fold_twist(coefficients, polys, shape, twist.data(), out, st());
  CufftPlan plan;
  int m = static_cast<int>(M);
  std::size_t work = 0;
  CUFFT_TRY(cufftMakePlanMany(plan.get(), 1, &m, nullptr, 1, m, nullptr, 1, m, CUFFT_Z2Z,
                              static_cast<int>(polys), &work));
  CUFFT_TRY(cufftSetStream(plan.get(), st()));
  CUFFT_TRY(cufftExecZ2Z(plan.get(), as_cufft(out), as_cufft(out), CUFFT_FORWARD));
  CUDA_TRY(cudaStreamSynchronize(st()));  // before the plan goes
}

void CudaEngine::Impl::make_rotation_tables() {
  // The engine's own transform of the polynomial X, the way it made the key's spectra: slot t
  // holds zeta^(root t), which gives each slot's root exponent (kernel_math.hpp).
  const Shape& s = shape;
  const std::size_t M = s.M();
  std::vector<std::uint32_t> x(s.N, 0);
  x[1] = 1;
  DeviceBuffer<std::uint32_t> x_device(s.N, st(), "the probe polynomial X");
  DeviceBuffer<Complex> spectrum(M, st(), "the probe spectrum");
  CUDA_TRY(cudaMemcpyAsync(x_device.data(), x.data(), x_device.bytes(), cudaMemcpyHostToDevice,
                           st()));
  transform_polynomials(x_device.data(), 1, spectrum.data());
  std::vector<Complex> host(M);
  CUDA_TRY(cudaMemcpyAsync(host.data(), spectrum.data(), spectrum.bytes(), cudaMemcpyDeviceToHost,
                           st()));
  CUDA_TRY(cudaStreamSynchronize(st()));
  const std::vector<std::uint32_t> exponents = slot_root_exponents(host, s.N);
  if (exponents.empty()) {
    throw SystemError("CudaBackend: the " + std::string(fused() ? "fused" : "cuFFT") +
                      " engine's transform of the polynomial X is not a set of distinct odd "
                      "powers of exp(i pi/N), so it cannot run an unrolled bootstrapping key");
  }
  const std::vector<Complex> u = unit_roots_complex(s.N);
  roots = DeviceBuffer<std::uint32_t>(M, st(), "the spectrum slots' root exponents");
  unit = DeviceBuffer<Complex>(u.size(), st(), "the unit roots of the group steps");
  CUDA_TRY(cudaMemcpyAsync(roots.data(), exponents.data(), roots.bytes(), cudaMemcpyHostToDevice,
                           st()));
  CUDA_TRY(cudaMemcpyAsync(unit.data(), u.data(), unit.bytes(), cudaMemcpyHostToDevice, st()));
  CUDA_TRY(cudaStreamSynchronize(st()));  // the host tables are read by now
}

CudaEngine::Impl::~Impl() {
  // Members are freed on this device's stream after this body; wait for queued work first.
  // The caller's device is restored (each member restores it in turn as it goes).
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(info.index);
  if (stream) cudaStreamSynchronize(stream->get());
  if (previous >= 0) cudaSetDevice(previous);
}

Event& CudaEngine::Impl::record_event() {
  if (next_event == events.size()) events.emplace_back();
  Event& e = events[next_event++];
  e.record(st());
  return e;
}

template <class T>
void CudaEngine::Impl::ensure(DeviceBuffer<T>& buffer, std::size_t count, const char* what) {
  if (buffer.size() >= count) return;
  buffer = DeviceBuffer<T>();  // free first, then take the larger size
  buffer = DeviceBuffer<T>(count + count / 4, st(), what);
}

std::size_t CudaEngine::Impl::cached_bytes() const {
  std::size_t b = 0;
  for (const auto& w : workspaces) b += w->bytes;
  return b;
}

std::size_t CudaEngine::Impl::budget() {
  if (options.memory_budget_bytes != 0) return options.memory_budget_bytes;
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t available = free_bytes + cached_bytes();
  const std::size_t reserve = reserve_bytes(total_bytes);
  return available > reserve ? available - reserve : 0;
}

std::unique_ptr<Workspace> CudaEngine::Impl::make_workspace(std::uint64_t capacity) {
  const Shape& s = shape;
  auto ws = std::make_unique<Workspace>();
  ws->capacity = capacity;
  const std::size_t C = capacity;
  if (!fused()) {  // the fused engine makes powers and accumulators from the ops directly
    ws->pre = DeviceBuffer<std::uint32_t>(C * s.n1(), st(), "the linear combinations of a chunk");
    CUDA_TRY(cudaMemsetAsync(ws->pre.data(), 0, ws->pre.bytes(), st()));
  }
  ws->powers = DeviceBuffer<std::uint32_t>(C * s.n, st(), "the switched masks of a chunk");
  ws->acc = DeviceBuffer<std::uint32_t>(C * s.k1() * s.N, st(), "the accumulators of a chunk");
  ws->extracted = DeviceBuffer<std::uint32_t>(C * (std::size_t{s.extracted_dimension()} + 1),
                                              st(), "the extracted samples of a chunk");
  ws->result_index = DeviceBuffer<std::uint64_t>(C, st(), "the result indices of a chunk");
  ws->bytes = ws->pre.bytes() + ws->powers.bytes() + ws->acc.bytes() + ws->extracted.bytes() +
              ws->result_index.bytes();
  if (bundles(capacity)) {
    ws->bundle = DeviceBuffer<Complex>(C * kernel::fused::bundle_size(s), st(),
                                       "the bundled keys of a chunk");
    ws->bytes += ws->bundle.bytes();
    if (overlaps_bundling(capacity) && ws->bundle.data() != nullptr) {
      ws->ready = DeviceBuffer<std::uint64_t>(C * kernel::fused::bundle_steps(s), st(),
                                              "the counters of a chunk's bundled keys");
      CUDA_TRY(cudaMemsetAsync(ws->ready.data(), 0, ws->ready.bytes(), st()));
      ws->bytes += ws->ready.bytes();
    }
  }
  if (fused()) return ws;  // no spectra, plans or graph: the rotation is one kernel (or two)
  ws->digits = DeviceBuffer<Complex>(C * s.rows() * s.M(), st(), "the digit spectra of a chunk");
  ws->product = DeviceBuffer<Complex>(C * s.k1() * s.M(), st(), "the product spectra of a chunk");

  // Plans without their own work area: one shared area, stream-ordered like the rest.
  int m = static_cast<int>(s.M());
  std::size_t work_forward = 0, work_inverse = 0;
  CUFFT_TRY(cufftSetAutoAllocation(ws->forward.get(), 0));
  CUFFT_TRY(cufftSetAutoAllocation(ws->inverse.get(), 0));
  CUFFT_TRY(cufftMakePlanMany(ws->forward.get(), 1, &m, nullptr, 1, m, nullptr, 1, m, CUFFT_Z2Z,
                              static_cast<int>(C * s.rows()), &work_forward));
  CUFFT_TRY(cufftMakePlanMany(ws->inverse.get(), 1, &m, nullptr, 1, m, nullptr, 1, m, CUFFT_Z2Z,
                              static_cast<int>(C * s.k1()), &work_inverse));
  ws->fft_work = DeviceBuffer<unsigned char>(std::max(work_forward, work_inverse), st(),
                                             "the cuFFT work area of a chunk");
  if (ws->fft_work.data() != nullptr) {
    CUFFT_TRY(cufftSetWorkArea(ws->forward.get(), ws->fft_work.data()));
    CUFFT_TRY(cufftSetWorkArea(ws->inverse.get(), ws->fft_work.data()));
  }
  CUFFT_TRY(cufftSetStream(ws->forward.get(), st()));
  CUFFT_TRY(cufftSetStream(ws->inverse.get(), st()));
  ws->bytes += ws->digits.bytes() + ws->product.bytes() + ws->fft_work.bytes();
  if (options.use_cuda_graphs) {  // cuFFT engine only (the fused one is two launches)
    // The allocations above are ordered on the stream before the capture starts; the
    // captured kernels are loaded before it (with lazy module loading, a first launch inside
    // a capture needs a driver of CUDA 12.3 or later).
    load_rotation_kernels();
    ws->graph = capture_graph(st(), [&] { record_rotation(*ws); });
  }
  return ws;
}

Workspace* CudaEngine::Impl::held_workspace(std::uint64_t capacity) const {
  for (const auto& w : workspaces) {
    if (w->capacity == capacity) return w.get();
  }
  return nullptr;
}

Workspace& CudaEngine::Impl::workspace_for(std::uint64_t capacity, std::size_t budget_bytes) {
  if (Workspace* w = held_workspace(capacity)) {
    w->last_use = ++use_clock;
    return *w;
  }
  const std::size_t per_rotation =
      bytes_per_rotation(shape, options.engine) + (bundles(capacity) ? bundle_bytes() : 0);
  const std::size_t need = capacity * per_rotation;
  // A chunk that bundles needs its bundled keys too, which the chunk's sizing (by the
  // rotations' scratch alone, as most chunks bundle nothing) did not count: over the budget,
  // the caller retries with smaller chunks.
  if (budget_bytes != 0 && need > budget_bytes) {
    throw DeviceOutOfMemory("CudaBackend::evaluate: a chunk of " + std::to_string(capacity) +
                            " blind rotations needs " + format_bytes(need) + " (" +
                            format_bytes(per_rotation) + " each, bundled keys included) but " +
                            "the memory budget is " + format_bytes(budget_bytes) +
                            (options.memory_budget_bytes != 0
                                 ? " (CudaOptions::memory_budget_bytes)"
                                 : " (free device memory is too low)"));
  }
  auto evict_one = [&] {
    CUDA_TRY(cudaStreamSynchronize(st()));  // nothing queued still uses it
    auto lru = std::min_element(workspaces.begin(), workspaces.end(),
                                [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
    workspaces.erase(lru);
  };
  while (!workspaces.empty() && (workspaces.size() >= options.max_cached_workspaces ||
                                 cached_bytes() + need > budget_bytes)) {
    evict_one();
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Workspace> w;
  try {
    w = make_workspace(capacity);
  } catch (const DeviceOutOfMemory&) {
    if (workspaces.empty()) throw;
    while (!workspaces.empty()) evict_one();
    w = make_workspace(capacity);
  }
  times.setup_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  w->last_use = ++use_clock;
  workspaces.push_back(std::move(w));
  return *workspaces.back();
}

kernel::fused::LaunchShape CudaEngine::Impl::fused_shape_for(std::uint64_t capacity) const {
  kernel::fused::LaunchShape launch = unstaged_shape_for(capacity);
  // The key stage (CudaOptions::fused_key_stage 2, which the constructor found the device runs)
  // where the shape takes it: one group and one slot per block, the standard key.
  if (fused() && options.fused_key_stage == 2) {
    kernel::fused::LaunchShape staged = launch;
    staged.stage = kernel::fused::key_stage;
    if (kernel::fused::stage_fits(staged, shape)) return staged;
  }
  return launch;
}

kernel::fused::LaunchShape CudaEngine::Impl::unstaged_shape_for(std::uint64_t capacity) const {
  if (fours()) {  // bundled clusters for every chunk (validate_cuda_options: 0 or a cluster)
    const std::uint32_t blocks = options.fused_cluster_blocks > 1
                                     ? options.fused_cluster_blocks
                                     : kernel::fused::preferred_cluster(shape);
    return kernel::fused::LaunchShape{1, 1, blocks, 1, kernel::fused::points_per_thread,
                                      cluster_sums(blocks)};
  }
  if (options.fused_lanes > 1) return kernel::fused::LaunchShape{1, 1, 1, options.fused_lanes};
  if (options.fused_cluster_blocks > 1) {
    return kernel::fused::LaunchShape{1, 1, options.fused_cluster_blocks, 1, cluster_points(),
                                      cluster_sums(options.fused_cluster_blocks)};
  }
  if (options.fused_groups != 0 || options.fused_rotations_per_block != 0) {
    return kernel::fused::LaunchShape{std::max<std::uint32_t>(options.fused_groups, 1),
                                      std::max<std::uint32_t>(options.fused_rotations_per_block, 1)};
  }
  // fused_lanes = 1: one lane, the rest automatic.
  // (Keys in threes run lanes only when asked for: fused_limits gives them no lane room.)
  // Clusters in waves where they would bundle (bundles(): not asked never, 8 points a thread).
  const bool would_bundle =
      bundles_clusters() && options.fused_cluster_points != kernel::fused::wide_points;
  kernel::fused::LaunchShape chosen = kernel::fused::choose_shape(
      shape, capacity, limits.max_threads, limits.max_shared_bytes, limits.resident_threads,
      cluster_room, options.fused_lanes == 0 ? limits.lane_rotations : 0,
      would_bundle ? kernel::fused::bundled_cluster_waves(shape.unroll) : 1);
  if (chosen.cluster > 1 && options.fused_cluster_points != 0) {
    chosen.points = options.fused_cluster_points;
  }
  if (chosen.cluster > 1) chosen.sums = cluster_sums(chosen.cluster);
  return chosen;
}

void CudaEngine::Impl::check_launch_fits(const kernel::fused::LaunchShape& launch) const {
  const Shape& s = shape;
  const std::size_t shared = kernel::fused::block_shared_bytes(launch, s);
  const std::uint32_t threads = kernel::fused::block_threads(launch, s);
  // The shape as the options gave it: only the fields the caller set (the others are 0).
  const auto asked = [&] {
    std::string text;
    const auto add = [&](const char* name, std::uint32_t value) {
      if (value == 0) return;
      text += (text.empty() ? "" : ", ") + std::string(name) + "=" + std::to_string(value);
    };
    add("fused_groups", options.fused_groups);
    add("fused_rotations_per_block", options.fused_rotations_per_block);
    add("fused_lanes", options.fused_lanes);
    add("fused_cluster_blocks", options.fused_cluster_blocks);
    add("fused_cluster_points", options.fused_cluster_points);
    return "CudaOptions " + (text.empty() ? std::string("(automatic shape)") : text);
  };
  EXPECTS(threads <= limits.max_threads && shared <= limits.max_shared_bytes,
          "CudaBackend: " + asked() + " make blocks of " + std::to_string(threads) +
              " threads and " + format_bytes(shared) + " of shared memory for N=" +
              std::to_string(s.N) + ", k=" + std::to_string(s.k) + ", l=" +
              std::to_string(s.bk_level_count) + "; device " + info.name + " allows " +
              std::to_string(limits.max_threads) + " threads and " +
              format_bytes(limits.max_shared_bytes) +
              " for the fused kernel (0 for each chooses a shape that fits)");
  // Only a forced size: the automatic shape takes clusters where some run.
  EXPECTS(launch.cluster <= 1 || clusters != 0,
          "CudaBackend: " + asked() + " need thread block clusters of " +
              std::to_string(launch.cluster) + " blocks of " + std::to_string(threads) +
              " threads and " + format_bytes(shared) + " of shared memory; device " + info.name +
              " (compute capability " + std::to_string(info.compute_capability_major) + "." +
              std::to_string(info.compute_capability_minor) +
              ") cannot run them (clusters need 9.0, and a build with code for 9.0: "
              "CMAKE_CUDA_ARCHITECTURES; fused_cluster_blocks 0 or 1 runs without)");
}

void CudaEngine::Impl::record_rotation(Workspace& ws) {
  const Shape& s = shape;
  const std::uint64_t C = ws.capacity;
  const std::size_t key_step = std::size_t{s.rows()} * s.k1() * s.M();
  if (fused()) {  // powers and accumulators made with the linear combinations (evaluate)
    const kernel::fused::LaunchShape launch = fused_shape_for(C);
    check_launch_fits(launch);
    times.fused_groups = launch.groups;
    times.fused_rotations_per_block = launch.rotations;
    times.fused_cluster_blocks = launch.cluster;
    times.fused_lanes = launch.lanes;
    times.fused_cluster_points = launch.cluster > 1 ? launch.points : 0;
    times.fused_cluster_sums = launch.cluster > 1 ? launch.sums : 0;
    times.fused_key_stage = launch.stage;
    // Bundled keys (fused_rotation.hpp, bundle_point_at): made by the whole device before the
    // rotation; its time counts in the blind rotation's.
    // With counters (fused_bundle_overlap), the rotation starts while the bundling runs and
    // waits for each row set's count: this bundling's parts on top of the earlier ones'.
    const bool bundled = ws.bundle.data() != nullptr || fours();
    const bool overlapped = bundled && ws.ready.data() != nullptr;
    kernel::fused::BundleReady ready;
    if (bundled) {
      if (overlapped && bundle_overlap_blocks == 0) {
        bundle_overlap_blocks = fused_bundle_overlap_blocks(s, launch.cluster, info.index);
      }
      launch_fused_bundle(ws.powers.data(), C, s, bk_fourier.data(), roots.data(), unit.data(),
                          ws.bundle.data(), overlapped ? ws.ready.data() : nullptr,
                          overlapped ? bundle_overlap_blocks : 0, st());
      if (overlapped) {
        ++ws.bundlings;  // launched: it counts every part once
        ready = {ws.ready.data(), ws.bundlings * kernel::fused::bundle_parts(s)};
      }
    }
    const bool after = launch_fused_blind_rotation(
        ws.acc.data(), ws.powers.data(), C, s, launch, bk_fourier.data(), twist.data(),
        untwist.data(), twiddles.data(), gadget, roots.data(), unit.data(), ws.bundle.data(),
        ready, st());
    times.fused_bundle = after ? 2 : bundled ? 1 : 0;  // 2: it ran beside the bundling
    return;
  }
  launch_accumulator_init(ws.pre.data(), C, s, ws.powers.data(), ws.acc.data(), st());
  // Per step: decompose, forward, products, inverse, untwist. An unrolled key's group steps
  // (key bits i .. i+u-1: ACC not rotated, the group's 2^u - 1 GGSW) come first, then a CMUX
  // step per key bit left (Shape::step_ggsw).
  const std::uint32_t grouped = s.grouped_bits();
  for (std::uint32_t i = 0; i < s.n; i += i < grouped ? s.unroll : 1) {
    const bool group = i < grouped;
    const Complex* key = bk_fourier.data() + s.step_ggsw(i) * key_step;
    launch_rotate_decompose(ws.acc.data(), ws.powers.data(), i, C, s, gadget, twist.data(),
                            ws.digits.data(), st(), /*rotate=*/!group);
    CUFFT_TRY(cufftExecZ2Z(ws.forward.get(), as_cufft(ws.digits.data()),
                           as_cufft(ws.digits.data()), CUFFT_FORWARD));
    if (group) {
      launch_multiply_accumulate_group(ws.digits.data(), key, ws.powers.data(), i, roots.data(),
                                       unit.data(), C, s, ws.product.data(), st());
    } else {
      launch_multiply_accumulate(ws.digits.data(), key, C, s, ws.product.data(), st());
    }
    CUFFT_TRY(cufftExecZ2Z(ws.inverse.get(), as_cufft(ws.product.data()),
                           as_cufft(ws.product.data()), CUFFT_INVERSE));
    launch_untwist_round_add(ws.product.data(), untwist.data(), C, s, ws.acc.data(), st());
  }
}

void CudaEngine::Impl::run_rotation(Workspace& ws) {
  if (ws.graph) {
    CUDA_TRY(cudaGraphLaunch(ws.graph.get(), st()));
  } else {
    record_rotation(ws);
  }
}

void CudaEngine::Impl::upload_descriptors(const BatchPlan& plan) {
  const std::size_t op_bytes = plan.ops.size() * sizeof(OpDesc);
  const std::size_t boot_bytes = plan.boot_ops.size() * sizeof(BootOpDesc);
  boot_offset = (op_bytes + 255) / 256 * 256;
  const std::size_t bytes = boot_offset + std::max(boot_bytes, sizeof(BootOpDesc));
  ensure(descriptors, bytes, "the batch's op descriptors");
  // The last transfer from the staging copy (of an earlier call that failed before its wait)
  // has read it before it is written again.
  if (descriptors_in_flight) CUDA_TRY(cudaStreamSynchronize(st()));
  descriptors_in_flight = false;
  if (descriptor_staging.bytes() < bytes) {
    descriptor_staging = PinnedBuffer();  // free first, then take the larger size
    descriptor_staging = PinnedBuffer(bytes + bytes / 4, "a page-locked copy of op descriptors");
  }
  unsigned char* staged_bytes = descriptor_staging.data();
  if (op_bytes > 0) std::memcpy(staged_bytes, plan.ops.data(), op_bytes);
  if (boot_bytes > 0) std::memcpy(staged_bytes + boot_offset, plan.boot_ops.data(), boot_bytes);
  const std::size_t used = boot_bytes > 0 ? boot_offset + boot_bytes : op_bytes;
  if (used > 0) {
    descriptors_in_flight = true;
    CUDA_TRY(cudaMemcpyAsync(descriptors.data(), staged_bytes, used, cudaMemcpyHostToDevice,
                             st()));
  }
}

void CudaEngine::Impl::evaluate(const BatchPlan& plan) {
  DeviceGuard guard(info.index);
  const double upload_ms = times.upload_ms, download_ms = times.download_ms;
  times = CudaPhaseTimes{};
  times.upload_ms = upload_ms;
  times.download_ms = download_ms;
  pending_phases.clear();
  if (plan.results == 0) return;
  EXPECTS(plan.ops.size() <= UINT32_MAX && plan.boot_ops.size() <= UINT32_MAX,
          "CudaBackend::evaluate: a batch of " + std::to_string(plan.ops.size()) +
              " ops; at most 2^32-1");
  const Shape& s = shape;
  const cudaStream_t stream_now = st();
  const auto op_count = static_cast<std::uint32_t>(plan.ops.size());
  const auto boot_count = static_cast<std::uint32_t>(plan.boot_ops.size());
  Phases phases;  // pending_phases once every event is recorded and the stream done
  next_event = 0;

  // The host's calls before the blind rotation's launch are what a small batch waits for
  // (the device runs each piece of work as soon as it is queued): no call that is not needed,
  // and an event only where a phase ends (the next phase starts at the same one).
  const Event& start = record_event();
  upload_descriptors(plan);
  ensure(results, plan.results * s.n1(), "the batch's results");
  const Event* mark = &record_event();
  phases.emplace_back(&CudaPhaseTimes::tables_ms, &start, mark);
  if (plan.has_free_gates) {
    launch_free_gates(ops(), op_count, plan.results, s, results.data(), stream_now);
    const Event& done = record_event();
    phases.emplace_back(&CudaPhaseTimes::linear_combination_ms, mark, &done);
    mark = &done;
  }

  if (plan.rotations > 0) {
    // A batch that a workspace already made takes whole needs no memory query
    // (cudaMemGetInfo: microseconds, at every call): that workspace's memory is held.
    const std::uint64_t limit = std::min<std::uint64_t>(
        std::uint64_t{1} << 20,
        fused() ? std::uint64_t{1} << 30 : INT_MAX / (std::uint64_t{s.rows()} * s.M()));
    const bool held =
        plan.rotations <= limit && held_workspace(bucket_capacity(plan.rotations)) != nullptr;
    std::size_t budget_bytes = 0;
    std::uint64_t capacity = std::max<std::uint64_t>(plan.rotations, 2);
    if (!held) {
      budget_bytes = budget();
      // A key in fours: every chunk holds its bundled keys (fused_shape_for).
      const std::size_t per_rotation =
          bytes_per_rotation(s, options.engine) + (fused() && fours() ? bundle_bytes() : 0);
      capacity = chunk_capacity(budget_bytes, per_rotation, limit);
      if (capacity < 2) {
        throw DeviceOutOfMemory(
            "CudaBackend::evaluate: a memory budget of " + format_bytes(budget_bytes) +
            " holds " + std::to_string(capacity) + " blind rotation(s) of " +
            format_bytes(per_rotation) + " but a chunk needs at least 2" +
            (options.memory_budget_bytes != 0 ? " (CudaOptions::memory_budget_bytes)"
                                              : " (free device memory is too low)"));
      }
    }
    std::uint64_t job = 0;
    while (job < plan.jobs) {
      const Chunk chunk = next_chunk(plan, job, capacity);
      Workspace* ws = nullptr;
      try {
        ws = &workspace_for(bucket_capacity(chunk.rotations()), budget_bytes);
      } catch (const DeviceOutOfMemory&) {
        if (capacity <= 2) throw;
        capacity = largest_bucket_at_most(capacity / 2);  // smaller chunks, then retry
        continue;
      }
      times.chunk_capacity = std::max<std::size_t>(times.chunk_capacity, ws->capacity);
      const Event& a = *mark;
      if (fused()) {  // the rotations' start too (the cuFFT engine's is in its graph)
        launch_combination_init(boot_ops(), boot_count, chunk.rotation_begin, chunk.rotations(),
                                ws->capacity, s, ws->powers.data(), ws->acc.data(), stream_now);
      } else {
        launch_linear_combination(boot_ops(), boot_count, chunk.rotation_begin,
                                  chunk.rotations(), s, ws->pre.data(), stream_now);
      }
      const Event& b = record_event();
      run_rotation(*ws);
      const Event& c = record_event();
      launch_sample_extract(boot_ops(), boot_count, chunk, ws->acc.data(), s,
                            ws->extracted.data(), ws->result_index.data(), stream_now);
      const Event& d = record_event();
      // The gather kernel cuts a chunk with fewer than two blocks per multiprocessor into
      // slices (a batch of one: 5 blocks); automatic takes it for those chunks, the matrix
      // product for the others.
      const std::uint32_t span = grid::key_switch_slice_span(chunk.jobs(), ks.n + 1,
                                                             ks.input_dimension, ks_target_blocks);
      const std::uint32_t slices = grid::key_switch_slices(ks.input_dimension, span);
      if (options.key_switching == GpuKeySwitching::tensor_core ||
          (options.key_switching == GpuKeySwitching::automatic && slices == 1)) {
        launch_key_switch_gemm(ws->extracted.data(), chunk.jobs(), ws->result_index.data(),
                               ks_matrix.data(), ks, results.data(), stream_now);
        times.key_switching_slices = 0;
      } else {
        launch_key_switch(ws->extracted.data(), chunk.jobs(), ws->result_index.data(),
                          ksk.data(), ks, results.data(), span, stream_now);
        times.key_switching_slices = slices;
      }
      const Event& e = record_event();
      phases.emplace_back(&CudaPhaseTimes::linear_combination_ms, &a, &b);
      phases.emplace_back(&CudaPhaseTimes::blind_rotation_ms, &b, &c);
      phases.emplace_back(&CudaPhaseTimes::sample_extraction_ms, &c, &d);
      phases.emplace_back(&CudaPhaseTimes::key_switching_ms, &d, &e);
      mark = &e;
      ++times.chunks;
      job = chunk.job_end;
    }
  }

  launch_write_outputs(ops(), op_count, plan.results, s, results.data(), stream_now);
  const Event& end = record_event();
  phases.emplace_back(&CudaPhaseTimes::output_ms, mark, &end);
  phases.emplace_back(&CudaPhaseTimes::evaluate_ms, &start, &end);
  CUDA_TRY(cudaStreamSynchronize(stream_now));
  descriptors_in_flight = false;
  pending_phases = std::move(phases);
}

const CudaPhaseTimes& CudaEngine::Impl::resolved_times() {
  if (!pending_phases.empty()) {
    DeviceGuard guard(info.index);
    for (const auto& [field, from, to] : pending_phases) times.*field += to->since(*from);
    pending_phases.clear();
  }
  return times;
}

// ---- CudaEngine -------------------------------------------------------------------------

CudaEngine::CudaEngine(const Shape& shape, const std::uint32_t* bk, const std::uint32_t* ksk,
                       const CudaOptions& options)
    : impl_(std::make_unique<Impl>(shape, bk, ksk, options)) {}

CudaEngine::~CudaEngine() = default;

const DeviceInfo& CudaEngine::device() const { return impl_->info; }

std::size_t CudaEngine::key_bytes() const {
  return impl_->bk_fourier.bytes() + impl_->ksk.bytes() + impl_->twist.bytes() +
         impl_->untwist.bytes() + impl_->twiddles.bytes() + impl_->ks_matrix.bytes();
}

std::shared_ptr<void> CudaEngine::allocate(std::size_t words) {
  if (words == 0) return nullptr;
  DeviceGuard guard(impl_->info.index);
  DeviceBuffer<std::uint32_t> buffer(words, impl_->st(), "a buffer of ciphertexts");
  CUDA_TRY(cudaMemsetAsync(buffer.data(), 0, buffer.bytes(), impl_->st()));
  std::shared_ptr<Stream> keep = impl_->stream;
  return std::shared_ptr<void>(buffer.release_ownership(), [keep](void* p) {
    int previous = -1;
    cudaGetDevice(&previous);
    cudaSetDevice(keep->device());
    cudaFreeAsync(p, keep->get());
    if (previous >= 0) cudaSetDevice(previous);
  });
}

void CudaEngine::Impl::timed_copy(void* dst, const void* src, std::size_t words,
                                  cudaMemcpyKind kind, double CudaPhaseTimes::*field) {
  DeviceGuard guard(info.index);
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t bytes = words * 4;
  if (bytes > 0 && options.transfer == GpuTransfer::pinned) {
    if (kind == cudaMemcpyHostToDevice) {
      staged_upload(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src),
                    bytes);
    } else {
      staged_download(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src),
                      bytes);
    }
  } else if (bytes > 0) {
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, st()));
  }
  CUDA_TRY(cudaStreamSynchronize(st()));
  times.*field =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void CudaEngine::Impl::ensure_staging() {
  if (staging[0].data() != nullptr) return;
  for (int i = 0; i < 2; ++i) {
    staging[i] = PinnedBuffer(options.staging_bytes, "a staging buffer of transfers");
    staged[i] = std::make_unique<Event>();
  }
}

void CudaEngine::Impl::staged_upload(unsigned char* dst, const unsigned char* src,
                                     std::size_t bytes) {
  ensure_staging();
  // Nothing of an earlier (failed) call may still read the buffers.
  CUDA_TRY(cudaStreamSynchronize(st()));
  const std::size_t piece = options.staging_bytes;
  std::size_t p = 0;
  for (std::size_t offset = 0; offset < bytes; offset += piece, ++p) {
    const std::size_t len = std::min(piece, bytes - offset);
    PinnedBuffer& buffer = staging[p % 2];
    // The DMA of piece p - 2 read this buffer; the host writes it again once that is done.
    if (p >= 2) CUDA_TRY(cudaEventSynchronize(staged[p % 2]->get()));
    host_copy(buffer.data(), src + offset, len);
    CUDA_TRY(cudaMemcpyAsync(dst + offset, buffer.data(), len, cudaMemcpyHostToDevice, st()));
    staged[p % 2]->record(st());
  }
}

void CudaEngine::Impl::staged_download(unsigned char* dst, const unsigned char* src,
                                       std::size_t bytes) {
  ensure_staging();
  CUDA_TRY(cudaStreamSynchronize(st()));
  const std::size_t piece = options.staging_bytes;
  const std::size_t pieces = (bytes + piece - 1) / piece;
  const auto issue = [&](std::size_t p) {
    const std::size_t offset = p * piece, len = std::min(piece, bytes - offset);
    CUDA_TRY(cudaMemcpyAsync(staging[p % 2].data(), src + offset, len, cudaMemcpyDeviceToHost,
                             st()));
    staged[p % 2]->record(st());
  };
  issue(0);
  for (std::size_t p = 0; p < pieces; ++p) {
    // The next piece's DMA goes to the other buffer, whose last piece the host copied out in
    // the previous round; it runs while the host copies this one out.
    if (p + 1 < pieces) issue(p + 1);
    CUDA_TRY(cudaEventSynchronize(staged[p % 2]->get()));
    const std::size_t offset = p * piece, len = std::min(piece, bytes - offset);
    host_copy(dst + offset, staging[p % 2].data(), len);
  }
}

void CudaEngine::copy_to_device(void* dst, const std::uint32_t* src, std::size_t words) {
  impl_->timed_copy(dst, src, words, cudaMemcpyHostToDevice, &CudaPhaseTimes::upload_ms);
}

void CudaEngine::copy_to_host(std::uint32_t* dst, const void* src, std::size_t words) {
  impl_->timed_copy(dst, src, words, cudaMemcpyDeviceToHost, &CudaPhaseTimes::download_ms);
}

void CudaEngine::evaluate(const BatchPlan& plan) { impl_->evaluate(plan); }

const CudaPhaseTimes& CudaEngine::times() const { return impl_->resolved_times(); }

}  // namespace torusgate::gpu::detail
