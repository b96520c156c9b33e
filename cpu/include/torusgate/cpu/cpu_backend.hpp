// CPU backends: SequentialBackend and OpenMpBackend share one implementation (CpuBackend);
// only the loop that runs the tasks of a batch differs. A batch is split into tasks of up to
// `task_size` blind rotations, at least one per thread while the rotations last
// (cpu_task_starts); each task bootstraps its gates key-row-major (each GGSW and
// key-switching row read once per task) in a per-thread workspace made once. With fewer
// tasks than threads, the OpenMP backend gives each task a team of threads (cpu_team_size)
// that share its rotations' work (BlindRotator's team form) and key switching; teams together
// take at most as many threads as the processors the process may run on.
//
// Threads: a backend is used by one thread at a time (evaluate() uses the backend's own
// workspaces; a call while another runs is refused, ExclusiveCalls). To evaluate from several
// threads at once, give each thread its own backend; they may share one CpuKeyContext
// (read-only), so the Fourier key exists once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "torusgate/core/backend.hpp"
#include "torusgate/core/bootstrap.hpp"
#include "torusgate/core/keys.hpp"

namespace torusgate {

class CpuBackend;

struct CpuStorage {
  const CpuBackend* owner = nullptr;
  std::uint64_t owner_serial = 0;  // the owner's new_backend_serial()
  LweBatch batch;
  std::size_t size() const { return batch.count(); }
};

// Auto: SimdFft (our vectorised engine) when N >= 128 and the build targets AVX-512, else
// FFTW (simd_fft_preferred()).
enum class FftEngineKind { Auto, Fftw, Simd, Portable };

struct CpuOptions {
  // The FFT engine, used only when the backend makes its own CpuKeyContext (from a CloudKey);
  // a backend built on a shared context uses that context's engine.
  FftEngineKind fft = FftEngineKind::Auto;
  std::size_t task_size = 32;  // blind rotations per task (key reuse vs. load balance)
  // OpenMP threads, 0..4096; 0: the OpenMP default (omp_get_max_threads(), from
  // OMP_NUM_THREADS), which must then be at most 4096 too. Sequential: ignored.
  int threads = 0;
  // Processors the teams of small batches may use (cpu_team_size's procs), 0..4096; 0:
  // omp_get_num_procs(), those the process may run on. Wider teams than processors stall
  // (their members spin at every step): set it to force them, as the tests do on 2 cores.
  int team_processors = 0;
};

// Shared, read-only per-key state: the cloud key, its FFT engine and Fourier-domain
// bootstrapping key, made once; several backends (one per thread) may share one.
class CpuKeyContext {
 public:
  CpuKeyContext(std::shared_ptr<const CloudKey> key, FftEngineKind fft = FftEngineKind::Auto);
  // Any engine for the key's polynomial size, for example the fixed-point model of fpga_fft/
  // (FixedPointNegacyclicFft) to measure bootstrapping with a hardware datapath's arithmetic.
  CpuKeyContext(std::shared_ptr<const CloudKey> key, std::shared_ptr<const NegacyclicFft> fft);
  const CloudKey& cloud_key() const { return *key_; }
  const Parameters& parameters() const { return key_->parameters(); }
  const NegacyclicFft& fft() const { return *fft_; }
  const BootstrappingKeyFourier& fourier_key() const { return *fourier_; }
  // Cloud key (coefficient BK + KSK) plus the Fourier-domain BK.
  std::size_t memory_bytes() const { return key_->memory_bytes() + fourier_->memory_bytes(); }

 private:
  std::shared_ptr<const CloudKey> key_;
  std::shared_ptr<const NegacyclicFft> fft_;
  std::unique_ptr<BootstrappingKeyFourier> fourier_;
};

class CpuBackend {
 public:
  using Storage = CpuStorage;
  using HostBatch = LweBatch;
  using ClientKey = SecretKey;
  enum class Threading { Sequential, OpenMp };

  CpuBackend(std::shared_ptr<const CpuKeyContext> context, Threading threading,
             CpuOptions options = {});
  CpuBackend(std::shared_ptr<const CloudKey> key, Threading threading, CpuOptions options = {});
  virtual ~CpuBackend();
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  std::string name() const;
  const Parameters& parameters() const { return context_->parameters(); }
  // The id of the secret key the cloud key was made from (0: not known; CloudKey::key_id).
  std::uint64_t key_id() const { return context_->cloud_key().key_id(); }
  const CpuKeyContext& context() const { return *context_; }
  int threads() const { return threads_; }

  BitBuffer<Storage> allocate(std::size_t count);  // trivial encryptions of 0
  BitBuffer<Storage> upload(const LweBatch& batch);
  LweBatch download(BitSpan<Storage> bits) const;
  void evaluate(std::span<const GateOp<Storage>> batch);
  void evaluate(std::initializer_list<GateOp<Storage>> batch) {
    evaluate(std::span<const GateOp<Storage>>(batch.begin(), batch.size()));
  }

  // Completed batches only: a batch that throws (invalid, or failing while it runs) leaves
  // every counter as it was.
  const BackendStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  struct Workspace;
  struct BootJob {
    std::size_t op, element, result;
  };
  bool owns(const Storage* s) const {
    return s != nullptr && s->owner == this && s->owner_serial == serial_;
  }
  std::uint64_t serial_ = new_backend_serial();
  // A task: its rotations' inputs, the rotations and extractions, the MUXes' sums, key
  // switching (share `part` of `parts`), the results into results_. On a team (every member
  // calls it; ws: the team's one workspace) member 0 does the serial phases; without one
  // (nullptr, member 0) a lone thread does everything.
  void run_task(Workspace& ws, std::span<const GateOp<Storage>> batch,
                std::span<const BootJob> jobs, ThreadTeam* team = nullptr, unsigned member = 0);
  void prepare_rotations(Workspace& ws, std::span<const GateOp<Storage>> batch,
                         std::span<const BootJob> jobs);
  void compact_extracted(Workspace& ws, std::span<const GateOp<Storage>> batch,
                         std::span<const BootJob> jobs);
  void switch_keys(Workspace& ws, std::span<const BootJob> jobs, unsigned part, unsigned parts);
  void store_results(Workspace& ws, std::span<const BootJob> jobs);

  std::shared_ptr<const CpuKeyContext> context_;
  Threading threading_;
  CpuOptions options_;
  int threads_ = 1;
  std::vector<std::unique_ptr<Workspace>> workspaces_;  // one per thread
  LweBatch results_;                                    // outputs of the batch in evaluation
  std::vector<BootJob> jobs_;
  std::vector<std::uint32_t> job_boots_;  // rotations of each job
  std::vector<std::size_t> task_starts_;
  BackendStats stats_;
  ExclusiveCalls calls_;  // evaluate() from two threads at once: refused
};

// One thread runs every task of a batch, in order.
class SequentialBackend final : public CpuBackend {
 public:
  explicit SequentialBackend(std::shared_ptr<const CloudKey> key, CpuOptions options = {})
      : CpuBackend(std::move(key), Threading::Sequential, options) {}
  explicit SequentialBackend(std::shared_ptr<const CpuKeyContext> context, CpuOptions options = {})
      : CpuBackend(std::move(context), Threading::Sequential, options) {}
};

// The tasks of a batch run on an OpenMP thread team.
class OpenMpBackend final : public CpuBackend {
 public:
  explicit OpenMpBackend(std::shared_ptr<const CloudKey> key, CpuOptions options = {})
      : CpuBackend(std::move(key), Threading::OpenMp, options) {}
  explicit OpenMpBackend(std::shared_ptr<const CpuKeyContext> context, CpuOptions options = {})
      : CpuBackend(std::move(context), Threading::OpenMp, options) {}
};

// How CpuBackend cuts a batch into tasks. Job j takes boots[j] blind rotations (1, or 2 for a
// MUX, whose two rotations always share a task); jobs go in order into tasks of at most
// cap = min(task_size, ceil(total / threads)) rotations, cap at least 1 (a MUX alone may then
// exceed it; task_size >= 2 always holds it): as many tasks as keep every thread busy, each
// as large as that allows, since a task's rotations share each read of the key. `starts`
// gets each task's first job, then boots.size(). InvalidArgument for a job of 0 or more than
// 2 rotations, task_size < 2 or threads < 1.
void cpu_task_starts(std::span<const std::uint32_t> boots, std::size_t task_size, int threads,
                     std::vector<std::size_t>& starts);

// Threads per task when a batch has fewer tasks than threads: min(threads, procs) / tasks,
// at most fewest_rotations * columns (the work units of the task with the fewest rotations: a
// team member owns whole accumulator columns, columns = k+1), and 1 (each task on one thread)
// where that comes to less than 2. procs: the processors the process may run on
// (omp_get_num_procs()); a team's members spin at a barrier at every step, so a member left
// without a processor stalls its team. InvalidArgument unless every argument is at least 1.
unsigned cpu_team_size(std::size_t tasks, std::size_t fewest_rotations, std::size_t columns,
                       int threads, int procs);

std::unique_ptr<NegacyclicFft> make_fft_engine(FftEngineKind kind, std::uint32_t polynomial_size);

// Whether FftEngineKind::Auto takes SimdFft (for N >= 128): where this library was compiled
// for AVX-512, whose registers hold SimdFft's vectors of 8 doubles. There it measured 6.8 ms
// per tfhe_lib_128 bootstrap against FFTW's 7.3. On an AVX2-only AMD EPYC, SimdFft on
// vectors of 8 doubles (two registers each) took 25.6 ms against FFTW's 11.8 (bench_gates,
// one thread, batch 16, 2026-11-25: docs/results/bench_gates_cpu_sequential_tfhe_lib_128_
// avx2_*.json); on vectors of 4, its width there since 2026-12-01, it is level with FFTW
// (docs/results/simd_avx2/), which stays the default.
bool simd_fft_preferred();

}  // namespace torusgate
