// CPU backend: batch evaluation of gates with bootstrapping on one or more threads.
#include "torusgate/cpu/cpu_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <exception>
#include <memory>

#include "torusgate/core/simd_fft.hpp"
#include "torusgate/cpu/fftw_fft.hpp"

namespace torusgate {
namespace {

constexpr Torus32 eighth = Torus32{1} << 29;

// Each thread gets a workspace made up front, so a huge count would exhaust memory before
// anything runs; the same cap holds for CpuOptions::threads and for the OpenMP default.
constexpr int max_threads = 4096;

Torus32 eighths(int e) { return static_cast<Torus32>(e) * eighth; }

// out = trivial(offset) + sum_j w_j * in_j over n+1 words.
void linear_combination(Torus32* out, std::size_t words, Torus32 offset,
                        std::span<const Torus32* const> inputs, std::span<const Torus32> weights) {
  std::fill(out, out + words, Torus32{0});
  out[words - 1] = offset;
  for (std::size_t j = 0; j < inputs.size(); ++j) {
    const Torus32 w = weights[j];
    const Torus32* __restrict in = inputs[j];
    for (std::size_t t = 0; t < words; ++t) out[t] += w * in[t];
  }
}

}  // namespace

void cpu_task_starts(std::span<const std::uint32_t> boots, std::size_t task_size, int threads,
                     std::vector<std::size_t>& starts) {
  EXPECTS(task_size >= 2, "cpu_task_starts: task_size=" + std::to_string(task_size) +
                              " but expected at least 2 (a MUX needs two rotations in one task)");
  EXPECTS(threads >= 1, "cpu_task_starts: threads=" + std::to_string(threads) +
                            " but expected at least 1");
  std::size_t rotations = 0;
  for (std::size_t j = 0; j < boots.size(); ++j) {
    EXPECTS(boots[j] == 1 || boots[j] == 2, "cpu_task_starts: job " + std::to_string(j) +
                                                " takes " + std::to_string(boots[j]) +
                                                " rotations but expected 1 or 2");
    rotations += boots[j];
  }
  const auto t = static_cast<std::size_t>(threads);
  const std::size_t per_thread = (rotations + t - 1) / t;
  const std::size_t cap = std::max<std::size_t>(1, std::min(task_size, per_thread));
  starts.clear();
  std::size_t in_task = cap;
  for (std::size_t j = 0; j < boots.size(); ++j) {
    if (in_task + boots[j] > cap) {
      starts.push_back(j);
      in_task = 0;
    }
    in_task += boots[j];
  }
  starts.push_back(boots.size());
}

unsigned cpu_team_size(std::size_t tasks, std::size_t fewest_rotations, std::size_t columns,
                       int threads, int procs) {
  EXPECTS(tasks >= 1 && fewest_rotations >= 1 && columns >= 1 && threads >= 1 && procs >= 1,
          "cpu_team_size: tasks=" + std::to_string(tasks) + ", fewest_rotations=" +
              std::to_string(fewest_rotations) + ", columns=" + std::to_string(columns) +
              ", threads=" + std::to_string(threads) + ", procs=" + std::to_string(procs) +
              " but expected each at least 1");
  // A team's members meet at a spinning barrier at every step of a rotation, so a member
  // that waits for a processor stalls the whole team (on one CPU, a team of two took 248 ms
  // for a MUX of tfhe_lib_128, one thread 29 ms): teams never take more threads than
  // processors.
  const auto usable = static_cast<std::size_t>(std::min(threads, procs));
  const std::size_t size = std::min(usable / tasks, fewest_rotations * columns);
  return size >= 2 ? static_cast<unsigned>(size) : 1;
}

bool simd_fft_preferred() {
#if defined(__AVX512F__)
  return true;
#else
  return false;
#endif
}

std::unique_ptr<NegacyclicFft> make_fft_engine(FftEngineKind kind, std::uint32_t polynomial_size) {
  switch (kind) {
    case FftEngineKind::Auto:
      if (polynomial_size >= 128 && simd_fft_preferred()) return std::make_unique<SimdFft>(polynomial_size);
      return std::make_unique<FftwFft>(polynomial_size);
    case FftEngineKind::Fftw: return std::make_unique<FftwFft>(polynomial_size);
    case FftEngineKind::Portable: return std::make_unique<PortableFft>(polynomial_size);
    case FftEngineKind::Simd: return std::make_unique<SimdFft>(polynomial_size);
  }
  throw InvalidArgument("make_fft_engine: unknown engine kind " +
                        std::to_string(static_cast<int>(kind)));
}

CpuKeyContext::CpuKeyContext(std::shared_ptr<const CloudKey> key, FftEngineKind fft)
    : key_(std::move(key)) {
  EXPECTS(key_ != nullptr, "CpuKeyContext: the cloud key is null");
  key_->parameters().validate();
  fft_ = make_fft_engine(fft, key_->parameters().polynomial_size);
  fourier_ = std::make_unique<BootstrappingKeyFourier>(key_->bootstrapping_key(), *fft_);
}

CpuKeyContext::CpuKeyContext(std::shared_ptr<const CloudKey> key,
                             std::shared_ptr<const NegacyclicFft> fft)
    : key_(std::move(key)), fft_(std::move(fft)) {
  EXPECTS(key_ != nullptr, "CpuKeyContext: the cloud key is null");
  EXPECTS(fft_ != nullptr, "CpuKeyContext: the FFT engine is null");
  key_->parameters().validate();
  EXPECTS(fft_->polynomial_size() == key_->parameters().polynomial_size,
          "CpuKeyContext: FFT engine '" + fft_->name() + "' is for N=" +
              std::to_string(fft_->polynomial_size()) + " but parameter set '" +
              key_->parameters().name + "' has N=" +
              std::to_string(key_->parameters().polynomial_size));
  fourier_ = std::make_unique<BootstrappingKeyFourier>(key_->bootstrapping_key(), *fft_);
}

struct CpuBackend::Workspace {
  Workspace(const CpuKeyContext& ctx, std::size_t rotations)
      : rotator(ctx.fourier_key(), ctx.fft(), rotations) {
    const Parameters& p = ctx.parameters();
    const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
    pre.resize(rotations * n1);
    extracted.resize(rotations * big1);
    ks_out.resize(rotations * n1);
  }
  BlindRotator rotator;
  AlignedVector<Torus32> pre, extracted, ks_out;
};

CpuBackend::CpuBackend(std::shared_ptr<const CloudKey> key, Threading threading,
                       CpuOptions options)
    : CpuBackend(std::make_shared<const CpuKeyContext>(std::move(key), options.fft), threading,
                 options) {}

CpuBackend::CpuBackend(std::shared_ptr<const CpuKeyContext> context, Threading threading,
                       CpuOptions options)
    : context_(std::move(context)), threading_(threading), options_(options) {
  EXPECTS(context_ != nullptr, "CpuBackend: the key context is null");
  EXPECTS(options_.task_size >= 2 && options_.task_size <= 4096,
          "CpuBackend: task_size=" + std::to_string(options_.task_size) +
              " but expected 2..4096 (a MUX needs two rotations in one task)");
  EXPECTS(options_.threads >= 0 && options_.threads <= max_threads,
          "CpuBackend: threads=" + std::to_string(options_.threads) +
              " but expected 0 (the OpenMP default) to " + std::to_string(max_threads) +
              " (each thread gets a workspace)");
  EXPECTS(options_.team_processors >= 0 && options_.team_processors <= max_threads,
          "CpuBackend: team_processors=" + std::to_string(options_.team_processors) +
              " but expected 0 (the processors this process may run on) to " +
              std::to_string(max_threads));
  threads_ = threading_ == Threading::Sequential ? 1
             : options_.threads > 0              ? options_.threads
                                                 : omp_get_max_threads();
  EXPECTS(threads_ <= max_threads,
          "CpuBackend: threads=0 takes the OpenMP default (OMP_NUM_THREADS or "
          "omp_set_num_threads), which is " + std::to_string(threads_) +
              " but expected at most " + std::to_string(max_threads) +
              " (each thread gets a workspace): set OMP_NUM_THREADS to " +
              std::to_string(max_threads) + " or fewer, or CpuOptions::threads to 1.." +
              std::to_string(max_threads));
  for (int t = 0; t < threads_; ++t) {
    workspaces_.push_back(std::make_unique<Workspace>(*context_, options_.task_size));
  }
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::name() const {
  return threading_ == Threading::Sequential ? "sequential"
                                             : "openmp(" + std::to_string(threads_) + ")";
}

BitBuffer<CpuStorage> CpuBackend::allocate(std::size_t count) {
  auto s = std::make_unique<Storage>();
  s->owner = this;
  s->owner_serial = serial_;
  s->batch = LweBatch(parameters().lwe_dimension, count);
  return BitBuffer<Storage>(std::move(s), count);
}

BitBuffer<CpuStorage> CpuBackend::upload(const LweBatch& batch) {
  EXPECTS(batch.lwe_dimension() == parameters().lwe_dimension,
          "CpuBackend::upload: batch has n=" + std::to_string(batch.lwe_dimension()) +
              " but parameter set '" + parameters().name + "' has n=" +
              std::to_string(parameters().lwe_dimension));
  auto s = std::make_unique<Storage>();
  s->owner = this;
  s->owner_serial = serial_;
  s->batch = batch;
  return BitBuffer<Storage>(std::move(s), batch.count());
}

LweBatch CpuBackend::download(BitSpan<Storage> bits) const {
  check_own_span(bits, [this](const Storage* s) { return owns(s); }, "CpuBackend::download");
  LweBatch out(parameters().lwe_dimension, bits.count);
  for (std::size_t i = 0; i < bits.count; ++i) {
    const auto src = bits.storage->batch.sample(bits.offset + i);
    std::copy(src.begin(), src.end(), out.sample(i).begin());
  }
  return out;
}

void CpuBackend::prepare_rotations(Workspace& ws, std::span<const GateOp<Storage>> batch,
                                          std::span<const BootJob> jobs) {
  const std::size_t n1 = parameters().lwe_dimension + 1;
  std::size_t r = 0;
  for (const BootJob& job : jobs) {
    const GateOp<Storage>& op = batch[job.op];
    const Torus32* in[3] = {};
    for (int j = 0; j < op.spec.arity; ++j) {
      in[j] = op.in[j].storage->batch.sample(op.in[j].offset + job.element).data();
    }
    if (op.spec.kind == GateKind::Mux) {
      // MUX(a, b, c) = KS(BR(-1/8 + a + b) + BR(-1/8 - a + c) + 1/8).
      const Torus32* ab[2] = {in[0], in[1]};
      const Torus32* ac[2] = {in[0], in[2]};
      const Torus32 w1[2] = {1, 1}, w2[2] = {Torus32(-1), 1};
      linear_combination(ws.pre.data() + r * n1, n1, eighths(-1), ab, w1);
      linear_combination(ws.pre.data() + (r + 1) * n1, n1, eighths(-1), ac, w2);
      r += 2;
    } else {
      const Torus32 w[3] = {static_cast<Torus32>(op.spec.weights[0]),
                            static_cast<Torus32>(op.spec.weights[1]),
                            static_cast<Torus32>(op.spec.weights[2])};
      linear_combination(ws.pre.data() + r * n1, n1, eighths(op.spec.offset_eighths),
                         std::span<const Torus32* const>(in, op.spec.arity),
                         std::span<const Torus32>(w, op.spec.arity));
      r += 1;
    }
  }
}

void CpuBackend::compact_extracted(Workspace& ws, std::span<const GateOp<Storage>> batch,
                                   std::span<const BootJob> jobs) {
  const std::size_t big1 = parameters().extracted_lwe_dimension() + 1;
  // Key-switching inputs, compacted in place: job g's extracted sample moves to slot g
  // (g <= its first slot, so a forward copy never overwrites a sample still to be read);
  // a MUX first sums its two samples and adds 1/8.
  std::size_t e = 0;
  for (std::size_t g = 0; g < jobs.size(); ++g) {
    Torus32* src = ws.extracted.data() + e * big1;
    if (batch[jobs[g].op].spec.kind == GateKind::Mux) {
      const Torus32* src2 = src + big1;
      for (std::size_t t = 0; t < big1; ++t) src[t] += src2[t];
      src[big1 - 1] += eighth;
      e += 2;
    } else {
      e += 1;
    }
    Torus32* dst = ws.extracted.data() + g * big1;
    if (src != dst) std::copy(src, src + big1, dst);
  }
}

void CpuBackend::switch_keys(Workspace& ws, std::span<const BootJob> jobs, unsigned part,
                             unsigned parts) {
  const Parameters& p = parameters();
  const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
  key_switch(context_->cloud_key().key_switching_key(),
             std::span<const Torus32>(ws.extracted.data(), jobs.size() * big1), jobs.size(),
             std::span<Torus32>(ws.ks_out.data(), jobs.size() * n1), part, parts);
}

void CpuBackend::store_results(Workspace& ws, std::span<const BootJob> jobs) {
  const std::size_t n1 = parameters().lwe_dimension + 1;
  for (std::size_t g = 0; g < jobs.size(); ++g) {
    std::copy(ws.ks_out.data() + g * n1, ws.ks_out.data() + (g + 1) * n1,
              results_.sample(jobs[g].result).begin());
  }
}

void CpuBackend::run_task(Workspace& ws, std::span<const GateOp<Storage>> batch,
                          std::span<const BootJob> jobs, ThreadTeam* team, unsigned member) {
  const Parameters& p = parameters();
  const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
  run_as_member(team, [&] {
    const TeamPart part = team_part(team, member, "CpuBackend::run_task");
    std::size_t r = 0;
    for (const BootJob& job : jobs) r += batch[job.op].spec.bootstraps();
    if (part.member == 0) prepare_rotations(ws, batch, jobs);
    part.sync();  // the rotations' inputs written
    ws.rotator.bootstrap_extract(std::span<const Torus32>(ws.pre.data(), r * n1), r, eighth,
                                 std::span<Torus32>(ws.extracted.data(), r * big1), team,
                                 member);
    if (part.member == 0) compact_extracted(ws, batch, jobs);
    part.sync();  // the key-switching inputs compacted
    switch_keys(ws, jobs, part.member, part.members);
    part.sync();  // every output word switched
    if (part.member == 0) store_results(ws, jobs);
  });
}

void CpuBackend::evaluate(std::span<const GateOp<Storage>> batch) {
  const ExclusiveCalls::Scope exclusive = calls_.enter("CpuBackend::evaluate");
  validate_batch<Storage>(batch, [this](const Storage* s) { return owns(s); },
                          "CpuBackend::evaluate");
  const Parameters& p = parameters();
  const std::size_t n1 = p.lwe_dimension + 1;
  std::size_t total = 0;
  for (const auto& op : batch) total += op.out.count;
  if (results_.count() < total) results_ = LweBatch(p.lwe_dimension, total);

  // Free gates now; bootstrapped gates become jobs.
  jobs_.clear();
  job_boots_.clear();
  // Counted here, added to stats_ with the other counters after success: a batch that throws
  // leaves every counter as it was.
  std::array<std::uint64_t, gate_kind_count> by_kind{};
  std::size_t rotations = 0, result = 0;
  for (std::size_t o = 0; o < batch.size(); ++o) {
    const GateOp<Storage>& op = batch[o];
    for (std::size_t e = 0; e < op.out.count; ++e, ++result) {
      auto out = results_.sample(result);
      switch (op.spec.kind) {
        case GateKind::Constant: trivial_lwe(out, encode_bit(op.spec.constant_value)); break;
        case GateKind::Copy:
        case GateKind::Not: {
          const auto in = op.in[0].storage->batch.sample(op.in[0].offset + e);
          const bool negate = op.spec.kind == GateKind::Not;
          for (std::size_t t = 0; t < n1; ++t) out[t] = negate ? Torus32{0} - in[t] : in[t];
          break;
        }
        default:
          jobs_.push_back({o, e, result});
          job_boots_.push_back(static_cast<std::uint32_t>(op.spec.bootstraps()));
          rotations += job_boots_.back();
      }
    }
    by_kind[static_cast<std::size_t>(op.spec.kind)] += op.out.count;
  }

  cpu_task_starts(job_boots_, options_.task_size, threads_, task_starts_);
  const auto tasks = static_cast<std::ptrdiff_t>(task_starts_.size() - 1);

  auto job_span = [&](std::ptrdiff_t t) {
    const std::size_t b = task_starts_[static_cast<std::size_t>(t)];
    const std::size_t e = task_starts_[static_cast<std::size_t>(t) + 1];
    return std::span<const BootJob>(jobs_.data() + b, e - b);
  };
  if (threading_ == Threading::Sequential) {
    for (std::ptrdiff_t t = 0; t < tasks; ++t) run_task(*workspaces_[0], batch, job_span(t));
  } else {
    // No exception may leave the parallel region: keep the first, rethrow after it. A team's
    // other members stop with TeamAborted when one fails; that member's error is the one kept.
    std::exception_ptr error;
    auto guarded = [&](auto&& work) {
      try {
        work();
      } catch (const TeamAborted&) {
      } catch (...) {
#pragma omp critical(torusgate_cpu_error)
        if (!error) error = std::current_exception();
      }
    };
    auto run_alone = [&] {
#pragma omp for schedule(dynamic, 1)
      for (std::ptrdiff_t t = 0; t < tasks; ++t) {
        guarded([&] {
          run_task(*workspaces_[static_cast<std::size_t>(omp_get_thread_num())], batch,
                   job_span(t));
        });
      }
    };
    std::size_t fewest = rotations;  // rotations of the smallest task
    for (std::ptrdiff_t t = 0; t < tasks; ++t) {
      std::size_t in_task = 0;
      for (std::size_t j = task_starts_[static_cast<std::size_t>(t)];
           j < task_starts_[static_cast<std::size_t>(t) + 1]; ++j) {
        in_task += job_boots_[j];
      }
      fewest = std::min(fewest, in_task);
    }
    // omp_get_num_procs(): the processors this thread may run on (its affinity mask; a CPU
    // quota or other processes are not seen), read at each batch since the mask may change.
    const int procs =
        options_.team_processors > 0 ? options_.team_processors : omp_get_num_procs();
    const unsigned team_size =
        tasks == 0 ? 1
                   : cpu_team_size(static_cast<std::size_t>(tasks), fewest,
                                   p.glwe_dimension + std::size_t{1}, threads_, procs);
    if (team_size == 1) {
#pragma omp parallel num_threads(threads_)
      run_alone();
    } else {
      // Fewer tasks than threads: each task on a team of team_size threads, which share its
      // rotations' work (BlindRotator, ThreadTeam) in the workspace of the team's first thread.
      std::vector<std::unique_ptr<ThreadTeam>> teams;
      for (std::ptrdiff_t t = 0; t < tasks; ++t) teams.push_back(std::make_unique<ThreadTeam>(team_size));
      const int want = static_cast<int>(tasks) * static_cast<int>(team_size);
#pragma omp parallel num_threads(want)
      {
        if (omp_get_num_threads() == want) {
          const auto id = static_cast<unsigned>(omp_get_thread_num());
          const std::size_t t = id / team_size;
          guarded([&] {
            run_task(*workspaces_[t * team_size], batch, job_span(static_cast<std::ptrdiff_t>(t)),
                     teams[t].get(), id % team_size);
          });
        } else {
          run_alone();  // OpenMP gave fewer threads than asked: no full teams
        }
      }
    }
    if (error) std::rethrow_exception(error);
  }

  // Scatter: every input has been read, so outputs may alias inputs.
  result = 0;
  for (const auto& op : batch) {
    for (std::size_t e = 0; e < op.out.count; ++e, ++result) {
      const auto src = results_.sample(result);
      std::copy(src.begin(), src.end(), op.out.storage->batch.sample(op.out.offset + e).begin());
    }
  }
  stats_.batches += 1;
  stats_.gates += total;
  for (std::size_t k = 0; k < gate_kind_count; ++k) stats_.gates_by_kind[k] += by_kind[k];
  stats_.bootstraps += rotations;
  if (rotations > 0) stats_.bootstrap_batches += 1;
}

}  // namespace torusgate
