// CudaBackend: the backend contract on the device engine (cuda_engine.hpp). Host C++ only,
// built with or without CUDA: validation, storage, transfers, the batch plan and statistics
// live here; the device work is the engine's.
#include "torusgate/gpu/cuda_backend.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "batch_builder.hpp"
#include "cuda_engine.hpp"
#include "fused_rotation.hpp"
#include "ks_gemm.hpp"

namespace torusgate {
namespace {

gpu::detail::Shape shape_of(const Parameters& p, std::uint32_t unroll = 1) {
  return gpu::detail::Shape{p.lwe_dimension,  p.glwe_dimension, p.polynomial_size,
                            p.bk_base_log,    p.bk_level_count, p.ks_base_log,
                            p.ks_level_count, unroll};
}

}  // namespace

const char* gpu_engine_name(GpuEngine engine) {
  switch (engine) {
    case GpuEngine::cufft: return "cufft";
    case GpuEngine::fused: return "fused";
  }
  return "unknown";
}

std::uint32_t fused_max_registers() {
#if defined(TORUSGATE_FUSED_MAX_REGISTERS)
  return TORUSGATE_FUSED_MAX_REGISTERS;
#else
  return 0;
#endif
}

const char* gpu_key_switching_name(GpuKeySwitching key_switching) {
  switch (key_switching) {
    case GpuKeySwitching::gather: return "gather";
    case GpuKeySwitching::tensor_core: return "tensor_core";
    case GpuKeySwitching::automatic: return "automatic";
  }
  return "unknown";
}

const char* gpu_transfer_name(GpuTransfer transfer) {
  switch (transfer) {
    case GpuTransfer::direct: return "direct";
    case GpuTransfer::pinned: return "pinned";
  }
  return "unknown";
}

namespace {

// How validate_cuda_options' messages name an option and its value: as a CudaOptions field
// ("CudaOptions: fused_lanes=2 ...") or as the programs' command-line flag ("--fused-lanes 2
// ...").
class OptionText {
 public:
  explicit OptionText(CudaOptionNames names) : flags_(names == CudaOptionNames::flags) {}

  bool flags() const { return flags_; }
  // What every message starts with.
  const char* prefix() const { return flags_ ? "" : "CudaOptions: "; }
  // "fused_lanes" or "--fused-lanes".
  std::string name(std::string_view field) const {
    if (!flags_) return std::string(field);
    for (const auto& [f, flag] : flag_of)
      if (f == field) return flag;
    return "CudaOptions::" + std::string(field);  // set by library callers only
  }
  // "fused_lanes=2" or "--fused-lanes 2".
  std::string is(std::string_view field, const std::string& value) const {
    const std::string n = name(field);
    return n + (n.starts_with("--") ? " " : "=") + value;
  }
  std::string is(std::string_view field, std::uint64_t value) const {
    return is(field, std::to_string(value));
  }
  // A size in bytes as its option takes it: "memory_budget_bytes=1048576" or
  // "--memory-budget-mb 1".
  std::string size_is(std::string_view field, std::size_t bytes) const {
    return flags_ ? is(field, std::to_string(bytes >> 20)) : is(field, bytes);
  }
  // A size the option needs: "1048576" or "2 MiB" (rounded up, the flag's unit).
  std::string size_text(std::size_t bytes) const {
    constexpr std::size_t mib = std::size_t{1} << 20;
    return flags_ ? std::to_string((bytes + mib - 1) / mib) + " MiB" : std::to_string(bytes);
  }

 private:
  static constexpr std::pair<std::string_view, const char*> flag_of[] = {
      {"device", "--device"},
      {"engine", "--gpu-engine"},
      {"key_switching", "--key-switching"},
      {"transfer", "--transfer"},
      {"staging_bytes", "--staging-mb"},
      {"memory_budget_bytes", "--memory-budget-mb"},
      {"fused_groups", "--fused-groups"},
      {"fused_rotations_per_block", "--fused-rotations"},
      {"fused_cluster_blocks", "--fused-cluster"},
      {"fused_lanes", "--fused-lanes"},
      {"fused_cluster_points", "--fused-cluster-points"},
      {"fused_cluster_sums", "--fused-cluster-sums"},
      {"fused_bundle", "--fused-bundle"},
      {"fused_bundle_overlap", "--fused-bundle-overlap"},
      {"fused_key_stage", "--fused-key-stage"},
  };
  bool flags_;
};

}  // namespace

void validate_cuda_options(const CudaOptions& o, const Parameters& p, std::uint32_t unroll,
                           CudaOptionNames names) {
  const OptionText t(names);
  const std::string pre = t.prefix();
  const std::string cufft = t.is("engine", "cufft"), fused = t.is("engine", "fused");
  EXPECTS(o.device >= 0, pre + t.is("device", std::to_string(o.device)) +
                             " but expected 0 or more (an index of gpu::devices())");
  EXPECTS(o.max_cached_workspaces >= 1 && o.max_cached_workspaces <= 64,
          pre + t.is("max_cached_workspaces", o.max_cached_workspaces) + " but expected 1..64");
  EXPECTS(o.engine == GpuEngine::cufft || o.engine == GpuEngine::fused,
          pre + t.is("engine", std::to_string(static_cast<int>(o.engine))) +
              " but expected GpuEngine::cufft or GpuEngine::fused");
  EXPECTS(o.key_switching == GpuKeySwitching::gather ||
              o.key_switching == GpuKeySwitching::tensor_core ||
              o.key_switching == GpuKeySwitching::automatic,
          pre + t.is("key_switching", std::to_string(static_cast<int>(o.key_switching))) +
              " but expected GpuKeySwitching::gather, tensor_core or automatic");
  EXPECTS(o.transfer == GpuTransfer::direct || o.transfer == GpuTransfer::pinned,
          pre + t.is("transfer", std::to_string(static_cast<int>(o.transfer))) +
              " but expected GpuTransfer::direct or GpuTransfer::pinned");
  EXPECTS(o.staging_bytes >= (std::size_t{64} << 10) &&
              o.staging_bytes <= (std::size_t{1} << 30) && o.staging_bytes % 4 == 0,
          pre + t.size_is("staging_bytes", o.staging_bytes) +
              (t.flags() ? " but expected 1..1024 (MiB)"
                         : " but expected a multiple of 4 from 65536 (64 KiB) to 1073741824 "
                           "(1 GiB)"));
  check_unroll(unroll, pre + "the bootstrapping key");
  const gpu::detail::Shape shape = shape_of(p, unroll);
  const std::string cluster = t.name("fused_cluster_blocks"),
                    points_name = t.name("fused_cluster_points"), bundle = t.name("fused_bundle");
  if (unroll > 1) {
    // The group step has no staged (R > 1) program (valid_unrolled); its lanes: below.
    EXPECTS(o.fused_rotations_per_block <= 1,
            pre + t.is("fused_rotations_per_block", o.fused_rotations_per_block) +
                " but an unrolled bootstrapping key runs one rotation slot per block (0 or 1)");
  }
  if (o.engine == GpuEngine::fused) {
    const char* why = gpu::kernel::fused::unsupported_reason(shape);
    EXPECTS(why == nullptr, pre + fused + " cannot run parameter set '" + p.name + "' (k=" +
                                std::to_string(p.glwe_dimension) + ", N=" +
                                std::to_string(p.polynomial_size) + "): " + (why ? why : "") +
                                "; use " + (t.flags() ? cufft : "GpuEngine::cufft"));
  }
  if (o.key_switching != GpuKeySwitching::gather) {
    // Refuses shapes whose int32 plane products could overflow (never a valid set).
    gpu::kernel::ks_gemm::make_layout(gpu::kernel::make_key_switch(
        shape.ks_base_log, shape.ks_level_count, shape.n, shape.extracted_dimension()));
  }
  EXPECTS(o.fused_groups == 0 || gpu::kernel::fused::valid_groups(o.fused_groups, shape),
          pre + t.is("fused_groups", o.fused_groups) + " but parameter set '" + p.name +
              "' takes 0 (automatic), 1, " + std::to_string(shape.k1()) + " (k+1) or " +
              std::to_string(shape.rows()) + " ((k+1)l)");
  EXPECTS(o.fused_rotations_per_block <= gpu::kernel::fused::max_rotations_per_block,
          pre + t.is("fused_rotations_per_block", o.fused_rotations_per_block) +
              " but expected 0 (automatic) to " +
              std::to_string(gpu::kernel::fused::max_rotations_per_block));
  EXPECTS(o.fused_cluster_blocks <= 1 ||
              gpu::kernel::fused::valid_cluster(o.fused_cluster_blocks, shape),
          pre + t.is("fused_cluster_blocks", o.fused_cluster_blocks) + " but parameter set '" +
              p.name + "' takes 0 (automatic), 1 (none), " + std::to_string(shape.k1()) +
              " (k+1)" +
              (shape.rows() <= gpu::kernel::fused::max_cluster_blocks
                   ? " or " + std::to_string(shape.rows()) + " ((k+1)l)"
                   : " ((k+1)l = " + std::to_string(shape.rows()) + " is above the portable " +
                         "cluster size of " +
                         std::to_string(gpu::kernel::fused::max_cluster_blocks) + ")"));
  EXPECTS(o.fused_cluster_blocks <= 1 || (o.fused_groups <= 1 && o.fused_rotations_per_block <= 1),
          pre + t.is("fused_cluster_blocks", o.fused_cluster_blocks) +
              " runs one group and one rotation per block; " +
              t.is("fused_groups", o.fused_groups) + " and " +
              t.is("fused_rotations_per_block", o.fused_rotations_per_block) +
              " must be 0 or 1 with it");
  EXPECTS(o.fused_lanes <= 1 || gpu::kernel::fused::valid_lanes(o.fused_lanes, shape),
          pre + t.is("fused_lanes", o.fused_lanes) + " but parameter set '" + p.name +
              "' takes 0 (automatic)" +
              (shape.k1() == gpu::kernel::fused::lanes_columns
                   ? ", 1 or " + std::to_string(gpu::kernel::fused::max_lanes)
                   : std::string(" or 1 (") + std::to_string(gpu::kernel::fused::max_lanes) +
                         " rotations per thread need k = 1)"));
  EXPECTS(o.fused_lanes <= 1 ||
              (o.fused_groups <= 1 && o.fused_rotations_per_block <= 1 && o.fused_cluster_blocks <= 1),
          pre + t.is("fused_lanes", o.fused_lanes) +
              " runs one group, one rotation slot per block and no cluster; " +
              t.is("fused_groups", o.fused_groups) + ", " +
              t.is("fused_rotations_per_block", o.fused_rotations_per_block) + " and " +
              t.is("fused_cluster_blocks", o.fused_cluster_blocks) + " must be 0 or 1 with it");
  {
    namespace fz = gpu::kernel::fused;
    // The four options that decide whether a cluster runs, as the refusals below name them.
    auto cluster_shape = [&] {
      return t.is("fused_cluster_blocks", o.fused_cluster_blocks) + ", " +
             t.is("fused_groups", o.fused_groups) + ", " +
             t.is("fused_rotations_per_block", o.fused_rotations_per_block) + " and " +
             t.is("fused_lanes", o.fused_lanes);
    };
    // An option of three values: 0 (automatic), 1 and 2, what 1 and 2 mean in brackets.
    auto expect_three = [&](const char* field, std::uint32_t value, const char* one,
                            const char* two) {
      EXPECTS(value <= 2, pre + t.is(field, value) + " but expected 0 (automatic), 1 (" + one +
                              ") or 2 (" + two + ")");
    };
    const std::uint32_t points = o.fused_cluster_points;
    EXPECTS(points == 0 || points == fz::points_per_thread || points == fz::wide_points,
            pre + t.is("fused_cluster_points", points) + " but expected 0 (automatic), " +
                std::to_string(fz::points_per_thread) + " or " +
                std::to_string(fz::wide_points) + " (wide clusters)");
    EXPECTS(points != fz::wide_points || fz::valid_wide(shape),
            pre + t.is("fused_cluster_points", points) + " but parameter set '" + p.name +
                "' has N=" + std::to_string(shape.N) + "; wide clusters run N = " +
                std::to_string(2u << fz::first_fixed_log2) + ", " +
                std::to_string(4u << fz::first_fixed_log2) + " or " +
                std::to_string(2u << fz::last_fixed_log2));
    EXPECTS(points != fz::wide_points || o.fused_cluster_blocks > 1 || o.fused_shape_automatic(),
            pre + t.is("fused_cluster_points", points) +
                " sets the points per thread of a cluster, but " + cluster_shape() +
                " run none (a cluster needs " + cluster + " above 1, or all four 0)");
    const std::uint32_t sums = o.fused_cluster_sums;
    static_assert(fz::every_block_sums == 2);
    expect_three("fused_cluster_sums", sums, "each column's owner sums it",
                 "every block sums the column its row decomposes");
    if (sums == fz::every_block_sums) {
      const std::uint32_t rows = shape.rows();
      EXPECTS(fz::every_block_sums_fit(rows, shape),
              pre + t.is("fused_cluster_sums", 2) +
                  " needs clusters of (k+1)l blocks with two inbox buffers, but parameter set '" +
                  p.name + "' has (k+1)l=" + std::to_string(rows) +
                  (rows > fz::max_cluster_blocks
                       ? ", above the portable cluster size of " +
                             std::to_string(fz::max_cluster_blocks)
                       : ", whose blocks would need " +
                             std::to_string(fz::cluster_block_bytes_with(shape, rows, 2) / 1024) +
                             " KiB of shared memory with two inbox buffers (at most " +
                             std::to_string(fz::cluster_shared_room / 1024) + ")") +
                  "; 0 or 1 sums by owners");
      EXPECTS(o.fused_cluster_blocks == rows ||
                  (o.fused_cluster_blocks == 0 && o.fused_shape_automatic()),
              pre + t.is("fused_cluster_sums", 2) +
                  " sums in every block of a cluster of (k+1)l=" + std::to_string(rows) +
                  " blocks, but " + cluster_shape() + " (" + cluster + " must be " +
                  std::to_string(rows) + ", or all four 0)");
    }
    if (o.engine == GpuEngine::fused && unroll > fz::max_kernel_unroll) {
      // Key bits in fours: bundled clusters of 8 points per thread for every chunk.
      EXPECTS(o.fused_bundle != 1 && o.fused_cluster_blocks != 1 && o.fused_groups <= 1 &&
                  o.fused_rotations_per_block <= 1 && o.fused_lanes <= 1 &&
                  points != fz::wide_points,
              pre + "a bootstrapping key in fours (unroll " + std::to_string(unroll) +
                  ") runs on the fused engine's bundled clusters of 8 points per thread only, "
                  "but " + t.is("fused_bundle", o.fused_bundle) + ", " +
                  t.is("fused_cluster_points", points) + ", " + cluster_shape() + " (" + bundle +
                  " 0 or 2, " + cluster + " 0 or a cluster size, the others 0 or 1, " +
                  points_name + " 0 or 8; or " + cufft + ")");
    }
    expect_three("fused_bundle", o.fused_bundle, "never",
                 "an unrolled key's group steps on bundled keys where a chunk runs on a cluster");
    if (o.fused_bundle == 2) {
      EXPECTS(o.engine == GpuEngine::fused && unroll > 1,
              pre + t.is("fused_bundle", 2) + " bundles the fused engine's group steps, but " +
                  (o.engine != GpuEngine::fused ? cufft
                                                : "the bootstrapping key is not unrolled (unroll 1)") +
                  "; it needs " + fused + " and a key in pairs or threes (0 or 1 otherwise)");
      EXPECTS(points != fz::wide_points,
              pre + t.is("fused_bundle", 2) + " runs on clusters of 8 points per thread, but " +
                  t.is("fused_cluster_points", 4) +
                  " (wide clusters have no bundled steps; 0 or 8 with it)");
      EXPECTS(o.fused_cluster_blocks > 1 || o.fused_shape_automatic(),
              pre + t.is("fused_bundle", 2) + " runs on clusters, but " + cluster_shape() +
                  " run none (" + cluster + " above 1, or all four 0)");
    }
    expect_three("fused_bundle_overlap", o.fused_bundle_overlap, "never",
                 "the rotation starts while its bundled keys are made");
    if (o.fused_bundle_overlap == 2) {
      const bool bundling = o.engine == GpuEngine::fused && unroll > 1 &&
                            (o.fused_bundle == 2 || unroll > fz::max_kernel_unroll);
      EXPECTS(bundling,
              pre + t.is("fused_bundle_overlap", 2) +
                  " starts a rotation while its bundled keys are made, but " +
                  (o.engine != GpuEngine::fused
                       ? cufft
                       : unroll == 1 ? std::string("the bootstrapping key is not unrolled (unroll 1)")
                                     : t.is("fused_bundle", o.fused_bundle) + " with a key in " +
                                           (unroll == 2 ? "pairs" : "threes")) +
                  ", so nothing is bundled (it needs " + fused + " and " +
                  t.is("fused_bundle", 2) + " with a key in pairs or threes, or a key in fours; 0 "
                  "or 1 otherwise)");
    }
    expect_three("fused_key_stage", o.fused_key_stage, "never",
                 "the key rows of one-group blocks through a stage the TMA fills");
    if (o.fused_key_stage == 2) {
      EXPECTS(o.engine == GpuEngine::fused && unroll == 1,
              pre + t.is("fused_key_stage", 2) +
                  " stages the fused engine's key rows for the standard key, but " +
                  (o.engine != GpuEngine::fused
                       ? cufft
                       : "the bootstrapping key is unrolled (unroll " + std::to_string(unroll) +
                             ")") +
                  "; it needs " + fused + " and unroll 1 (0 or 1 otherwise)");
      EXPECTS(fz::valid_wide(shape),
              pre + t.is("fused_key_stage", 2) + " runs the kernels of N = " +
                  std::to_string(2u << fz::first_fixed_log2) + ", " +
                  std::to_string(4u << fz::first_fixed_log2) + " or " +
                  std::to_string(2u << fz::last_fixed_log2) + ", but parameter set '" + p.name +
                  "' has N=" + std::to_string(shape.N) + " (0 or 1 for it)");
      EXPECTS(o.fused_cluster_blocks <= 1 && o.fused_groups <= 1 &&
                  o.fused_rotations_per_block <= 1,
              pre + t.is("fused_key_stage", 2) +
                  " stages the key rows of blocks of one group and one rotation slot, but " +
                  t.is("fused_cluster_blocks", o.fused_cluster_blocks) + ", " +
                  t.is("fused_groups", o.fused_groups) + " and " +
                  t.is("fused_rotations_per_block", o.fused_rotations_per_block) +
                  " force blocks that never stage (each 0 or 1 with it)");
    }
  }
  if (o.memory_budget_bytes != 0) {
    const std::size_t per_rotation = gpu::detail::most_bytes_per_rotation(shape, o);
    EXPECTS(o.memory_budget_bytes >= 2 * per_rotation,
            pre + t.size_is("memory_budget_bytes", o.memory_budget_bytes) +
                " but parameter set '" + p.name + "' needs at least " +
                t.size_text(2 * per_rotation) + " (two blind rotations of " +
                std::to_string(per_rotation) + " bytes each" +
                (gpu::detail::may_bundle(shape, o) ? ", their bundled keys included" : "") +
                "); 0 chooses automatically");
  }
}

CudaBackend::CudaBackend(std::shared_ptr<const CloudKey> key, CudaOptions options)
    : key_(std::move(key)), options_(options) {
  EXPECTS(key_ != nullptr, "CudaBackend: the cloud key is null");
  const Parameters& p = key_->parameters();
  p.validate();
  const std::uint32_t unroll = key_->bootstrapping_key().unroll();
  validate_cuda_options(options_, p, unroll);
  const gpu::detail::Shape shape = shape_of(p, unroll);
  const auto bk = key_->bootstrapping_key().data();
  const auto ksk = key_->key_switching_key().data();
  EXPECTS(bk.size() == shape.bk_words() && ksk.size() == shape.ksk_words(),
          "CudaBackend: the cloud key holds " + std::to_string(bk.size()) + " + " +
              std::to_string(ksk.size()) + " words but parameter set '" + p.name +
              "' needs " + std::to_string(shape.bk_words()) + " + " +
              std::to_string(shape.ksk_words()));
  engine_ = std::make_unique<gpu::detail::CudaEngine>(shape, bk.data(), ksk.data(), options_);
}

CudaBackend::~CudaBackend() = default;

std::string CudaBackend::name() const { return "gpu(" + device().name + ")"; }

const gpu::DeviceInfo& CudaBackend::device() const { return engine_->device(); }

std::size_t CudaBackend::device_key_bytes() const { return engine_->key_bytes(); }

std::size_t CudaBackend::bytes_per_rotation() const {
  return gpu::detail::most_bytes_per_rotation(
      shape_of(parameters(), key_->bootstrapping_key().unroll()), options_);
}

CudaPhaseTimes CudaBackend::last_times() const {
  const ExclusiveCalls::Scope exclusive = calls_.enter("CudaBackend::last_times");
  return engine_->times();
}

BitBuffer<CudaStorage> CudaBackend::allocate(std::size_t count) {
  const ExclusiveCalls::Scope exclusive = calls_.enter("CudaBackend::allocate");
  return allocate_entered(count);
}

BitBuffer<CudaStorage> CudaBackend::allocate_entered(std::size_t count) {
  const std::size_t n1 = std::size_t{parameters().lwe_dimension} + 1;
  EXPECTS(count <= SIZE_MAX / 4 / n1, "CudaBackend::allocate: count=" + std::to_string(count) +
                                          " samples of " + std::to_string(n1) +
                                          " words do not fit in memory");
  auto s = std::make_unique<Storage>();
  s->owner = this;
  s->owner_serial = serial_;
  s->count = count;
  s->memory = engine_->allocate(count * n1);
  return BitBuffer<Storage>(std::move(s), count);
}

BitBuffer<CudaStorage> CudaBackend::upload(const LweBatch& batch) {
  const ExclusiveCalls::Scope exclusive = calls_.enter("CudaBackend::upload");
  EXPECTS(batch.lwe_dimension() == parameters().lwe_dimension,
          "CudaBackend::upload: batch has n=" + std::to_string(batch.lwe_dimension()) +
              " but parameter set '" + parameters().name + "' has n=" +
              std::to_string(parameters().lwe_dimension));
  BitBuffer<Storage> out = allocate_entered(batch.count());
  if (batch.count() > 0) {
    engine_->copy_to_device(out.storage().memory.get(), batch.data().data(), batch.data().size());
  }
  return out;
}

LweBatch CudaBackend::download(BitSpan<Storage> bits) const {
  const ExclusiveCalls::Scope exclusive = calls_.enter("CudaBackend::download");
  check_own_span(bits, [this](const Storage* s) { return owns(s); }, "CudaBackend::download");
  const std::size_t n1 = std::size_t{parameters().lwe_dimension} + 1;
  LweBatch out(parameters().lwe_dimension, bits.count);
  if (bits.count > 0) {
    engine_->copy_to_host(out.data().data(), bits.storage->device_data() + bits.offset * n1,
                          bits.count * n1);
  }
  return out;
}

void CudaBackend::evaluate(std::span<const GateOp<Storage>> batch) {
  const ExclusiveCalls::Scope exclusive = calls_.enter("CudaBackend::evaluate");
  validate_batch<Storage>(batch, [this](const Storage* s) { return owns(s); },
                          "CudaBackend::evaluate");
  const std::size_t n1 = std::size_t{parameters().lwe_dimension} + 1;
  const gpu::detail::BatchPlan plan = gpu::detail::build_batch_plan<Storage>(
      batch, n1, [](const Storage* s) { return s->device_data(); });
  engine_->evaluate(plan);
  for (const auto& op : batch) {
    stats_.gates_by_kind[static_cast<std::size_t>(op.spec.kind)] += op.out.count;
  }
  stats_.batches += 1;
  stats_.gates += plan.results;
  stats_.bootstraps += plan.rotations;
  if (plan.rotations > 0) stats_.bootstrap_batches += 1;
}

}  // namespace torusgate
