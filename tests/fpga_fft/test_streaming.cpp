// The cycle-level streaming model against the functional model: bit-identical outputs for
// every streaming width, radix, direction and twist at M = 512 and exhaustively at small
// sizes; the simulated latency equals the documented formula; one transform per M/w cycles;
// the measured memory peaks equal the schedule's; resource counts; run_bytes against the heap
// a run takes; bad configurations.
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "fpga_fft/heap_counter.hpp"
#include "test_support.hpp"
#include "torusgate/fpga_fft/streaming.hpp"
#include "torusgate/fpga_fft/verilog.hpp"

using namespace torusgate;
using namespace torusgate::fpga_fft;
using torusgate::test::catch_seed;
using torusgate::test::seeded_rng;

namespace {

std::vector<std::vector<CWord>> random_transforms(Csprng& rng, std::size_t count, std::size_t M,
                                                  std::uint32_t bits) {
  std::vector<std::vector<CWord>> out(count, std::vector<CWord>(M));
  const std::int64_t half = std::int64_t{1} << (bits - 1);
  for (auto& t : out) {
    for (auto& w : t) {
      w.re = static_cast<std::int64_t>(rng.uniform_u64() % std::uint64_t(2 * half)) - half;
      w.im = static_cast<std::int64_t>(rng.uniform_u64() % std::uint64_t(2 * half)) - half;
    }
  }
  return out;
}

// Runs the streaming model and checks it against the functional model, the formula, the
// throughput and the memory figures.
void check_streaming(const FixedFftConfig& fc, const StreamingConfig& sc, Direction dir,
                     Csprng& rng) {
  const FixedFft fft(fc);
  const StreamingFft stream(fft, sc, dir);
  INFO(fc.describe() << " w=" << sc.width << " Lm=" << sc.multiplier_latency << " La="
                     << sc.adder_latency << " " << to_string(dir));
  // Words of up to W-8 bits: no overflow in these tests except where the words grow.
  const auto inputs = random_transforms(rng, 3, fc.size, fc.word_bits - 12);
  StreamingReport report;
  const auto outputs = stream.run(inputs, &report);
  std::vector<std::uint64_t> overflows(fft.stages(), 0);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    std::vector<CWord> want(fc.size);
    if (dir == Direction::Forward) {
      fft.forward(inputs[k], want, overflows);
    } else {
      fft.inverse(inputs[k], want, overflows);
    }
    REQUIRE(outputs[k] == want);
  }
  CHECK(report.overflows == overflows);
  CHECK(report.latency == stream.latency_formula());
  CHECK(report.transform_interval == stream.transform_interval());
  CHECK(report.transform_interval == fc.size / sc.width);
  std::vector<std::uint64_t> scheduled;
  for (const auto& u : stream.units()) {
    if (u.kind == StreamingUnit::Kind::Permutation) scheduled.push_back(u.memory_words);
  }
  CHECK(report.memory_peaks == scheduled);
  std::uint64_t latency = 0;
  for (const auto& u : stream.units()) latency += u.latency;
  CHECK(latency == stream.latency_formula());
}

}  // namespace

TEST_CASE("fpga_fft streaming: every width at M = 512 reproduces the functional model",
          "[fpga_fft][streaming]") {
  const std::uint64_t seed = catch_seed(0x5710);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const bool merged : {false, true}) {
    for (const Direction dir : {Direction::Forward, Direction::Inverse}) {
      for (std::uint32_t w = 2; w <= 64; w *= 2) {
        FixedFftConfig fc;
        fc.merged_twist = merged;
        fc.frac_bits = 20;
        StreamingConfig sc;
        sc.width = w;
        check_streaming(fc, sc, dir, rng);
      }
      for (std::uint32_t w = 8; w <= 256; w *= 2) {
        FixedFftConfig fc;
        fc.radix = 8;
        fc.merged_twist = merged;
        fc.rounding = Rounding::Truncate;
        StreamingConfig sc;
        sc.width = w;
        sc.multiplier_latency = 5;
        sc.adder_latency = 2;
        check_streaming(fc, sc, dir, rng);
      }
    }
  }
}

TEST_CASE("fpga_fft streaming: small sizes, every radix, width and latency",
          "[fpga_fft][streaming]") {
  const std::uint64_t seed = catch_seed(0x5711);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (std::uint32_t M = 2; M <= 64; M *= 2) {
    const unsigned lm = static_cast<unsigned>(std::countr_zero(M));
    for (unsigned j = 1; j <= lm; ++j) {
      if (lm % j != 0) continue;
      const std::uint32_t r = 1u << j;
      for (std::uint32_t w = std::max<std::uint32_t>(2, r); w <= M; w *= 2) {
        for (const bool merged : {false, true}) {
          for (const Direction dir : {Direction::Forward, Direction::Inverse}) {
            for (const auto& [lm_lat, la_lat] : {std::pair{0u, 0u}, std::pair{3u, 1u}, std::pair{1u, 4u}}) {
              FixedFftConfig fc;
              fc.size = M;
              fc.radix = r;
              fc.word_bits = 40;
              fc.frac_bits = 16;
              fc.merged_twist = merged;
              StreamingConfig sc;
              sc.width = w;
              sc.multiplier_latency = lm_lat;
              sc.adder_latency = la_lat;
              check_streaming(fc, sc, dir, rng);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("fpga_fft streaming: latency formula by hand, resources", "[fpga_fft][streaming]") {
  // M = 8, r = 2, w = 2: stages 0 and 1 are reordered (L = 8, 4 > w); term(8) = 1 + 4 - 2 = 3
  // twice (the input reorder and the one into stage 1), term(4) = 1 + 2 - 1 = 2 (back to
  // natural order); stage 0 has no multiplier (separate twist), so A = 1 + 4 + 4 with Lm = 3,
  // La = 1: 3 + 3 + 2 + 1 + 4 + 4 = 17.
  FixedFftConfig fc;
  fc.size = 8;
  StreamingConfig sc;
  sc.width = 2;
  sc.multiplier_latency = 3;
  sc.adder_latency = 1;
  const FixedFft fft(fc);
  const StreamingFft stream(fft, sc, Direction::Forward);
  CHECK(stream.latency_formula() == 17);
  CHECK(stream.transform_interval() == 4);
  // Multipliers: stages 1 and 2, one complex multiplier each (w/r = 1 butterfly, lane 1).
  CHECK(stream.multipliers() == 2 * 4);
  // Adders: 3 stages x 1 butterfly x 4, plus 2 per complex multiplier.
  CHECK(stream.adders() == 3 * 4 + 2 * 2);
  CHECK(stream.memory_words() > 0);
  // Full width (w = M): no reordering, no memory.
  sc.width = 8;
  const StreamingFft wide(fft, sc, Direction::Forward);
  CHECK(wide.memory_words() == 0);
  CHECK(wide.latency_formula() == 1 + 4 + 4);
  // Radix 8 internal multipliers: (1)(8/2 - 2) = 2 per butterfly.
  FixedFftConfig f8;
  f8.size = 64;
  f8.radix = 8;
  const FixedFft fft8(f8);
  sc.width = 8;
  const StreamingFft s8(fft8, sc, Direction::Forward);
  // Stage 0 (no twiddle): 1 butterfly x 2 internal; stage 1: 7 twiddle + 2 internal.
  CHECK(s8.multipliers() == 4 * (2 + 7 + 2));
}

TEST_CASE("fpga_fft streaming: run_bytes bounds the heap a run takes",
          "[fpga_fft][streaming]") {
  Csprng rng = seeded_rng(catch_seed(0x52554e42));
  struct Case {
    std::size_t size;
    std::uint32_t radix, width, transforms;
  };
  // Map nodes dominate few transforms of a narrow stream; the outputs dominate many.
  for (const Case c : {Case{8, 2, 2, 1}, Case{16, 2, 4, 2}, Case{64, 8, 8, 1},
                       Case{512, 2, 2, 1}, Case{512, 2, 16, 2}, Case{4096, 8, 8, 3},
                       Case{1024, 2, 4, 64}}) {
    FixedFftConfig fc;
    fc.size = c.size;
    fc.radix = c.radix;
    StreamingConfig sc;
    sc.width = c.width;
    const FixedFft fft(fc);
    const StreamingFft stream(fft, sc, Direction::Forward);
    const auto inputs = random_transforms(rng, c.transforms, c.size, 20);
    const std::int64_t before = test::heap_peak_reset();
    const auto outputs = stream.run(inputs);
    const auto taken = static_cast<double>(test::heap_peak() - before);
    const auto estimate = static_cast<double>(stream.run_bytes(c.transforms));
    INFO("M = " << c.size << ", r = " << c.radix << ", w = " << c.width << ", "
                << c.transforms << " transforms: peak " << taken << " bytes, estimate "
                << estimate);
    CHECK(estimate >= taken);
    CHECK(estimate <= 2 * taken + 16384);  // within twice, beyond a tiny run's fixed costs
  }
  // Linear in the transforms; saturated where it would not fit 64 bits.
  FixedFftConfig fc;
  fc.size = 65536;
  const StreamingFft big(FixedFft(fc), StreamingConfig{}, Direction::Forward);
  const std::uint64_t per_transform = 65536 * sizeof(CWord) + sizeof(std::vector<CWord>);
  CHECK(big.run_bytes(1024) - big.run_bytes(512) == 512 * per_transform);
  CHECK(big.run_bytes(1024) > (std::uint64_t{1} << 30));
  CHECK(big.run_bytes(std::uint64_t{1} << 62) == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("fpga_fft streaming: bad configurations and inputs are rejected", "[fpga_fft][streaming]") {
  const FixedFft fft{FixedFftConfig{}};
  StreamingConfig sc;
  sc.width = 3;
  REQUIRE_INVALID_ARGUMENT(StreamingFft(fft, sc, Direction::Forward), "width=3");
  sc.width = 512;
  REQUIRE_INVALID_ARGUMENT(StreamingFft(fft, sc, Direction::Forward), "min(256, size)=256");
  FixedFftConfig f8;
  f8.radix = 8;
  sc.width = 4;
  REQUIRE_INVALID_ARGUMENT(StreamingFft(FixedFft(f8), sc, Direction::Forward),
                           "width=4 but expected a power of two in [max(2, radix)=8");
  sc.width = 8;
  sc.multiplier_latency = 65;
  REQUIRE_INVALID_ARGUMENT(StreamingFft(fft, sc, Direction::Forward), "multiplier_latency=65");
  sc.multiplier_latency = 1;
  sc.adder_latency = 100;
  REQUIRE_INVALID_ARGUMENT(StreamingFft(fft, sc, Direction::Forward), "adder_latency=100");
  sc.adder_latency = 1;
  const StreamingFft stream(fft, sc, Direction::Forward);
  std::vector<std::vector<CWord>> wrong(1, std::vector<CWord>(100));
  REQUIRE_INVALID_ARGUMENT(stream.run(wrong), "transform 0 has 100 words");
  CHECK(stream.run({}).empty());
  // M = 512, r = 2: stages 0..8, indices 0..511.
  CHECK(stream.stage_position(8, 100) == 100);  // L = 2 <= w: the natural order
  REQUIRE_INVALID_ARGUMENT(stream.stage_position(9, 100),
                           "stage_position: stage=9 but the transform has stages 0..8");
  REQUIRE_INVALID_ARGUMENT(stream.stage_position(0, 512), "stage_position: index=512");
}

TEST_CASE("fpga_fft verilog: module names, word widths and counts are checked",
          "[fpga_fft][verilog]") {
  FixedFftConfig fc;
  fc.size = 16;
  StreamingConfig sc;
  sc.width = 4;
  const StreamingFft stream(FixedFft(fc), sc, Direction::Forward);
  CHECK(generate_verilog(stream, "Module").module_name == "Module");  // Verilog is case-sensitive
  for (const char* word : {"module", "reg", "wire", "always_ff", "logic", "xor", "uwire"}) {
    REQUIRE_INVALID_ARGUMENT(generate_verilog(stream, word),
                             std::string("module name '") + word +
                                 "' is a reserved word of Verilog or SystemVerilog");
  }
  REQUIRE_INVALID_ARGUMENT(generate_verilog(stream, "9x"), "is not a Verilog identifier");

  // The file formats: 2W hex digits a word, W in the datapath's 8..64.
  const std::vector<std::vector<CWord>> words = {{{1, -1}, {-32768, 32767}}, {{5, 6}, {-7, 0}}};
  const std::string vectors = format_vectors(words, 16);
  CHECK(vectors.substr(0, 9) == "ffff0001\n");
  for (const unsigned W : {0u, 7u, 65u, 80u, 100u}) {
    REQUIRE_INVALID_ARGUMENT(format_vectors(words, W),
                             "format_vectors: word_bits=" + std::to_string(W) + " but expected 8..64");
    REQUIRE_INVALID_ARGUMENT(parse_simulation_output("", 1, 2, W),
                             "parse_simulation_output: word_bits=" + std::to_string(W));
  }
  // What the testbench writes parses back to the words, transform by transform.
  std::string output;
  std::size_t cycle = 7;
  for (std::size_t start = 0; start < vectors.size(); cycle += 2) {
    const std::size_t end = vectors.find('\n', start);
    output += std::to_string(cycle) + " " + vectors.substr(start, end - start) + "\n";
    start = end + 1;
  }
  const SimulatedOutput parsed = parse_simulation_output(output, 2, 2, 16);
  CHECK(parsed.transforms == words);
  CHECK(parsed.first_output_cycle == 7);
  CHECK(parsed.transform_interval == 4);
  // Counts: the product is checked, and nothing is allocated for words the text lacks.
  REQUIRE_INVALID_ARGUMENT(parse_simulation_output("", std::size_t{1} << 62, 4, 64),
                           "transforms=4611686018427387904 of points=4 make 2^64 words or more");
  REQUIRE_INVALID_ARGUMENT(parse_simulation_output("", 1, 0, 64), "points=0");
  REQUIRE_THROWS_AS(parse_simulation_output(output, std::size_t{1} << 40, 1, 16), FormatError);
  REQUIRE_THROWS_WITH(parse_simulation_output(output, std::size_t{1} << 40, 1, 16),
                      Catch::Matchers::Contains("4 words but expected 1099511627776"));
}
