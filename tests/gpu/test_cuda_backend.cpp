// GPU tests of the CUDA backend (executable tests_gpu, ctest label gpu; its main skips with
// exit 77 where no CUDA device exists): every gate kind and random mixed batches of 1 to
// 100k gates decrypt as on the CPU backend, ciphertexts equal word for word, chunked and
// unchunked runs and graph and direct launches agree, aliasing, bad inputs, circuits run
// unchanged, several backends at once, timings and workspace reuse; the fused engine and the
// tensor-core key switching against the cuFFT engine and the CPU backend, word for word, for
// every launch shape; [slow]: 10^6 tfhe_lib_128 gates with zero errors on each engine.
// The same source builds tests_gpu_emulated: the backend compiled against the CUDA emulator
// (gpu/emu) on the CPU, every case run with its batches capped (gates_for).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend_fixtures.hpp"
#include "gpu_test_sets.hpp"
#include "test_support.hpp"
#include "torusgate/backends/backends.hpp"
#include "torusgate/circuits/circuits.hpp"
#include "torusgate/core/backend.hpp"
#include "torusgate/core/bootstrap.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_backend.hpp"
#include "torusgate/gpu/device.hpp"

#if defined(TORUSGATE_GPU_TEST_EMULATED)
#include <cuda_runtime.h>  // gpu/emu/include: the emulated device's free memory (gpu_with)

namespace cuda_emu {
void set_pinned_limit(std::size_t bytes);  // gpu/emu/src/emulator.hpp
void start_call_log();                     // gpu/emu/include/cuda_runtime.h
std::vector<std::string> stop_call_log();
}
#endif

using namespace torusgate;
using torusgate::test::all_specs;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::random_bits;
using torusgate::test::seeded_rng;

static_assert(Backend<CudaBackend>);

namespace {

#if defined(TORUSGATE_GPU_TEST_EMULATED)
constexpr bool emulated = true;
#else
constexpr bool emulated = false;
#endif

// A batch size: `on_gpu` in tests_gpu; at most `on_emulator` in tests_gpu_emulated, where the
// CUDA emulator (gpu/emu) runs the same code on the CPU, thousands of times slower.
std::size_t gates_for(std::size_t on_gpu, std::size_t on_emulator) {
  return emulated ? std::min(on_gpu, on_emulator) : on_gpu;
}

// One backend per parameter set for the executable: the key goes up once. Never destroyed
// (left to the process exit), so no CUDA call runs while the CUDA runtime shuts down.
// The cuFFT engine with the gather key switching (issue 3's backend; CudaOptions' defaults
// are the fused engine and automatic key switching).
CudaOptions cufft_options() {
  CudaOptions o;
  o.engine = GpuEngine::cufft;
  o.key_switching = GpuKeySwitching::gather;
  return o;
}

CudaBackend& gpu_for(const Parameters& p) {
  static auto* cache = new std::map<std::string, std::unique_ptr<CudaBackend>>;
  auto& be = (*cache)[p.name];
  if (!be) be = std::make_unique<CudaBackend>(keys_for(p).cloud, cufft_options());
  return *be;
}

// The emulated device's free memory once everything queued has run (nullopt on a GPU, whose
// allocations are made in pages).
std::optional<std::size_t> emulated_free_bytes() {
#if defined(TORUSGATE_GPU_TEST_EMULATED)
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    return std::nullopt;
  }
  return free_bytes;
#else
  return std::nullopt;
#endif
}

// Whether less than half the emulated device's memory is free (never on a GPU: there the
// count below bounds what the cached backends hold).
bool device_memory_low() {
#if defined(TORUSGATE_GPU_TEST_EMULATED)
  std::size_t free_bytes = 0, total_bytes = 0;
  return cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && free_bytes < total_bytes / 2;
#else
  return false;
#endif
}

// One backend per parameter set and options (engine, launch shape, key switching); only the
// most recently used are kept: 4 on the emulator, whose device memory is the host's, 8 on a
// GPU. When the emulator's memory runs low only the most recently used is spared, so a test
// holds a backend across one later gpu_with call at most (chunked and unchunked runs). Each holds its device keys and the workspaces of
// its last chunks (a chunk of 200 tfhe_lib_128 rotations on bundled keys in threes: 4 GB);
// kept all, the unrolled key's case filled an H200's 140 GB (docs/gpu.md section 6.31).
// unroll 2: the cloud key with an unrolled bootstrapping key (the same secret key).
CudaBackend& gpu_with(const Parameters& p, const CudaOptions& o, std::uint32_t unroll = 1) {
  static auto* cache = new std::map<std::string, std::unique_ptr<CudaBackend>>;
  static auto* made = new std::vector<std::string>;
  const std::string id = p.name + "/" + gpu_engine_name(o.engine) + "/" +
                         std::to_string(o.fused_groups) + "x" +
                         std::to_string(o.fused_rotations_per_block) + "x" +
                         std::to_string(o.fused_cluster_blocks) + "x" +
                         std::to_string(o.fused_lanes) + "x" +
                         std::to_string(o.fused_cluster_points) + "x" +
                         std::to_string(o.fused_cluster_sums) + "x" +
                         std::to_string(o.fused_bundle) + "x" +
                         std::to_string(o.fused_bundle_overlap) + "x" +
                         std::to_string(o.fused_key_stage) + "/" +
                         gpu_key_switching_name(o.key_switching) + "/" +
                         std::to_string(o.memory_budget_bytes) + "/u" + std::to_string(unroll);
  auto& be = (*cache)[id];
  if (be) {  // the most recently used last: a backend just asked for is never the one evicted
    made->erase(std::ranges::find(*made, id));
    made->push_back(id);
    return *be;
  }
  // Older backends go while the cache is full or, on the emulator, while half its 4 GiB is
  // taken: each backend on bundled keys holds a chunk's workspace of up to 2 GB there (31 MB of
  // bundled key a default_128 rotation in pairs), and three of them left the next no memory
  // (tests_gpu_emulated, when the random case order ran them back to back).
  while (!made->empty() &&
         (made->size() >= (emulated ? 4u : 8u) || (made->size() > 1 && device_memory_low()))) {
    cache->erase(made->front());
    made->erase(made->begin());
  }
  be = std::make_unique<CudaBackend>(keys_for(p, unroll).cloud, o);
  made->push_back(id);
  return *be;
}

CudaOptions fused_options(std::uint32_t groups = 0,
                          GpuKeySwitching ks = GpuKeySwitching::gather,
                          std::uint32_t rotations_per_block = 0, std::uint32_t cluster_blocks = 0,
                          std::uint32_t lanes = 0) {
  CudaOptions o;
  o.engine = GpuEngine::fused;
  o.fused_groups = groups;
  o.fused_rotations_per_block = rotations_per_block;
  o.fused_cluster_blocks = cluster_blocks;
  o.fused_lanes = lanes;
  o.key_switching = ks;
  return o;
}

// True when device 0 runs thread block clusters (compute capability 9.0 and later; the
// emulator's device is 9.0).
bool clusters_here() { return gpu::devices().at(0).compute_capability_major >= 9; }

OpenMpBackend& cpu_for(const Parameters& p, std::uint32_t unroll = 1) {
  static std::map<std::string, std::unique_ptr<OpenMpBackend>> cache;
  auto& be = cache[p.name + "/u" + std::to_string(unroll)];
  if (!be) be = std::make_unique<OpenMpBackend>(test::cpu_context_for(p, unroll));
  return *be;
}

// A batch described independently of the backend: ops over an input register and one
// output buffer, so the same batch runs on the CPU and the GPU backend.
struct OpPlan {
  GateSpec spec;
  std::array<std::size_t, 3> in{};
  std::size_t out = 0, count = 0;
};
struct BatchPlan {
  std::vector<std::uint8_t> inputs;  // the input register's plaintext
  std::vector<OpPlan> ops;
  std::size_t outputs = 0;
  std::vector<std::uint8_t> expected() const {
    std::vector<std::uint8_t> e(outputs);
    for (const OpPlan& op : ops) {
      for (std::size_t i = 0; i < op.count; ++i) {
        e[op.out + i] = op.spec.evaluate(inputs[op.in[0] + i], inputs[op.in[1] + i],
                                         inputs[op.in[2] + i]);
      }
    }
    return e;
  }
};

// `gates` output bits in runs of 1 to 64 of random gate kinds (every kind, MUX included)
// reading random runs of a register of inputs.
BatchPlan random_plan(Csprng& rng, std::size_t gates, std::size_t register_bits) {
  const auto specs = all_specs();
  BatchPlan plan;
  plan.inputs = random_bits(rng, register_bits);
  while (plan.outputs < gates) {
    OpPlan op;
    op.spec = specs[rng.uniform_below(specs.size())];
    op.count = std::min<std::size_t>(1 + rng.uniform_below(64), gates - plan.outputs);
    for (auto& in : op.in) in = rng.uniform_below(register_bits - op.count + 1);
    op.out = plan.outputs;
    plan.outputs += op.count;
    plan.ops.push_back(op);
  }
  return plan;
}

template <class B>
std::vector<GateOpOf<B>> make_ops(const BatchPlan& plan, const BufferOf<B>& in,
                                  const BufferOf<B>& out) {
  std::vector<GateOpOf<B>> ops;
  for (const OpPlan& op : plan.ops) {
    const auto span = [&](std::size_t j) {
      return j < op.spec.arity ? in.bits(op.in[j], op.count) : BitsOf<B>{};
    };
    ops.push_back(gate::make(op.spec, span(0), span(1), span(2), out.bits(op.out, op.count)));
  }
  return ops;
}

// Runs `plan` on backend `be` with the encrypted inputs `encrypted`; returns the output words.
template <class B>
LweBatch run_plan(B& be, const BatchPlan& plan, const LweBatch& encrypted) {
  const auto in = be.upload(encrypted);
  const auto out = be.allocate(plan.outputs);
  be.evaluate(make_ops<B>(plan, in, out));
  return be.download(out.bits());
}

std::uint64_t bootstraps_of(const BatchPlan& plan) {
  std::uint64_t b = 0;
  for (const OpPlan& op : plan.ops) b += std::uint64_t{op.count} * op.spec.bootstraps();
  return b;
}

// random_plan, drawn again until it holds a bootstrap: a small (emulated) batch may hold free
// gates only, which would run no rotation, chunk, launch shape or key switching at all.
BatchPlan plan_with_bootstrap(Csprng& rng, std::size_t gates, std::size_t max_run) {
  BatchPlan plan = random_plan(rng, gates, max_run);
  while (bootstraps_of(plan) == 0) plan = random_plan(rng, gates, max_run);
  return plan;
}

// The device phases of an evaluate() added up; they tile its evaluate_ms (each runs from the
// event where the one before it ended).
double phase_sum(const CudaPhaseTimes& t) {
  return t.tables_ms + t.linear_combination_ms + t.blind_rotation_ms + t.sample_extraction_ms +
         t.key_switching_ms + t.output_ms;
}

}  // namespace

TEST_CASE("every gate kind on every input combination, one mixed batch, every parameter set",
          "[gpu]") {
  using S = CudaStorage;
  // The named sets, and N = 512 (k = 1) and N = 2048 (k = 2).
  for (const Parameters& p : gpu::test::every_test_set()) {
    INFO("parameter set " << p.name);
    const std::uint64_t seed = catch_seed(0x9a7e);
    INFO("seed " << seed);
    Csprng rng = seeded_rng(seed);
    CudaBackend& be = gpu_for(p);
    const SecretKey& key = keys_for(p).secret;
    const test::TruthTableInputs t = test::truth_table_inputs();
    auto A = encrypt(be, key, t.a, rng), B = encrypt(be, key, t.b, rng),
         C = encrypt(be, key, t.c, rng);
    const auto specs = all_specs();
    auto out = be.allocate(8 * specs.size());
    const std::vector<GateOp<S>> batch = test::every_gate_batch<S>(A.bits(), B.bits(), C.bits(), out.bits());
    std::uint64_t bootstraps = 0;
    for (const GateSpec& spec : specs) bootstraps += 8 * static_cast<std::uint64_t>(spec.bootstraps());
    be.reset_stats();
    be.evaluate(batch);
    test::check_every_gate(decrypt(be, key, out.bits()), t);
    const BackendStats st = be.stats();
    CHECK(st.batches == 1);
    CHECK(st.gates == 8 * specs.size());
    CHECK(st.bootstraps == bootstraps);
    CHECK(st.bootstrap_batches == 1);
    CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Mux)] == 8);
    CHECK(decrypt(be, key, A.bits()) == t.a);  // inputs unchanged
    CHECK(decrypt(be, key, C.bits()) == t.c);
  }
}

TEST_CASE("random mixed batches of 1 to 100k gates decrypt as on the CPU backend", "[gpu]") {
  struct Case {
    Parameters params;
    std::size_t gates;
  };
  const std::vector<Case> cases = {
      {toy_insecure(), 1},      {toy_insecure(), 2},       {toy_insecure(), 3},
      {toy_insecure(), 17},     {toy_insecure(), 100},     {toy_insecure(), 1000},
      {toy_insecure(), 10000},  {toy_insecure(), 100000},  {toy_k2_insecure(), 777},
      {tfhe_lib_128(), 1},      {tfhe_lib_128(), 5},       {tfhe_lib_128(), 64},
      {tfhe_lib_128(), 1000},   {tfhe_lib_80(), 300},      {default_128(), 300},
      {gpu::test::sized_insecure(512, 1), 500}, {gpu::test::sized_insecure(2048, 2), 500}};
  for (const Case& c : cases) {
    const std::uint64_t seed = catch_seed(0x51 + c.gates);
    INFO("parameter set " << c.params.name << ", " << c.gates << " gates, seed " << seed);
    Csprng rng = seeded_rng(seed);
    const std::size_t gates = gates_for(c.gates, c.params.insecure ? 3000 : 16);
    const BatchPlan plan = random_plan(rng, gates, std::max<std::size_t>(gates, 128));
    const SecretKey& key = keys_for(c.params).secret;
    const LweBatch encrypted = encrypt_bits(key, plan.inputs, rng);
    CudaBackend& gpu = gpu_for(c.params);
    gpu.reset_stats();
    const LweBatch from_gpu = run_plan(gpu, plan, encrypted);
    const LweBatch from_cpu = run_plan(cpu_for(c.params), plan, encrypted);
    const auto gpu_bits = decrypt_bits(key, from_gpu);
    CHECK(gpu_bits == decrypt_bits(key, from_cpu));
    CHECK(gpu_bits == plan.expected());
    CHECK(gpu.stats().bootstraps == bootstraps_of(plan));
  }
}

TEST_CASE("GPU ciphertexts equal the CPU backend's word for word (exact FFT rounding)", "[gpu]") {
  // Both round every external product to the exact integer result, so the words agree; a
  // difference means a transform error above 1/2 somewhere (or a bug), even where the
  // decryptions still agree.
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), tfhe_lib_128(), default_128()}) {
    const std::uint64_t seed = catch_seed(0xe4ac7);
    INFO("parameter set " << p.name << ", seed " << seed);
    Csprng rng = seeded_rng(seed);
    const BatchPlan plan = plan_with_bootstrap(rng, gates_for(500, p.insecure ? 500 : 16), 500);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch from_gpu = run_plan(gpu_for(p), plan, encrypted);
    const LweBatch from_cpu = run_plan(cpu_for(p), plan, encrypted);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < plan.outputs; ++i) {
      differing += !std::equal(from_gpu.sample(i).begin(), from_gpu.sample(i).end(),
                               from_cpu.sample(i).begin());
    }
    INFO(differing << " of " << plan.outputs << " output samples differ");
    CHECK(differing == 0);
  }
}

TEST_CASE("chunked and unchunked runs give identical ciphertexts", "[gpu]") {
  for (const Parameters& p : {toy_insecure(), tfhe_lib_128()}) {
    const std::uint64_t seed = catch_seed(0xc4c);
    INFO("parameter set " << p.name << ", seed " << seed);
    Csprng rng = seeded_rng(seed);
    CudaBackend& whole = gpu_for(p);
    CudaOptions small = cufft_options();
    // Room for about 40 rotations: chunks of 32 (the largest bucket that fits).
    small.memory_budget_bytes = 40 * whole.bytes_per_rotation();
    CudaBackend chunked(keys_for(p).cloud, small);
    const BatchPlan plan =
        plan_with_bootstrap(rng, gates_for(p.insecure ? 3000 : 300, p.insecure ? 3000 : 40), 400);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch a = run_plan(whole, plan, encrypted);
    CHECK(whole.last_times().chunks == 1);
    const LweBatch b = run_plan(chunked, plan, encrypted);
    CHECK(chunked.last_times().chunks >= bootstraps_of(plan) / 32);
    CHECK(chunked.last_times().chunk_capacity <= 32);
    CHECK(a == b);
    CHECK(decrypt_bits(keys_for(p).secret, b) == plan.expected());
    const CudaPhaseTimes t = chunked.last_times();  // the phases tile the chunks too
    CHECK(phase_sum(t) == Approx(t.evaluate_ms).epsilon(1e-4));
    // 30 rotations: the workspace of 32 that the chunks made takes them whole (a batch that a
    // held workspace takes is not cut by the budget again).
    BatchPlan thirty;
    thirty.inputs = random_bits(rng, 60);
    thirty.ops.push_back(OpPlan{GateSpec::of(GateKind::Nand), {0, 30, 0}, 0, 30});
    thirty.outputs = 30;
    const LweBatch encrypted30 = encrypt_bits(keys_for(p).secret, thirty.inputs, rng);
    const LweBatch c = run_plan(chunked, thirty, encrypted30);
    CHECK(chunked.last_times().chunks == 1);
    CHECK(chunked.last_times().chunk_capacity == 32);
    CHECK(c == run_plan(whole, thirty, encrypted30));
    CHECK(decrypt_bits(keys_for(p).secret, c) == thirty.expected());
  }
}

TEST_CASE("CUDA graphs and direct launches compute the same ciphertexts", "[gpu]") {
  const Parameters p = toy_k2_insecure();
  const std::uint64_t seed = catch_seed(0x96);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  CudaOptions direct = cufft_options();
  direct.use_cuda_graphs = false;
  CudaBackend plain(keys_for(p).cloud, direct);
  const BatchPlan plan = random_plan(rng, 700, 300);
  const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
  CHECK(run_plan(plain, plan, encrypted) == run_plan(gpu_for(p), plan, encrypted));
}

TEST_CASE("outputs may alias inputs on the GPU: every input is read before any write", "[gpu]") {
  using S = CudaStorage;
  const Parameters p = toy_insecure();
  CudaBackend& be = gpu_for(p);
  const SecretKey& key = keys_for(p).secret;
  Csprng rng = seeded_rng(catch_seed(0xa11a5));
  const std::vector<std::uint8_t> a = {0, 1, 0, 1}, b = {0, 0, 1, 1};
  auto A = encrypt(be, key, a, rng), B = encrypt(be, key, b, rng);
  be.evaluate({gate::not_<S>(A.bits(), A.bits())});
  CHECK(decrypt(be, key, A.bits()) == std::vector<std::uint8_t>{1, 0, 1, 0});
  be.evaluate({gate::not_<S>(A.bits(), A.bits())});
  be.evaluate({gate::and_<S>(A.bits(), B.bits(), A.bits())});
  CHECK(decrypt(be, key, A.bits()) == std::vector<std::uint8_t>{0, 0, 0, 1});
  auto P = encrypt(be, key, std::vector<std::uint8_t>{1, 1, 0, 0}, rng);
  auto Q = encrypt(be, key, std::vector<std::uint8_t>{0, 1, 0, 1}, rng);
  be.evaluate({gate::copy<S>(P.bits(), Q.bits()), gate::copy<S>(Q.bits(), P.bits())});
  CHECK(decrypt(be, key, P.bits()) == std::vector<std::uint8_t>{0, 1, 0, 1});
  CHECK(decrypt(be, key, Q.bits()) == std::vector<std::uint8_t>{1, 1, 0, 0});
  auto X = encrypt(be, key, a, rng), Y = encrypt(be, key, b, rng);
  be.evaluate({gate::xor_<S>(X.bits(), Y.bits(), Y.bits()), gate::and_<S>(X.bits(), Y.bits(), X.bits())});
  CHECK(decrypt(be, key, Y.bits()) == std::vector<std::uint8_t>{0, 1, 1, 0});
  CHECK(decrypt(be, key, X.bits()) == std::vector<std::uint8_t>{0, 0, 0, 1});
  auto Sel = encrypt(be, key, std::vector<std::uint8_t>{0, 1, 1, 0}, rng);
  auto T = encrypt(be, key, std::vector<std::uint8_t>{1, 1, 1, 1}, rng);
  auto E = encrypt(be, key, std::vector<std::uint8_t>{0, 0, 0, 0}, rng);
  be.evaluate({gate::mux<S>(Sel.bits(), T.bits(), E.bits(), Sel.bits())});
  CHECK(decrypt(be, key, Sel.bits()) == std::vector<std::uint8_t>{0, 1, 1, 0});
  auto R = encrypt(be, key, std::vector<std::uint8_t>{1, 0, 0, 1, 1, 0}, rng);
  be.evaluate({gate::nand<S>(R.bits(0, 4), R.bits(1, 4), R.bits(2, 4))});
  CHECK(decrypt(be, key, R.bits()) == std::vector<std::uint8_t>{1, 0, 1, 1, 1, 0});
  // Empty batches and batches of free gates only.
  be.reset_stats();
  be.evaluate(std::span<const GateOp<S>>{});
  be.evaluate({gate::constant<S>(true, R.bits(0, 2)), gate::not_<S>(R.bits(2, 2), R.bits(4, 2))});
  CHECK(decrypt(be, key, R.bits()) == std::vector<std::uint8_t>{1, 1, 1, 1, 0, 0});
  CHECK(be.stats().batches == 2);
  CHECK(be.stats().bootstraps == 0);
  CHECK(be.stats().bootstrap_batches == 0);
}

TEST_CASE("bad inputs to the GPU backend throw clear exceptions", "[gpu]") {
  using S = CudaStorage;
  const Parameters p = toy_insecure();
  CudaBackend& be = gpu_for(p);
  CudaBackend& other_set = gpu_for(toy_k2_insecure());
  CudaBackend same_set(keys_for(p).cloud);
  const SecretKey& key = keys_for(p).secret;
  Csprng rng = seeded_rng(11);
  auto A = encrypt(be, key, std::vector<std::uint8_t>{0, 1, 0, 1, 1, 1, 0, 0}, rng);
  auto out = be.allocate(8);
  auto foreign = encrypt(same_set, key, std::vector<std::uint8_t>(8, 1), rng);
  auto k2 = encrypt(other_set, keys_for(toy_k2_insecure()).secret, std::vector<std::uint8_t>(8, 1), rng);
  const BackendStats before = be.stats();

  // Samples of another dimension, a client key of another parameter set.
  REQUIRE_INVALID_ARGUMENT(be.upload(LweBatch(p.lwe_dimension + 1, 3)), "has n=65");
  REQUIRE_INVALID_ARGUMENT(encrypt(be, keys_for(tfhe_lib_128()).secret, std::vector<std::uint8_t>{1}, rng),
                           "the client key is for parameter set 'tfhe_lib_128'");
  REQUIRE_INVALID_ARGUMENT(decrypt(be, keys_for(toy_k2_insecure()).secret, A.bits()),
                           "the client key is for parameter set 'toy_k2_INSECURE'");
  // Spans of another backend: same parameter set, or another set's cloud key.
  REQUIRE_INVALID_ARGUMENT(be.evaluate({gate::and_<S>(A.bits(), foreign.bits(), out.bits())}),
                           "another backend");
  REQUIRE_INVALID_ARGUMENT(be.evaluate({gate::not_<S>(k2.bits(), out.bits())}), "another backend");
  REQUIRE_INVALID_ARGUMENT(be.download(foreign.bits()), "another backend");
  REQUIRE_INVALID_ARGUMENT(other_set.download(A.bits()), "another backend");
  // Bounds, lengths, overlaps.
  const BitSpan<S> past{&A.storage(), 6, 4};
  REQUIRE_INVALID_ARGUMENT(be.download(past), "ends at bit 10");
  REQUIRE_INVALID_ARGUMENT(be.evaluate({gate::and_<S>(A.bits(0, 4), A.bits(0, 3), out.bits(0, 4))}),
                           "input 1 has 3 bits");
  REQUIRE_INVALID_ARGUMENT(be.evaluate({gate::not_<S>(A.bits(0, 4), out.bits(0, 4)),
                                        gate::copy<S>(A.bits(4, 4), out.bits(2, 4))}),
                           "overlap");
  CHECK(be.stats().batches == before.batches);  // nothing evaluated or counted
  CHECK(decrypt(same_set, key, foreign.bits()) == std::vector<std::uint8_t>(8, 1));
  // Options: a device that does not exist, a budget below two rotations.
  CudaOptions o;
  o.device = static_cast<int>(gpu::devices().size());
  REQUIRE_INVALID_ARGUMENT(CudaBackend(keys_for(p).cloud, o), "CUDA device(s)");
  o = cufft_options();  // be's engine
  o.memory_budget_bytes = be.bytes_per_rotation();
  REQUIRE_INVALID_ARGUMENT(CudaBackend(keys_for(p).cloud, o), "memory_budget_bytes");
}

namespace {

// add, multiply, max, divide and remainder of signed 8-bit vectors through
// Program<CudaBackend> on `be`, checked against integer arithmetic.
void check_circuits(CudaBackend& be, std::uint64_t seed) {
  using namespace torusgate::circuits;
  const SecretKey& key = keys_for(be.parameters()).secret;
  Csprng rng = seeded_rng(seed);
  using Array = IntArray<CudaBackend>;
  const IntType type{8, true};
  const std::vector<std::int64_t> xs = {3, -7, 12, -1, 100, -128}, ys = {5, 6, -4, -1, 27, 1};
  const Array x = Array::encrypt_signed(be, key, xs, type, rng);
  const Array y = Array::encrypt_signed(be, key, ys, type, rng);
  Program<CudaBackend> prog(be);
  Circuit& c = prog.circuit();
  const Expr ex = prog.input(x), ey = prog.input(y);
  const DivisionResult qr = divide_with_remainder(c, ex, ey);
  const auto out =
      prog.run({add(c, ex, ey), multiply(c, ex, ey), max(c, ex, ey), qr.quotient, qr.remainder});
  auto wrap = [](std::int64_t v) { return static_cast<std::int64_t>(static_cast<std::int8_t>(v)); };
  std::vector<std::int64_t> sum, product, mx, quotient, remainder;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    sum.push_back(wrap(xs[i] + ys[i]));
    product.push_back(wrap(xs[i] * ys[i]));
    mx.push_back(std::max(xs[i], ys[i]));
    quotient.push_back(xs[i] / ys[i]);  // no divisor is 0
    remainder.push_back(xs[i] % ys[i]);
  }
  CHECK(out[0].decrypt_signed(be, key) == sum);
  CHECK(out[1].decrypt_signed(be, key) == product);
  CHECK(out[2].decrypt_signed(be, key) == mx);
  CHECK(out[3].decrypt_signed(be, key) == quotient);
  CHECK(out[4].decrypt_signed(be, key) == remainder);
}

}  // namespace

TEST_CASE("circuits run on the GPU backend unchanged", "[gpu]") {
  check_circuits(gpu_for(toy_insecure()), catch_seed(0xc1));
}

TEST_CASE("with_backend runs one generic lambda on the GPU as on the CPU backends", "[gpu]") {
  // torusgate/backends/backends.hpp: the GPU kind where a device is usable (here, or on the
  // CUDA emulator), the same computation and the same results as the sequential kind.
  REQUIRE(gpu_unavailable_reason().empty());
  CHECK(backend_kind("best") == BackendKind::gpu);
  const auto& keys = keys_for(toy_insecure());
  const std::vector<std::uint64_t> xs = {3, 200, 17, 255}, ys = {5, 100, 17, 1};
  const auto add_and_compare = [&](auto& be) {
    using B = std::decay_t<decltype(be)>;
    using Array = circuits::IntArray<B>;
    Csprng rng = seeded_rng(catch_seed(0xbac2));
    const Array x = Array::encrypt(be, keys.secret, xs, circuits::IntType{8, false}, rng);
    const Array y = Array::encrypt(be, keys.secret, ys, circuits::IntType{8, false}, rng);
    circuits::Program<B> prog(be);
    circuits::Circuit& c = prog.circuit();
    const circuits::Expr ex = prog.input(x), ey = prog.input(y);
    auto out = prog.run({circuits::add(c, ex, ey), circuits::less(c, ex, ey)});
    return std::make_pair(out[0].decrypt(be, keys.secret), out[1].decrypt(be, keys.secret));
  };
  const auto on_gpu = with_backend(BackendKind::gpu, keys.cloud, {}, add_and_compare);
  const auto on_cpu = with_backend(BackendKind::sequential, keys.cloud, {}, add_and_compare);
  CHECK(on_gpu == on_cpu);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CHECK(on_gpu.first[i] == ((xs[i] + ys[i]) & 0xff));
    CHECK(on_gpu.second[i] == static_cast<std::uint64_t>(xs[i] < ys[i]));
  }
}

TEST_CASE("several GPU backends at once: two parameter sets, and one per device", "[gpu]") {
  const std::uint64_t seed = catch_seed(0x2b);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const BatchPlan plan = random_plan(rng, 200, 200);
  const LweBatch in1 = encrypt_bits(keys_for(toy_insecure()).secret, plan.inputs, rng);
  const LweBatch in2 = encrypt_bits(keys_for(toy_k2_insecure()).secret, plan.inputs, rng);
  CudaBackend& one = gpu_for(toy_insecure());
  CudaBackend& two = gpu_for(toy_k2_insecure());
  auto i1 = one.upload(in1);
  auto i2 = two.upload(in2);
  auto o1 = one.allocate(plan.outputs);
  auto o2 = two.allocate(plan.outputs);
  one.evaluate(make_ops<CudaBackend>(plan, i1, o1));
  two.evaluate(make_ops<CudaBackend>(plan, i2, o2));
  CHECK(decrypt(one, keys_for(toy_insecure()).secret, o1.bits()) == plan.expected());
  CHECK(decrypt(two, keys_for(toy_k2_insecure()).secret, o2.bits()) == plan.expected());
  for (const auto& d : gpu::devices()) {
    INFO("device " << d.index << " " << d.name);
    CudaOptions o;
    o.device = d.index;
    CudaBackend be(keys_for(toy_insecure()).cloud, o);
    CHECK(be.device().index == d.index);
    CHECK(decrypt_bits(keys_for(toy_insecure()).secret, run_plan(be, plan, in1)) == plan.expected());
  }
}

TEST_CASE("phase timings are measured and workspaces are made once per batch size", "[gpu]") {
  const Parameters p = toy_insecure();
  CudaOptions o = cufft_options();
  o.max_cached_workspaces = 2;
  CudaBackend be(keys_for(p).cloud, o);
  const SecretKey& key = keys_for(p).secret;
  Csprng rng = seeded_rng(catch_seed(0x7e));
  const BatchPlan plan = random_plan(rng, 300, 300);
  const LweBatch encrypted = encrypt_bits(key, plan.inputs, rng);
  auto in = be.upload(encrypted);
  CHECK(be.last_times().upload_ms > 0);
  auto out = be.allocate(plan.outputs);
  const auto ops = make_ops<CudaBackend>(plan, in, out);
  be.evaluate(ops);
  const CudaPhaseTimes first = be.last_times();
  CHECK(first.setup_ms > 0);  // a new workspace (plans, graph)
  CHECK(first.blind_rotation_ms > 0);
  CHECK(first.key_switching_ms > 0);
  CHECK(first.sample_extraction_ms > 0);
  CHECK(first.linear_combination_ms > 0);
  CHECK(first.output_ms > 0);
  CHECK(first.evaluate_ms >= first.blind_rotation_ms + first.key_switching_ms);
  // The phases tile the evaluate (each from the end of the one before, a wait for the host's
  // next call included).
  CHECK(phase_sum(first) == Approx(first.evaluate_ms).epsilon(1e-4));
  CHECK(first.chunks == 1);
  be.evaluate(ops);
  CHECK(be.last_times().setup_ms == 0);  // the same size: the workspace is reused
  CHECK(decrypt(be, key, out.bits()) == plan.expected());
  CHECK(be.last_times().download_ms > 0);
  CHECK(be.device_key_bytes() > 0);
}

TEST_CASE("a second thread's allocate, upload, download and last_times are refused while "
          "evaluate runs, the running call unharmed", "[gpu]") {
  // The backend's stream, staging buffers and times serve one call at a time. Thread 0
  // evaluates a batch of NANDs over and over, a pause between two, from when thread 1 has
  // started until each of thread 1's four calls was refused once and ran once (in a pause),
  // or a minute passed: a deadline, not a count of evaluates, so a short GPU evaluate or a
  // thread 1 that a loaded machine starts late does not end the case first. Thread 1 makes
  // those calls in turn meanwhile. A refused call changes nothing; the calls that ran give
  // their own results.
  const Parameters p = toy_insecure();
  CudaBackend be(keys_for(p).cloud);
  const SecretKey& key = keys_for(p).secret;
  const auto seed = catch_seed(0xc0c1);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const std::size_t gates = gates_for(4000, 64);
  const std::vector<std::uint8_t> a = random_bits(rng, gates), b = random_bits(rng, gates);
  const auto xa = encrypt(be, key, a, rng), xb = encrypt(be, key, b, rng);
  auto out = be.allocate(gates);
  const std::vector<std::uint8_t> two = {1, 0};
  const LweBatch small = encrypt_bits(key, two, rng);
  const auto small_in = be.upload(small);
  const char* const kinds[4] = {"allocate", "upload", "download", "last_times"};
  std::array<std::atomic<int>, 4> refused{}, ran{};
  std::atomic<bool> started{false}, done{false};
  std::atomic<int> evaluated{0};
  std::vector<std::string> problems;  // thread 1's, read after the join
  std::string problem0;               // thread 0's
  const auto each = [](const std::array<std::atomic<int>, 4>& counts) {
    return std::all_of(counts.begin(), counts.end(), [](const auto& c) { return c > 0; });
  };
  std::thread second([&] {
    started = true;
    std::optional<BitBuffer<CudaStorage>> uploaded;
    for (int call = 0; !done; ++call) {
      const int kind = call % 4;
      try {
        switch (kind) {
          case 0: (void)be.allocate(2); break;
          case 1: uploaded = be.upload(small); break;
          case 2:
            if (!std::ranges::equal(be.download(small_in.bits()).data(), small.data()))
              problems.push_back("a download that ran gave other words");
            break;
          default: (void)be.last_times(); break;
        }
        ++ran[kind];
      } catch (const InvalidArgument& e) {
        const std::string expected = std::string("CudaBackend::") + kinds[kind] +
                                     ": called while another call on this backend runs";
        if (std::string(e.what()).find(expected) == std::string::npos) {
          problems.push_back(std::string("unexpected refusal: ") + e.what());
          return;
        }
        ++refused[kind];
      } catch (const std::exception& e) {
        problems.push_back(std::string("exception: ") + e.what());
        return;
      }
      std::this_thread::yield();
    }
    if (uploaded && !std::ranges::equal(be.download(uploaded->bits()).data(), small.data()))
      problems.push_back("an upload that ran holds other words");
  });
  while (!started) std::this_thread::yield();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  try {
    while (!(each(refused) && each(ran)) && std::chrono::steady_clock::now() < deadline) {
      try {  // refused too while one of thread 1's calls runs: then tried again
        be.evaluate({gate::nand(xa.bits(), xb.bits(), out.bits())});
        ++evaluated;
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // thread 1's calls run
      } catch (const InvalidArgument& e) {
        const std::string refusal = "CudaBackend::evaluate: called while another call";
        if (std::string(e.what()).find(refusal) == std::string::npos) throw;
      }
    }
  } catch (const std::exception& e) {
    problem0 = e.what();
  }
  done = true;
  second.join();
  CHECK(problem0.empty());
  for (const auto& problem : problems) FAIL_CHECK(problem);
  for (int kind = 0; kind < 4; ++kind) {
    INFO(kinds[kind] << ": refused " << refused[kind] << ", ran " << ran[kind]);
    CHECK(refused[kind] > 0);
    CHECK(ran[kind] > 0);
  }
  REQUIRE(evaluated > 0);
  CHECK(be.stats().batches == static_cast<std::uint64_t>(evaluated));
  const std::vector<std::uint8_t> got = decrypt(be, key, out.bits());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < gates; ++i) wrong += got[i] != !(a[i] && b[i]);
  CHECK(wrong == 0);
}

TEST_CASE("pinned staged transfers move the direct ones' words, in pieces of any size",
          "[gpu]") {
  const Parameters p = toy_insecure();
  const std::size_t n1 = std::size_t{p.lwe_dimension} + 1;
  CudaOptions o = cufft_options();
  o.transfer = GpuTransfer::pinned;
  o.staging_bytes = 64 << 10;  // the smallest: several pieces for a small batch
  CudaBackend pinned(keys_for(p).cloud, o);
  CudaBackend& direct = gpu_for(p);
  Csprng rng = seeded_rng(catch_seed(0x9a1));
  const std::size_t per_piece = o.staging_bytes / 4 / n1;  // samples in one piece (about)
  // One sample; less than a piece; two pieces, five and a bit (the last piece partial).
  for (const std::size_t count : {std::size_t{1}, per_piece / 2, 2 * o.staging_bytes / 4 / n1,
                                  5 * per_piece + 7}) {
    INFO("count " << count << " (" << count * n1 * 4 << " bytes, pieces of " << o.staging_bytes
                  << ")");
    LweBatch batch(p.lwe_dimension, count);
    for (auto& w : batch.data()) w = rng.uniform_u32();  // any words: transfers are raw
    auto on_pinned = pinned.upload(batch);
    CHECK(pinned.last_times().upload_ms > 0);
    auto on_direct = direct.upload(batch);
    const LweBatch back = pinned.download(on_pinned.bits());
    CHECK(pinned.last_times().download_ms > 0);
    CHECK(std::equal(back.data().begin(), back.data().end(), batch.data().begin(),
                     batch.data().end()));
    CHECK(std::equal(back.data().begin(), back.data().end(),
                     direct.download(on_direct.bits()).data().begin()));
    if (count > 3) {  // a span inside the buffer: its own offset and a partial last piece
      const LweBatch part = pinned.download(on_pinned.bits().subspan(2, count - 3));
      CHECK(std::equal(part.data().begin(), part.data().end(), batch.data().begin() + 2 * n1));
    }
  }
  // Gates between pinned transfers decrypt as they should.
  const BatchPlan plan = random_plan(rng, 200, 200);
  const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
  CHECK(decrypt_bits(keys_for(p).secret, run_plan(pinned, plan, encrypted)) == plan.expected());
#if defined(TORUSGATE_GPU_TEST_EMULATED)
  // Page-locked memory refused: a clear SystemError at the first transfer, nothing lost; the
  // backend transfers once memory can be had again.
  CudaBackend refused(keys_for(p).cloud, o);
  cuda_emu::set_pinned_limit(o.staging_bytes);  // one buffer, not two
  LweBatch one(p.lwe_dimension, 1);
  REQUIRE_THROWS_AS(refused.upload(one), SystemError);
  REQUIRE_THROWS_WITH(refused.upload(one),
                      Catch::Matchers::Contains("of page-locked host memory for a staging buffer") &&
                          Catch::Matchers::Contains("GpuTransfer::direct needs none"));
  cuda_emu::set_pinned_limit(std::size_t{1} << 40);
  one.data()[0] = 42;
  CHECK(refused.download(refused.upload(one).bits()).data()[0] == 42);
#endif
}

namespace {

// 16 random mixed batches of 65,536 tfhe_lib_128 gates on `be`, every output decrypted and
// compared with the plaintext evaluation; prints the throughput of evaluate() and returns
// {gates, errors}.
std::pair<std::size_t, std::size_t> million_gates(CudaBackend& be, const char* label,
                                                  std::uint64_t seed) {
  const SecretKey& key = keys_for(tfhe_lib_128()).secret;
  Csprng rng = seeded_rng(seed);
  const std::size_t per_batch = 65536, batches = 16;  // 1,048,576 gates
  std::size_t errors = 0, gates = 0;
  double seconds = 0;
  std::uint64_t bootstraps = 0;
  for (std::size_t i = 0; i < batches; ++i) {
    const BatchPlan plan = random_plan(rng, per_batch, per_batch);
    const LweBatch encrypted = encrypt_bits(key, plan.inputs, rng);
    auto in = be.upload(encrypted);
    auto out = be.allocate(plan.outputs);
    const auto ops = make_ops<CudaBackend>(plan, in, out);
    const auto t0 = std::chrono::steady_clock::now();
    be.evaluate(ops);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bootstraps += bootstraps_of(plan);
    const auto got = decrypt(be, key, out.bits());
    const auto want = plan.expected();
    for (std::size_t g = 0; g < got.size(); ++g) errors += got[g] != want[g];
    gates += got.size();
  }
  std::printf("tfhe_lib_128 on %s: %zu gates (%llu bootstraps) in %.2f s of evaluate(), "
              "%.0f bootstraps/s, %zu errors\n",
              label, gates, static_cast<unsigned long long>(bootstraps), seconds,
              static_cast<double>(bootstraps) / seconds, errors);
  return {gates, errors};
}

}  // namespace

TEST_CASE("one million tfhe_lib_128 gates on the GPU with zero errors", "[gpu][slow]") {
  const std::uint64_t seed = catch_seed(0x1e6);
  INFO("seed " << seed);
  const auto [gates, errors] = million_gates(gpu_for(tfhe_lib_128()), "the cuFFT engine", seed);
  CHECK(gates >= 1000000);
  CHECK(errors == 0);
}

TEST_CASE("100k-gate tfhe_lib_128 batches decrypt as the plaintext evaluation", "[gpu][slow]") {
  const Parameters p = tfhe_lib_128();
  const std::uint64_t seed = catch_seed(0x100c);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const BatchPlan plan = random_plan(rng, 100000, 100000);
  const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
  CHECK(decrypt_bits(keys_for(p).secret, run_plan(gpu_for(p), plan, encrypted)) == plan.expected());
  // And 10k of them against the CPU backend itself.
  const BatchPlan small = random_plan(rng, 10000, 10000);
  const LweBatch enc_small = encrypt_bits(keys_for(p).secret, small.inputs, rng);
  CHECK(decrypt_bits(keys_for(p).secret, run_plan(gpu_for(p), small, enc_small)) ==
        decrypt_bits(keys_for(p).secret, run_plan(cpu_for(p), small, enc_small)));
}

// ---- the fused engine and the tensor-core key switching (issue 5) -----------------------

TEST_CASE("fused engine: ciphertexts equal the cuFFT engine's and the CPU backend's word for "
          "word, every parameter set and launch shape",
          "[gpu][fused]") {
  for (const Parameters& p : gpu::test::every_test_set()) {
    const std::uint64_t seed = catch_seed(0xf05e);
    INFO("parameter set " << p.name << ", seed " << seed);
    Csprng rng = seeded_rng(seed);
    const BatchPlan plan =
        plan_with_bootstrap(rng, gates_for(p.insecure ? 500 : 200, p.insecure ? 200 : 6), 300);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch from_cufft = run_plan(gpu_for(p), plan, encrypted);
    const LweBatch from_cpu = run_plan(cpu_for(p), plan, encrypted);
    CHECK(from_cufft == from_cpu);
    const std::uint32_t k1 = p.glwe_dimension + 1, rows = k1 * p.bk_level_count;
    struct ForcedShape {
      std::uint32_t groups, rotations, cluster, lanes = 0, points = 0, sums = 0;
    };
    std::vector<ForcedShape> shapes = {{0, 0, 0}, {1, 1, 1}, {k1, 1, 1}, {rows, 1, 1},
                                       {1, 2, 1}, {1, 3, 1}, {1, 4, 1},  {k1, 2, 1},
                                       {0, 0, 1}, {0, 0, k1}};
    if (rows <= 8) shapes.push_back({0, 0, rows});
    if (k1 == 2) {
      shapes.push_back({0, 0, 0, 2});  // two rotations per thread (k = 1)
      shapes.push_back({0, 0, 0, 1});  // one, the rest automatic
    }
    // Wide clusters (4 points per thread; N = 512 .. 2048): forced, and automatic.
    if (p.polynomial_size >= 512 && p.polynomial_size <= 2048) {
      shapes.push_back({0, 0, k1, 0, 4});
      if (rows <= 8) shapes.push_back({0, 0, rows, 0, 4});
      shapes.push_back({0, 0, 0, 0, 4});
    }
    // Every block of a cluster of (k+1)l summing its own column (section 6.18): forced, wide
    // too, and with the shape automatic.
    CudaOptions every = fused_options();
    every.fused_cluster_sums = 2;
    bool every_fits = true;  // the validation says where (rows <= 8, two inbox buffers)
    try {
      validate_cuda_options(every, p);
    } catch (const InvalidArgument&) {
      every_fits = false;
    }
    if (every_fits) {
      shapes.push_back({0, 0, rows, 0, 0, 2});
      shapes.push_back({0, 0, rows, 0, 0, 1});  // the owners, asked for
      if (p.polynomial_size >= 512 && p.polynomial_size <= 2048) {
        shapes.push_back({0, 0, rows, 0, 4, 2});
      }
      shapes.push_back({0, 0, 0, 0, 0, 2});
    }
    for (const auto& [groups, rotations, cluster, lanes, points, sums] : shapes) {
      INFO("fused_groups " << groups << ", fused_rotations_per_block " << rotations
                           << ", fused_cluster_blocks " << cluster << ", fused_lanes " << lanes
                           << ", fused_cluster_points " << points << ", fused_cluster_sums "
                           << sums);
      CudaOptions options = fused_options(groups, GpuKeySwitching::gather, rotations, cluster, lanes);
      options.fused_cluster_points = points;
      options.fused_cluster_sums = sums;
      CudaBackend* made = nullptr;
      LweBatch from_fused;
      try {
        made = &gpu_with(p, options);
        from_fused = run_plan(*made, plan, encrypted);
      } catch (const InvalidArgument& e) {
        // A forced shape larger than the kernel's registers allow is refused when the backend
        // is made, with the reason; every kernel runs 256 threads (255 registers at most), so
        // only bigger blocks may be. A forced cluster is refused on a device without clusters
        // (before compute capability 9.0).
        const std::string what = e.what();
        INFO(what);
        if (cluster > 1) {
          CHECK(what.find("clusters need 9.0") != std::string::npos);
          CHECK(gpu::devices().at(0).compute_capability_major < 9);
        } else {
          CHECK(what.find("0 for each chooses a shape that fits") != std::string::npos);
          CHECK(groups * rotations * (p.polynomial_size / 16) > 256);
        }
        continue;
      }
      CudaBackend& fused = *made;
      CHECK(from_fused == from_cpu);
      CHECK(decrypt_bits(keys_for(p).secret, from_fused) == plan.expected());
      if (groups != 0) {
        CHECK(fused.last_times().fused_groups == groups);
        CHECK(fused.last_times().fused_rotations_per_block == rotations);
      }
      if (cluster != 0) CHECK(fused.last_times().fused_cluster_blocks == cluster);
      // A cluster's points per thread: what was asked (0: 8); its sums what was asked (0:
      // every block's where a cluster of (k+1)l blocks fits them); none without a cluster.
      if (const std::uint32_t blocks = fused.last_times().fused_cluster_blocks; blocks > 1) {
        CHECK(fused.last_times().fused_cluster_points == (points == 0 ? 8u : points));
        const bool every_block = sums == 2 || (sums == 0 && every_fits && blocks == rows);
        CHECK(fused.last_times().fused_cluster_sums == (every_block ? 2u : 1u));
      } else {
        CHECK(fused.last_times().fused_cluster_points == 0);
        CHECK(fused.last_times().fused_cluster_sums == 0);
      }
      // Automatic lanes (0) take two only for k = 1, a shape otherwise automatic and a chunk
      // past what 1x1 holds resident (the CUDA emulator's 4 multiprocessors: this one).
      if (lanes != 0) {
        CHECK(fused.last_times().fused_lanes == lanes);
      } else if (k1 != 2 || groups != 0 || rotations != 0 || cluster > 1) {
        CHECK(fused.last_times().fused_lanes == 1);
      } else {
        CHECK((fused.last_times().fused_lanes == 1 || fused.last_times().fused_lanes == 2));
      }
    }
  }
}

TEST_CASE("fused engine: the key stage (the TMA's bulk copies) gives the CPU backend's words on "
          "1x1 and two lanes; a device without it refuses the option at construction",
          "[gpu][fused]") {
  // N = 512 (k = 1: 1x1 and two lanes) and N = 2048 with k = 2 (1x1; a stage of 3 spectra).
  for (const Parameters& p : {gpu::test::sized_insecure(512, 1), gpu::test::sized_insecure(2048, 2)}) {
    const std::uint64_t seed = catch_seed(0x57a6);
    INFO("parameter set " << p.name << ", seed " << seed);
    Csprng rng = seeded_rng(seed);
    const BatchPlan plan = plan_with_bootstrap(rng, 12, 16);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch want = run_plan(cpu_for(p), plan, encrypted);
    std::vector<CudaOptions> forced = {fused_options(1, GpuKeySwitching::gather, 1)};
    if (p.glwe_dimension == 1) forced.push_back(fused_options(0, GpuKeySwitching::gather, 0, 0, 2));
    for (CudaOptions o : forced) {
      o.fused_key_stage = 2;
      INFO("fused_groups " << o.fused_groups << ", fused_lanes " << o.fused_lanes);
      if (!clusters_here()) {  // compute capability 9.0's bulk copies, as clusters
        REQUIRE_THROWS_WITH(gpu_with(p, o), Catch::Matchers::Contains("fused_key_stage=2 needs the "
                                                                      "TMA's bulk copies"));
        continue;
      }
      CudaBackend& be = gpu_with(p, o);
      CHECK(run_plan(be, plan, encrypted) == want);
      CHECK(be.last_times().fused_key_stage == 1);
      CHECK(be.last_times().fused_lanes == std::max(o.fused_lanes, 1u));
      o.fused_key_stage = 1;  // never: the same shape unstaged
      CudaBackend& plain = gpu_with(p, o);
      CHECK(run_plan(plain, plan, encrypted) == want);
      CHECK(plain.last_times().fused_key_stage == 0);
    }
    // Every other option automatic: a chunk that the automatic shape gives one group and one
    // rotation slot per block (1x1 or two lanes: batches past what 1x1 holds resident) reads
    // its key through the stage, one on clusters or G > 1 groups does not.
    if (clusters_here()) {
      const BatchPlan big = plan_with_bootstrap(rng, gates_for(4000, 200), 300);
      const LweBatch big_encrypted = encrypt_bits(keys_for(p).secret, big.inputs, rng);
      CudaOptions o = fused_options(0, GpuKeySwitching::gather);
      o.fused_key_stage = 2;
      CudaBackend& be = gpu_with(p, o);
      for (const auto& [plan_of, encrypted_of] :
           {std::pair{&plan, &encrypted}, std::pair{&big, &big_encrypted}}) {
        CHECK(run_plan(be, *plan_of, *encrypted_of) == run_plan(cpu_for(p), *plan_of, *encrypted_of));
        const CudaPhaseTimes& t = be.last_times();
        INFO("last chunk: groups " << t.fused_groups << ", rotations per block "
                                   << t.fused_rotations_per_block << ", cluster "
                                   << t.fused_cluster_blocks << ", lanes " << t.fused_lanes);
        const bool one_slot = t.fused_cluster_blocks <= 1 && t.fused_groups == 1 &&
                              t.fused_rotations_per_block == 1;
        CHECK(t.fused_key_stage == (one_slot ? 1u : 0u));
      }
    }
  }
}

TEST_CASE("unrolled key: both engines and every launch shape that runs it give the CPU "
          "backend's words",
          "[gpu][fused][unroll]") {
  const std::uint32_t unroll = GENERATE(2u, 3u);  // key bits in pairs, in threes
  std::vector<Parameters> sets = gpu::test::every_test_set();
  sets.push_back(gpu::test::odd_n_insecure(512, 1));
  for (const Parameters& p : sets) {
    const std::uint64_t seed = catch_seed(0x2013);
    INFO("parameter set " << p.name << ", unroll " << unroll << ", seed " << seed);
    Csprng rng = seeded_rng(seed);
    const BatchPlan plan =
        plan_with_bootstrap(rng, gates_for(p.insecure ? 500 : 200, p.insecure ? 100 : 4), 300);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch from_cpu = run_plan(cpu_for(p, unroll), plan, encrypted);
    CHECK(decrypt_bits(keys_for(p).secret, from_cpu) == plan.expected());
    // Word for word where every product rounds exactly (product_rounding, bootstrap.hpp).
    // default_128 in threes (6.6 sigma) may round a rare coefficient 1 off before key
    // switching, which changes that output sample's words: there the decryptions, and at
    // least 99% of the samples word for word.
    const bool exact = product_rounding(p, unroll).exact();
    CHECK(exact == (p.name != "default_128" || unroll < 3));
    auto cpu_words = [&](const LweBatch& got) {
      if (exact) return got == from_cpu;
      std::size_t differ = 0;
      for (std::size_t i = 0; i < got.count(); ++i) {
        if (!std::ranges::equal(got.sample(i), from_cpu.sample(i))) ++differ;
      }
      INFO(differ << " of " << got.count() << " samples differ from the CPU backend's");
      CHECK(differ * 100 <= got.count());
      return decrypt_bits(keys_for(p).secret, got) == plan.expected();
    };
    CHECK(cpu_words(run_plan(gpu_with(p, cufft_options(), unroll), plan, encrypted)));
    const std::uint32_t k1 = p.glwe_dimension + 1, rows = k1 * p.bk_level_count;
    // groups, rotations per block, cluster blocks, points, sums, bundle, lanes.
    std::vector<std::array<std::uint32_t, 7>> shapes = {
        {0, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0, 0}, {k1, 1, 1, 0, 0, 0, 0},
        {rows, 1, 1, 0, 0, 0, 0}, {0, 0, 1, 0, 0, 0, 0}, {0, 0, k1, 0, 0, 0, 0}};
    if (rows <= 8) shapes.push_back({0, 0, rows, 0, 0, 0, 0});
    // Two lanes (k = 1; docs/gpu.md section 6.27): the lane kernel's group steps, asked for.
    if (k1 == 2) {
      shapes.push_back({0, 0, 0, 0, 0, 0, 2});
      shapes.push_back({1, 1, 1, 0, 0, 0, 2});
    }
    // Wide clusters (4 points per thread; N = 512 .. 2048), forced.
    if (p.polynomial_size >= 512 && p.polynomial_size <= 2048) {
      shapes.push_back({0, 0, k1, 4, 0, 0, 0});
      if (rows <= 8) shapes.push_back({0, 0, rows, 4, 0, 0, 0});
    }
    // Bundled keys (fused_bundle = 2, docs/gpu.md section 6.25): clusters of k+1 and (k+1)l
    // blocks, and the automatic shape (a cluster where the chunk fits the device's room).
    shapes.push_back({0, 0, k1, 0, 0, 2, 0});
    shapes.push_back({0, 0, 0, 0, 0, 2, 0});
    if (rows <= 8) shapes.push_back({0, 0, rows, 8, 0, 2, 0});
    // 3 here: the same made while the rotation runs (fused_bundle_overlap = 2, section 6.26).
    shapes.push_back({0, 0, k1, 0, 0, 3, 0});
    shapes.push_back({0, 0, 0, 0, 0, 3, 0});
    if (rows <= 8) shapes.push_back({0, 0, rows, 8, 0, 3, 0});
    // Every block summing its own column (section 6.18), where the validation admits it.
    CudaOptions every = fused_options();
    every.fused_cluster_sums = 2;
    bool every_fits = true;
    try {
      validate_cuda_options(every, p, unroll);
      shapes.push_back({0, 0, rows, 0, 2, 0, 0});
      shapes.push_back({0, 0, rows, 0, 1, 0, 0});  // the owners, asked for
      shapes.push_back({0, 0, rows, 0, 2, 2, 0});
    } catch (const InvalidArgument&) {
      every_fits = false;
    }
    for (const auto& [groups, rotations, cluster, points, sums, bundle, lanes] : shapes) {
      INFO("fused_groups " << groups << ", fused_rotations_per_block " << rotations
                           << ", fused_cluster_blocks " << cluster << ", fused_cluster_points "
                           << points << ", fused_cluster_sums " << sums << ", fused_bundle "
                           << bundle << ", fused_lanes " << lanes);
      CudaOptions options =
          fused_options(groups, GpuKeySwitching::gather, rotations, cluster, lanes);
      options.fused_cluster_points = points;
      options.fused_cluster_sums = sums;
      options.fused_bundle = bundle == 3 ? 2 : bundle;
      options.fused_bundle_overlap = bundle == 3 ? 2 : 0;
      CudaBackend* made = nullptr;
      LweBatch from_fused;
      try {
        made = &gpu_with(p, options, unroll);
        from_fused = run_plan(*made, plan, encrypted);
      } catch (const InvalidArgument& e) {  // as in the standard key's case above
        const std::string what = e.what();
        INFO(what);
        // A cluster block's key stage holds a row of 2^u - 1 GGSW samples (docs/gpu.md
        // section 6.13): with N = 2048 and k = 2 that is 144 KiB for pairs, 336 KiB for threes
        // (224 KiB with k = 1), and no such cluster fits an H100's 227 KiB: its block needs at
        // least the exchange buffer, one inbox, the accumulator and the stage.
        const std::size_t M = p.polynomial_size / 2, G = (1u << unroll) - 1;
        const std::size_t least = (M + M / 8) * 16 + std::size_t{cluster} * M * 16 +
                                  k1 * p.polynomial_size * 4 + G * k1 * M * 16;
        const bool too_big = least > 227 * 1024;
        if (cluster > 1 && too_big) {
          CHECK(what.find("KiB of shared memory") != std::string::npos);
        } else if (cluster > 1) {
          CHECK(what.find("clusters need 9.0") != std::string::npos);
        } else {
          CHECK(what.find("0 for each chooses a shape that fits") != std::string::npos);
        }
        continue;
      }
      CudaBackend& fused = *made;
      CHECK(cpu_words(from_fused));
      // Two lanes where asked for. Where the shape is otherwise automatic (k = 1), keys in
      // pairs take them for a chunk past what 1x1 holds resident, as the standard key does
      // (docs/gpu.md section 6.38); keys in threes never.
      if (lanes == 2) {
        CHECK(fused.last_times().fused_lanes == 2);
      } else if (lanes == 0 && unroll == 2 && k1 == 2 && groups == 0 && rotations == 0 &&
                 cluster <= 1) {
        CHECK((fused.last_times().fused_lanes == 1 || fused.last_times().fused_lanes == 2));
      } else {
        CHECK(fused.last_times().fused_lanes == 1);
      }
      CHECK(fused.last_times().fused_rotations_per_block <= 1);
      // Bundled where the last chunk ran on a cluster of 8 points per thread (always when one
      // is forced), unless asked not to (1); overlapped only where asked (3 here), since the
      // automatic overlap is a key in fours' (docs/gpu.md section 6.31).
      const bool on_cluster = fused.last_times().fused_cluster_blocks > 1;
      const bool bundles = on_cluster && fused.last_times().fused_cluster_points == 8 && bundle != 1;
      CHECK(fused.last_times().fused_bundle == (bundles ? (bundle == 3 ? 2u : 1u) : 0u));
      if (bundle >= 2 && cluster > 1) CHECK(on_cluster);
      // Again on the same backend: its workspaces' counters have counted the first run's
      // bundlings, so the rotations now wait for higher counts (the emulator faults unless each
      // count is exactly the one waited for).
      if (bundle == 3) CHECK(cpu_words(run_plan(fused, plan, encrypted)));
      if (cluster > 1) {
        CHECK(fused.last_times().fused_cluster_blocks == cluster);
        CHECK(fused.last_times().fused_cluster_points == (points == 0 ? 8u : points));
        // 0: every block's sums where a cluster of (k+1)l blocks fits them.
        const bool every_block = sums == 2 || (sums == 0 && every_fits && cluster == rows);
        CHECK(fused.last_times().fused_cluster_sums == (every_block ? 2u : 1u));
      }
    }
  }
  // The shapes without a group step are refused, with the reason.
  CudaOptions staged = fused_options();
  staged.fused_rotations_per_block = 2;
  CHECK_THROWS_WITH(CudaBackend(keys_for(tfhe_lib_128(), unroll).cloud, staged),
                    Catch::Matchers::Contains("an unrolled bootstrapping key runs one rotation "
                                              "slot per block"));
}

TEST_CASE("key bits in fours: the cuFFT engine and the fused engine's bundled clusters give the "
          "CPU backend's words",
          "[gpu][fused][unroll]") {
  // A key in fours (15 GGSW per 4 key bits): the cuFFT engine's group steps take any form; the
  // fused engine runs every chunk on bundled clusters of 8 points per thread (docs/gpu.md
  // 6.25), automatic or forced, and refuses any other shape.
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), gpu::test::odd_n_insecure(512, 1)}) {
    const std::uint64_t seed = catch_seed(0x2014);
    INFO("parameter set " << p.name << ", seed " << seed);
    Csprng rng = seeded_rng(seed);
    const BatchPlan plan = plan_with_bootstrap(rng, gates_for(300, 60), 300);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch from_cpu = run_plan(cpu_for(p, 4), plan, encrypted);
    CHECK(decrypt_bits(keys_for(p).secret, from_cpu) == plan.expected());
    CHECK(run_plan(gpu_with(p, cufft_options(), 4), plan, encrypted) == from_cpu);
    if (!clusters_here()) {
      CHECK_THROWS_WITH(CudaBackend(keys_for(p, 4).cloud, fused_options()),
                        Catch::Matchers::Contains("runs on the fused engine's bundled thread "
                                                  "block clusters only"));
      continue;
    }
    const std::uint32_t k1 = p.glwe_dimension + 1, rows = k1 * p.bk_level_count;
    std::vector<std::uint32_t> clusters = {0, k1};
    if (rows <= 8) clusters.push_back(rows);
    const auto multiprocessors = static_cast<std::size_t>(gpu::devices().at(0).multiprocessors);
    for (const std::uint32_t cluster : clusters) {
      for (const std::uint32_t overlap : {0u, 1u, 2u}) {
        INFO("fused_cluster_blocks " << cluster << ", fused_bundle_overlap " << overlap);
        CudaOptions o = fused_options(0, GpuKeySwitching::gather, 0, cluster);
        o.fused_bundle_overlap = overlap;
        CudaBackend& fused = gpu_with(p, o, 4);
        CHECK(run_plan(fused, plan, encrypted) == from_cpu);
        // Automatic (0): overlapped where the chunk's clusters take at most half the
        // multiprocessors (docs/gpu.md section 6.31).
        const CudaPhaseTimes& t = fused.last_times();
        const bool room = 2 * t.chunk_capacity * t.fused_cluster_blocks <= multiprocessors;
        CHECK(t.fused_bundle == (overlap == 2 || (overlap == 0 && room) ? 2u : 1u));
        CHECK(fused.last_times().fused_cluster_blocks ==
              (cluster != 0 ? cluster : rows <= 8 ? rows : k1));
      }
    }
    // A lone bootstrap, the latency case: the automatic options overlap its bundling where
    // its one cluster leaves the bundling half the multiprocessors (every GPU with clusters).
    // One rotation: a MUX, which the draw may give, takes 2 (and a chunk of 2).
    {
      BatchPlan one = plan_with_bootstrap(rng, 1, 1);
      while (bootstraps_of(one) != 1) one = plan_with_bootstrap(rng, 1, 1);
      const LweBatch in = encrypt_bits(keys_for(p).secret, one.inputs, rng);
      CudaBackend& fused = gpu_with(p, fused_options(), 4);
      CHECK(run_plan(fused, one, in) == run_plan(cpu_for(p, 4), one, in));
      const CudaPhaseTimes& t = fused.last_times();
      CHECK(t.chunk_capacity == 1);
      CHECK(t.fused_bundle == (2 * t.fused_cluster_blocks <= multiprocessors ? 2u : 1u));
    }
    CHECK_THROWS_WITH(CudaBackend(keys_for(p, 4).cloud, fused_options(1, GpuKeySwitching::gather, 1, 1)),
                      Catch::Matchers::Contains("bundled clusters of 8 points per thread only"));
  }
}

TEST_CASE("fused engine: every gate kind on every input combination and random batches of 1 "
          "to 100k gates",
          "[gpu][fused]") {
  using S = CudaStorage;
  for (const Parameters& p : {toy_insecure(), tfhe_lib_128()}) {
    INFO("parameter set " << p.name);
    Csprng rng = seeded_rng(catch_seed(0xf0a1));
    CudaBackend& be = gpu_with(p, fused_options());
    const SecretKey& key = keys_for(p).secret;
    const test::TruthTableInputs t = test::truth_table_inputs();
    auto A = encrypt(be, key, t.a, rng), B = encrypt(be, key, t.b, rng),
         C = encrypt(be, key, t.c, rng);
    auto out = be.allocate(8 * all_specs().size());
    be.evaluate(test::every_gate_batch<S>(A.bits(), B.bits(), C.bits(), out.bits()));
    test::check_every_gate(decrypt(be, key, out.bits()), t);
  }
  for (const std::size_t written : {1u, 2u, 63u, 1000u, 10000u, 100000u}) {
    const std::size_t gates = gates_for(written, 3000);
    const Parameters p = toy_insecure();
    const std::uint64_t seed = catch_seed(0xf0b + gates);
    INFO(gates << " gates, seed " << seed);
    Csprng rng = seeded_rng(seed);
    const BatchPlan plan = random_plan(rng, gates, std::max<std::size_t>(gates, 128));
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch from_fused = run_plan(gpu_with(p, fused_options()), plan, encrypted);
    CHECK(decrypt_bits(keys_for(p).secret, from_fused) == plan.expected());
    CHECK(from_fused == run_plan(gpu_for(p), plan, encrypted));
  }
}

TEST_CASE("tensor-core key switching gives the gather kernel's words on both engines",
          "[gpu][fused]") {
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), tfhe_lib_128(), default_128()}) {
    const std::uint64_t seed = catch_seed(0x7c);
    INFO("parameter set " << p.name << ", seed " << seed);
    Csprng rng = seeded_rng(seed);
    const BatchPlan plan = plan_with_bootstrap(rng, gates_for(333, p.insecure ? 333 : 8), 300);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch gather = run_plan(gpu_for(p), plan, encrypted);
    CudaOptions tc = cufft_options();
    tc.key_switching = GpuKeySwitching::tensor_core;
    CHECK(run_plan(gpu_with(p, tc), plan, encrypted) == gather);
    CHECK(gpu_with(p, tc).last_times().key_switching_slices == 0);  // the matrix product
    CHECK(run_plan(gpu_with(p, fused_options(0, GpuKeySwitching::tensor_core)), plan, encrypted) ==
          gather);
    // The defaults: the fused engine, automatic key switching.
    CHECK(run_plan(gpu_with(p, CudaOptions{}), plan, encrypted) == gather);
  }
}

TEST_CASE("automatic key switching: the gather kernel in slices for a small chunk, the "
          "matrix product for a large one; the same words",
          "[gpu][fused]") {
  using S = CudaStorage;
  const Parameters p = toy_insecure();
  const SecretKey& key = keys_for(p).secret;
  Csprng rng = seeded_rng(catch_seed(0xa7c));
  // Two blocks of 8 gates per multiprocessor (toy: one block of output words) leave the
  // gather kernel unsliced.
  const auto multiprocessors = static_cast<std::size_t>(gpu::devices().at(0).multiprocessors);
  for (const std::size_t gates : {std::size_t{1}, std::size_t{5}, 16 * multiprocessors}) {
    std::vector<std::uint8_t> a(gates), b(gates), want(gates);
    for (std::size_t i = 0; i < gates; ++i) {
      a[i] = static_cast<std::uint8_t>(rng.uniform_bit());
      b[i] = static_cast<std::uint8_t>(rng.uniform_bit());
      want[i] = static_cast<std::uint8_t>(!(a[i] && b[i]));
    }
    const LweBatch in_a = encrypt_bits(key, a, rng), in_b = encrypt_bits(key, b, rng);
    const bool small = gates < 16 * multiprocessors;
    INFO(gates << " gates, " << multiprocessors << " multiprocessors");
    std::vector<LweBatch> words;
    for (const GpuKeySwitching ks :
         {GpuKeySwitching::gather, GpuKeySwitching::tensor_core, GpuKeySwitching::automatic}) {
      INFO("key switching " << gpu_key_switching_name(ks));
      CudaBackend& be = gpu_with(p, fused_options(0, ks));
      auto A = be.upload(in_a);
      auto B = be.upload(in_b);
      auto out = be.allocate(gates);
      be.evaluate(std::vector<GateOp<S>>{gate::nand<S>(A.bits(), B.bits(), out.bits())});
      words.push_back(be.download(out.bits()));
      CHECK(decrypt_bits(key, words.back()) == want);
      const std::uint32_t slices = be.last_times().key_switching_slices;
      if (ks == GpuKeySwitching::tensor_core) CHECK(slices == 0);
      if (ks == GpuKeySwitching::gather) CHECK((small ? slices > 1 : slices == 1));
      if (ks == GpuKeySwitching::automatic) CHECK((small ? slices > 1 : slices == 0));
    }
    CHECK(words[1] == words[0]);
    CHECK(words[2] == words[0]);
  }
}

TEST_CASE("fused engine: a lone bootstrap takes a cluster where the device runs one with a "
          "multiprocessor per block",
          "[gpu][fused]") {
  using S = CudaStorage;
  // (k+1)l = 4 blocks: the emulator's 4 multiprocessors have room for one such cluster.
  const Parameters p = toy_insecure();
  CudaBackend& be = gpu_with(p, fused_options());
  Csprng rng = seeded_rng(catch_seed(0xc1a));
  const SecretKey& key = keys_for(p).secret;
  auto A = encrypt(be, key, std::vector<std::uint8_t>{1, 0}, rng);
  auto B = encrypt(be, key, std::vector<std::uint8_t>{1, 1}, rng);
  const std::uint32_t rows = (p.glwe_dimension + 1) * p.bk_level_count;
  const int multiprocessors = gpu::devices().at(0).multiprocessors;
  const std::vector<std::uint8_t> nand = {0, 1};
  for (const std::size_t gates : {1u, 2u}) {
    INFO(gates << " gates, " << multiprocessors << " multiprocessors");
    auto out = be.allocate(gates);
    be.evaluate(std::vector<GateOp<S>>{
        gate::nand<S>(A.bits(0, gates), B.bits(0, gates), out.bits())});
    CHECK(decrypt(be, key, out.bits()) == std::vector<std::uint8_t>(nand.begin(), nand.begin() + gates));
    // A cluster per rotation while every block of every cluster has a multiprocessor: on the
    // emulator's 4, one rotation (a device's occupancy allows far more clusters than that).
    const bool room = clusters_here() && gates * rows <= static_cast<std::size_t>(multiprocessors);
    CHECK(be.last_times().fused_cluster_blocks == (room ? rows : 1));
  }
}

TEST_CASE("fused engine: chunked and unchunked runs give identical ciphertexts", "[gpu][fused]") {
  const Parameters p = tfhe_lib_128();
  Csprng rng = seeded_rng(catch_seed(0xf0c));
  CudaBackend& whole = gpu_with(p, fused_options());
  CudaOptions small = fused_options();
  small.memory_budget_bytes = 40 * whole.bytes_per_rotation();
  CudaBackend& chunked = gpu_with(p, small);
  CHECK(whole.bytes_per_rotation() < gpu_for(p).bytes_per_rotation());  // no spectra
  const BatchPlan plan = plan_with_bootstrap(rng, gates_for(300, 48), 400);
  const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
  const LweBatch a = run_plan(whole, plan, encrypted);
  const LweBatch b = run_plan(chunked, plan, encrypted);
  CHECK(chunked.last_times().chunks >= bootstraps_of(plan) / 32);
  CHECK(a == b);
  CHECK(decrypt_bits(keys_for(p).secret, b) == plan.expected());
}

// Found by an audit of the host-side API (fixed): the memory budget counted a rotation's scratch
// but not an unrolled key's bundled keys, which a chunk on clusters also holds (a key in
// threes ran 80 times over a tight budget); and a forced launch shape too large for the device
// was refused only at the first evaluate().
TEST_CASE("fused engine: the memory budget holds an unrolled key's bundled keys; a forced shape "
          "the device cannot run is refused when the backend is made",
          "[gpu][fused][unroll]") {
  const Parameters p = toy_insecure();
  Csprng rng = seeded_rng(catch_seed(0xb0d));
  CudaOptions o = fused_options();
  CudaBackend& free = gpu_with(p, o, 3);
  const std::size_t most = free.bytes_per_rotation();
  CHECK(most > gpu_with(p, fused_options()).bytes_per_rotation());  // bundled keys included
  o.memory_budget_bytes = 2 * most - 1;
  REQUIRE_INVALID_ARGUMENT(CudaBackend(keys_for(p, 3).cloud, o),
                           "two blind rotations of " + std::to_string(most) +
                               " bytes each, their bundled keys included");
  // Never bundled (fused_bundle 1): the rotations' scratch alone.
  o.fused_bundle = 1;
  o.memory_budget_bytes = 2 * gpu_with(p, fused_options()).bytes_per_rotation();
  CHECK_NOTHROW(CudaBackend(keys_for(p, 3).cloud, o));
  // The smallest budget, 2 bundled rotations, and a batch of 5 rotations, which the automatic
  // shape runs on bundled clusters (3 waves on an emulator of 4 multiprocessors; on a GPU as
  // many as its clusters allow): every chunk fits the budget, and the words are the unbounded
  // backend's. On the emulator, whose device memory is counted to the byte, the chunks'
  // workspaces (cached after the batch) hold at most the budget; before the fix the batch ran
  // in one chunk of 5 bundled rotations, 2.5 times the budget.
  o = fused_options();
  o.memory_budget_bytes = 2 * most;
  CudaBackend tight(keys_for(p, 3).cloud, o);
  BatchPlan plan = plan_with_bootstrap(rng, 3, 3);
  while (bootstraps_of(plan) != 3) plan = plan_with_bootstrap(rng, 3, 3);
  const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
  const LweBatch a = run_plan(free, plan, encrypted);
  const std::optional<std::size_t> free_before = emulated_free_bytes();
  const LweBatch b = run_plan(tight, plan, encrypted);
  const std::optional<std::size_t> free_after = emulated_free_bytes();
  CHECK(a == b);
  CHECK(decrypt_bits(keys_for(p).secret, b) == plan.expected());
  if (emulated) {
    REQUIRE(free_before.has_value());
    REQUIRE(free_after.has_value());
    INFO("free before " << *free_before << ", after " << *free_after);
    CHECK(tight.last_times().fused_bundle != 0);  // the case: chunks on bundled keys
    CHECK(*free_before <= *free_after + o.memory_budget_bytes);
  }
  // A forced shape of 6 groups x 8 rotations: 3,072 threads a block for tfhe_lib_128, above
  // every device's 1,024.
  const CudaOptions big = fused_options(6, GpuKeySwitching::gather, 8);
  REQUIRE_INVALID_ARGUMENT(CudaBackend(keys_for(tfhe_lib_128()).cloud, big),
                           "CudaBackend: CudaOptions fused_groups=6, fused_rotations_per_block=8 "
                           "make blocks of 3072 threads");
}

TEST_CASE("fused engine: circuits run unchanged and timings are measured", "[gpu][fused]") {
  CudaBackend& be = gpu_with(toy_insecure(), fused_options());
  check_circuits(be, catch_seed(0xf0d));
  const CudaPhaseTimes t = be.last_times();
  CHECK(t.blind_rotation_ms > 0);
  CHECK(t.key_switching_ms > 0);
  CHECK(t.fused_groups >= 1);
  CHECK(t.fused_rotations_per_block >= 1);
}

TEST_CASE("a small batch on every engine and key switching (the compute-sanitizer case)",
          "[gpu][fused][sanitize]") {
  // scripts/gpu_run.sh's sanitize step runs this case under memcheck and racecheck.
  // Standard keys, and a key in threes (group steps, the rotation factors' table).
  for (const auto& [p, unroll] : std::vector<std::pair<Parameters, std::uint32_t>>{
           {toy_insecure(), 1}, {toy_k2_insecure(), 1}, {toy_insecure(), 3}}) {
    const std::uint64_t seed = catch_seed(0x5a);
    INFO("parameter set " << p.name << ", unroll " << unroll << ", seed " << seed);
    Csprng rng = seeded_rng(seed);
    const BatchPlan plan = random_plan(rng, 40, 64);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch want = run_plan(cpu_for(p, unroll), plan, encrypted);
    const std::uint32_t rows = (p.glwe_dimension + 1) * p.bk_level_count;
    for (const GpuEngine engine : {GpuEngine::cufft, GpuEngine::fused}) {
      for (const GpuKeySwitching ks : {GpuKeySwitching::gather, GpuKeySwitching::tensor_core}) {
        // The last shapes: clusters of k+1 and of (k+1)l blocks per rotation (every block
        // summing its column where that fits, the automatic sums), where the device has them;
        // no lanes, and one rotation per block, for a key in threes.
        const std::uint32_t cluster = clusters_here() ? p.glwe_dimension + 1 : 1;
        const std::uint32_t row_cluster = clusters_here() && rows <= 8 ? rows : 1;
        for (const auto& [groups, rotations, blocks] :
             std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>>{
                 {1, 1, 1}, {rows, 1, 1}, {1, 3, 1}, {1, 1, cluster}, {1, 1, row_cluster}}) {
          if (engine == GpuEngine::cufft && groups * rotations * blocks != 1) continue;
          if (unroll > 1 && rotations > 1) continue;
          INFO(gpu_engine_name(engine) << ", " << gpu_key_switching_name(ks) << ", groups "
                                       << groups << ", rotations per block " << rotations
                                       << ", blocks per cluster " << blocks);
          CudaOptions o = fused_options(groups, ks, rotations, blocks);
          o.engine = engine;
          if (engine == GpuEngine::cufft) {
            o.fused_groups = o.fused_rotations_per_block = o.fused_cluster_blocks = 0;
          }
          CudaBackend& be = gpu_with(p, o, unroll);
          CHECK(run_plan(be, plan, encrypted) == want);
          // A cluster of (k+1)l blocks sums in every block (when the plan's last level ran
          // one: a random plan's last level may have no bootstrap).
          if (be.last_times().fused_cluster_blocks == rows && rows > 1) {
            CHECK(be.last_times().fused_cluster_sums == 2u);
          }
        }
      }
    }
  }
  // A wide cluster (4 points per thread; N = 512 .. 2048), where the device has clusters.
  if (clusters_here()) {
    const Parameters p = gpu::test::sized_insecure(512, 1);
    Csprng rng = seeded_rng(catch_seed(0x5b));
    const BatchPlan plan = plan_with_bootstrap(rng, 12, 16);  // a cluster runs in every seed
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    CudaOptions o = fused_options(0, GpuKeySwitching::gather, 0, p.glwe_dimension + 1);
    o.fused_cluster_points = 4;
    CudaBackend& be = gpu_with(p, o);
    CHECK(run_plan(be, plan, encrypted) == run_plan(cpu_for(p), plan, encrypted));
    CHECK(be.last_times().fused_cluster_points == 4);
  }
  // The key stage (docs/gpu.md 6.34), where the device has it: 1x1 and two lanes whose key rows
  // come through the TMA's bulk copies and the stage's mbarrier.
  if (clusters_here()) {
    const Parameters p = gpu::test::sized_insecure(512, 1);
    Csprng rng = seeded_rng(catch_seed(0x5d));
    const BatchPlan plan = plan_with_bootstrap(rng, 12, 16);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch want = run_plan(cpu_for(p), plan, encrypted);
    for (CudaOptions o : {fused_options(1, GpuKeySwitching::gather, 1),
                          fused_options(0, GpuKeySwitching::gather, 0, 0, 2)}) {
      INFO("key stage, fused_lanes " << o.fused_lanes);
      o.fused_key_stage = 2;
      CudaBackend& be = gpu_with(p, o);
      CHECK(run_plan(be, plan, encrypted) == want);
      CHECK(be.last_times().fused_key_stage == 1);
    }
  }
  // An unrolled key (pair steps, and an odd n's last CMUX step): the cuFFT engine, the fused
  // 1x1 and (k+1)l-group blocks, two lanes and, where the device has them, a cluster of k+1
  // blocks.
  {
    const Parameters p = gpu::test::odd_n_insecure(512, 1);
    Csprng rng = seeded_rng(catch_seed(0x5c));
    const BatchPlan plan = plan_with_bootstrap(rng, 12, 16);
    const LweBatch encrypted = encrypt_bits(keys_for(p).secret, plan.inputs, rng);
    const LweBatch want = run_plan(cpu_for(p, 2), plan, encrypted);
    const std::uint32_t k1 = p.glwe_dimension + 1;
    CHECK(run_plan(gpu_with(p, cufft_options(), 2), plan, encrypted) == want);
    for (const auto& [groups, blocks] :
         {std::pair{1u, 1u}, std::pair{k1 * p.bk_level_count, 1u},
          std::pair{0u, clusters_here() ? k1 : 1u}}) {
      INFO("unrolled key, fused, groups " << groups << ", blocks per cluster " << blocks);
      CHECK(run_plan(gpu_with(p, fused_options(groups, GpuKeySwitching::gather, 1, blocks), 2),
                     plan, encrypted) == want);
    }
    // Two lanes (docs/gpu.md 6.27): the lane kernel's group steps and its last CMUX step.
    {
      CudaBackend& lanes = gpu_with(p, fused_options(0, GpuKeySwitching::gather, 0, 1, 2), 2);
      CHECK(run_plan(lanes, plan, encrypted) == want);
      CHECK(lanes.last_times().fused_lanes == 2);
    }
    // Bundled keys (fused_bundle = 2, docs/gpu.md 6.25): the bundling kernel, then the bundled
    // cluster kernel on clusters of k+1 and (k+1)l blocks (every block summing its column);
    // then the rotation started while the bundling runs (fused_bundle_overlap = 2, 6.26: its
    // counters, the waits for them, the programmatic launch), twice.
    if (clusters_here()) {
      for (const std::uint32_t blocks : {k1, k1 * p.bk_level_count}) {
        for (const std::uint32_t overlap : {0u, 2u}) {
          INFO("unrolled key, bundled, blocks per cluster " << blocks << ", overlap " << overlap);
          CudaOptions o = fused_options(0, GpuKeySwitching::gather, 0, blocks);
          o.fused_bundle = 2;
          o.fused_bundle_overlap = overlap;
          CudaBackend& be = gpu_with(p, o, 2);
          CHECK(run_plan(be, plan, encrypted) == want);
          CHECK(be.last_times().fused_bundle == (overlap == 2 ? 2u : 1u));
          if (overlap == 2) CHECK(run_plan(be, plan, encrypted) == want);
        }
      }
      // A key in fours (docs/gpu.md 6.25, 6.31; the batch-1 default overlaps): the bundling
      // kernel with U = 4 before the rotation, then beside it.
      const LweBatch want4 = run_plan(cpu_for(p, 4), plan, encrypted);
      for (const std::uint32_t overlap : {1u, 2u}) {
        INFO("key in fours, bundled, overlap " << overlap);
        CudaOptions o = fused_options(0, GpuKeySwitching::gather, 0, k1);
        o.fused_bundle_overlap = overlap;
        CudaBackend& be = gpu_with(p, o, 4);
        CHECK(run_plan(be, plan, encrypted) == want4);
        CHECK(be.last_times().fused_bundle == overlap);
      }
    }
  }
}

TEST_CASE("one million tfhe_lib_128 gates on the fused engine with zero errors",
          "[gpu][fused][slow]") {
  const std::uint64_t seed = catch_seed(0xf1e6);
  INFO("seed " << seed);
  CudaBackend& be = gpu_with(tfhe_lib_128(), fused_options(0, GpuKeySwitching::tensor_core));
  const auto [gates, errors] =
      million_gates(be, "the fused engine with tensor-core key switching", seed);
  CHECK(gates >= 1000000);
  CHECK(errors == 0);
}

#if defined(TORUSGATE_GPU_TEST_EMULATED)
// The emulator's log of runtime calls (gpu/emu): what a small batch's evaluate() asks of the
// runtime before its blind rotation starts is host time its caller waits for (docs/gpu.md,
// section 6.29).
TEST_CASE("fused engine at batch 1: a repeated evaluate() asks the runtime nothing it need "
          "not, and reads its times only when asked",
          "[gpu][fused]") {
  using S = CudaStorage;
  const Parameters p = toy_insecure();
  CudaBackend& be = gpu_with(p, fused_options());
  Csprng rng = seeded_rng(catch_seed(0xca11));
  const SecretKey& key = keys_for(p).secret;
  auto A = encrypt(be, key, std::vector<std::uint8_t>{1}, rng);
  auto B = encrypt(be, key, std::vector<std::uint8_t>{1}, rng);
  auto out = be.allocate(1);
  const std::vector<GateOp<S>> ops = {gate::nand<S>(A.bits(), B.bits(), out.bits())};
  be.evaluate(ops);  // the first makes the workspace
  cuda_emu::start_call_log();
  be.evaluate(ops);
  const std::vector<std::string> calls = cuda_emu::stop_call_log();
  std::string listed;
  for (const auto& c : calls) listed += c + "\n";
  INFO(listed);
  const auto count = [&](const std::string& name) {
    return std::count(calls.begin(), calls.end(), name);
  };
  // No query the engine already made, no allocation, no wait but the last one, no timing.
  for (const char* name :
       {"cudaMemGetInfo", "cudaFuncSetAttribute", "cudaFuncGetAttributes", "cudaDeviceGetAttribute",
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "cudaOccupancyMaxActiveClusters",
        "cudaMallocAsync", "cudaMalloc", "cudaMallocHost", "cudaEventCreate",
        "cudaEventSynchronize", "cudaEventElapsedTime"}) {
    INFO(name);
    CHECK(count(name) == 0);
  }
  CHECK(count("cudaStreamSynchronize") == 1);
  // Before the rotation's launch: the device guard's check, the descriptors' copy, the events
  // where the evaluate starts and where the tables and the linear combinations end, and one
  // launch (the linear combinations, switched masks and fresh accumulators) with its check.
  const auto rotation = std::find_if(calls.begin(), calls.end(), [](const std::string& c) {
    return c.rfind("launch fused_", 0) == 0;
  });
  REQUIRE(rotation != calls.end());
  CHECK(rotation - calls.begin() <= 7);
  CHECK(count("cudaMemcpyAsync") == 1);
  CHECK(count("cudaEventRecord") == 7);
  // The times, read when asked: one elapsed time per phase and the whole, then no more calls.
  cuda_emu::start_call_log();
  const CudaPhaseTimes t = be.last_times();
  const CudaPhaseTimes again = be.last_times();
  const std::vector<std::string> reads = cuda_emu::stop_call_log();
  CHECK(std::count(reads.begin(), reads.end(), "cudaEventElapsedTime") == 7);
  CHECK(again.evaluate_ms == t.evaluate_ms);
  CHECK(t.blind_rotation_ms > 0);
  CHECK(t.key_switching_ms > 0);
  // The phases tile the evaluate: each starts where the one before ended.
  CHECK(phase_sum(t) == Approx(t.evaluate_ms).epsilon(1e-4));
  CHECK(decrypt(be, key, out.bits()) == std::vector<std::uint8_t>{0});
}
#endif
