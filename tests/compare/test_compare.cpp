// The comparison program's parts: the workload lists and their selection, every quick item
// on the plaintext and sequential backends (right results, exact counters), the detection of
// a wrong result, the JSON records and the result folder (fresh, resume, overwrite, a killed
// run's unfinished line, the lock).
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "item_runner.hpp"
#include "results.hpp"
#include "test_support.hpp"
#include "torusgate/core/plaintext_backend.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "workloads.hpp"

using namespace torusgate;
using namespace torusgate::apps;
using namespace torusgate::apps::compare;

namespace {

// The plaintext backend with one fault: the first output bit of every batch is flipped.
class FaultyBackend {
 public:
  using Storage = PlaintextStorage;
  using HostBatch = PlainBits;
  using ClientKey = PlaintextKey;
  std::string name() const { return "faulty"; }
  BitBuffer<Storage> allocate(std::size_t count) { return inner_.allocate(count); }
  BitBuffer<Storage> upload(const PlainBits& batch) { return inner_.upload(batch); }
  PlainBits download(BitSpan<Storage> bits) const { return inner_.download(bits); }
  void evaluate(std::span<const GateOp<Storage>> batch) {
    inner_.evaluate(batch);
    if (!batch.empty() && batch[0].out.count > 0)
      batch[0].out.storage->bits[batch[0].out.offset] ^= 1;
  }
  const BackendStats& stats() const { return inner_.stats(); }
  void reset_stats() { inner_.reset_stats(); }

 private:
  PlaintextBackend inner_;
};
static_assert(Backend<FaultyBackend>);

std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("torusgate_test_compare_" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

JsonRecord result(const std::string& workload, const std::string& backend, double median) {
  JsonRecord r;
  r.set("record", "result");
  r.set("group", "addition");
  r.set("workload", workload);
  r.set("size", "u32");
  r.set("backend", backend);
  r.set("params", "tfhe_lib_80");
  r.set("status", "ok");
  r.set("median_s", median);
  r.set("seconds", std::vector<double>{median, median});
  return r;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("the full item list has the published sizes, each item once", "[compare]") {
  const std::vector<Item> items = all_items(false);
  std::set<std::string> keys;
  for (const Item& it : items) CHECK(keys.insert(it.key()).second);
  for (const char* key : {"gate.coalesced 2 bits",
                          "gate.coalesced 32 bits",
                          "add.ripple u16",
                          "add.number-wise u24",
                          "add.kogge-stone u32",
                          "add.sklansky u32",
                          "vector.add u16 x4",
                          "vector.mul u32 x32",
                          "mul.wrapping.dadda u16",
                          "mul.wrapping.tree u24",
                          "mul.wrapping.karatsuba u32",
                          "matmul u16 2x2",
                          "matmul u32 16x16",
                          "cannon u32 16x16",
                          "regression.numeric 200x10 s8",
                          "regression.numeric 300x20 s8",
                          "regression.binary 200x20 u1",
                          "regression.binary 300x10 u1",
                          "full-adder.compound 32 bits",
                          "and-xor.separate 16 bits"})
    CHECK(keys.count(key) == 1);
  CHECK(items.size() == 91);
}

TEST_CASE("select_items picks groups and workloads and names the unknown", "[compare]") {
  const std::vector<Item> items = all_items(true);
  CHECK(select_items(items, {"all"}).size() == items.size());
  for (const Item& it : select_items(items, {"matrix"})) CHECK(it.group == "matrix");
  const std::vector<Item> two = select_items(items, {"add.sklansky", "cannon"});
  REQUIRE(!two.empty());
  for (const Item& it : two) CHECK((it.workload == "add.sklansky" || it.workload == "cannon"));
  REQUIRE_INVALID_ARGUMENT(select_items(items, {"addition", "adition"}),
                           "unknown group or workload 'adition'");
}

TEST_CASE("every quick item is right on the plaintext and sequential backends", "[compare]") {
  const test::TestKeys& keys = test::keys_for(toy_insecure());
  SequentialBackend be(keys.cloud);
  Csprng rng = test::seeded_rng(test::catch_seed(41));
  for (const Item& item : all_items(true)) {
    INFO(item.key());
    PlaintextBackend plain;
    const PlaintextKey plain_key;
    const Cost cost = measure_cost(plain, plain_key, rng, item);  // throws when wrong
    CHECK(cost.bootstraps > 0);
    CHECK(cost.depth > 0);
    CHECK(cost.ciphertext_bits > 0);
    const Measurement m = measure_item(be, keys.secret, rng, item, cost, 0, 1, false);
    CHECK(m.wrong.empty());
    CHECK(m.seconds.size() == 1);
  }
}

TEST_CASE("gate items cost what their batches say", "[compare]") {
  Csprng rng = test::seeded_rng(7);
  const auto cost = [&](WorkloadKind kind) {
    Item it = calibration_item(8);
    it.kind = kind;
    PlaintextBackend plain;
    const PlaintextKey key;
    return measure_cost(plain, key, rng, it);
  };
  CHECK(cost(WorkloadKind::GateCoalesced).depth == 1);
  CHECK(cost(WorkloadKind::GateOneByOne).depth == 8);
  CHECK(cost(WorkloadKind::AndXorCompound).bootstraps == 16);
  CHECK(cost(WorkloadKind::AndXorCompound).depth == 1);
  CHECK(cost(WorkloadKind::AndXorSeparate).depth == 2);
  CHECK(cost(WorkloadKind::FullAdderCompound).depth == 1);
  CHECK(cost(WorkloadKind::FullAdderTwoInput).bootstraps == 40);
  CHECK(cost(WorkloadKind::FullAdderTwoInput).depth == 3);
}

TEST_CASE("a wrong result is reported, not measured as right", "[compare]") {
  Csprng rng = test::seeded_rng(9);
  for (const Item& item : select_items(
           all_items(true), {"gate.coalesced", "add.sklansky", "cannon", "regression.binary"})) {
    INFO(item.key());
    PlaintextBackend plain;
    const PlaintextKey key;
    const Cost cost = measure_cost(plain, key, rng, item);
    FaultyBackend faulty;
    const Measurement m = measure_item(faulty, key, rng, item, cost, 0, 1, false);
    CHECK_THAT(m.wrong, Catch::Matchers::Contains(item.key()));
    FaultyBackend faulty2;
    REQUIRE_THROWS_WITH(measure_cost(faulty2, key, rng, item),
                        Catch::Matchers::Contains("faulty backend computed"));
  }
}

TEST_CASE("compare_values names the first mismatch and counts them", "[compare]") {
  const std::vector<std::uint64_t> want = {1, 2, 3, 4};
  CHECK(compare_values(want, want, "x").empty());
  const std::vector<std::uint64_t> got = {1, 9, 3, 8};
  CHECK(compare_values(got, want, "sum") ==
        "sum: element 1 is 9 but plain arithmetic gives 2 (2 of 4 elements differ)");
  CHECK_THAT(compare_values(std::vector<std::uint64_t>{1}, want, "sum"),
             Catch::Matchers::Contains("1 values decrypted, 4 expected"));
  REQUIRE_INVALID_ARGUMENT(low_mask(0), "low_mask: 0 bits");
  CHECK(low_mask(64) == ~std::uint64_t{0});
  CHECK(plain_matmul(std::vector<std::uint64_t>{1, 2, 3, 4}, std::vector<std::uint64_t>{5, 6, 7, 8},
                     2, 4) == std::vector<std::uint64_t>{19 & 15, 22 & 15, 43 & 15, 50 & 15});
}

TEST_CASE("JSON records round-trip and malformed lines are refused", "[compare]") {
  JsonRecord r;
  r.set("name", "a \"quoted\", comma\nline");
  r.set("n", std::uint64_t{18446744073709551615ull});
  r.set("x", 0.1);
  r.set("ok", true);
  r.set("list", std::vector<double>{1.5, 2});
  r.set_raw("nested", "{\"a\": [1, {\"b\": \"}\"}]}");
  r.set("n", std::uint64_t{7});  // replaces, keeps the position
  const std::optional<JsonRecord> back = JsonRecord::parse(r.to_json());
  REQUIRE(back);
  CHECK(back->fields() == r.fields());
  CHECK(back->fields()[1].first == "n");
  CHECK(back->text("name") == "a \"quoted\", comma\nline");
  CHECK(back->text("n") == "7");
  CHECK(back->text("missing").empty());
  CHECK(*back->raw("list") == "[1.5, 2]");
  for (const char* bad : {"", "{", "{\"a\": 1", "{\"a\" 1}", "{\"a\": tru}", "[1]", "{\"a\": 1} x",
                          "{\"a\": \"unterminated}"})
    CHECK_FALSE(JsonRecord::parse(bad));
  // Values that are no JSON, which results.json would copy (found by fuzz/compare_results).
  for (const char* bad : {"{\"a\": 1.2.3}", "{\"a\": -}", "{\"a\": 1abc}", "{\"a\": -inf}",
                          "{\"a\": \"x\\qy\"}"})
    CHECK_FALSE(JsonRecord::parse(bad));
  // A \u escape needs four hex digits (a bad one made the whole run fail with 'stoul').
  CHECK(JsonRecord::parse("{\"a\": \"\\u0041\"}")->text("a") == "A");
  for (const char* bad : {"{\"a\": \"\\uZZZZ\"}", "{\"a\": \"\\u12\"}", "{\"a\": \"\\u-123\"}"})
    CHECK_FALSE(JsonRecord::parse(bad));
  // number(): finite numbers only (a null median made the resume fail with 'stod').
  const std::optional<JsonRecord> nums =
      JsonRecord::parse("{\"x\": 1.5, \"n\": null, \"s\": \"2\", \"e\": 1e400}");
  REQUIRE(nums);
  CHECK(nums->number("x") == 1.5);
  CHECK_FALSE(nums->number("n"));
  CHECK_FALSE(nums->number("s"));
  CHECK_FALSE(nums->number("e"));
  CHECK_FALSE(nums->number("missing"));
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a,\"b\"") == "\"a,\"\"b\"\"\"");
}

// The note on a killed run's last line quotes --out's folder: its control bytes escaped.
TEST_CASE("the note on a killed run's last line shows the folder's control bytes escaped",
          "[compare]") {
  const std::filesystem::path dir = fresh_dir("store_note") / "out\x1b[2J";
  {
    ResultStore store(dir, ResultStore::Mode::Fresh);
    store.append(result("add.ripple", "sequential", 2.0));
  }
  { std::ofstream(dir / "results.jsonl", std::ios::app) << "{\"record\": \"res"; }
  std::ostringstream err;
  std::streambuf* const saved = std::cerr.rdbuf(err.rdbuf());
  try {
    ResultStore store(dir, ResultStore::Mode::Resume);
    CHECK(store.result_count() == 1);
  } catch (...) {
    std::cerr.rdbuf(saved);
    throw;
  }
  std::cerr.rdbuf(saved);
  CHECK(err.str().find("dropping the unfinished last line") != std::string::npos);
  CHECK(err.str().find("out\\x1B[2J") != std::string::npos);
  CHECK(err.str().find('\x1b') == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the result folder: fresh, resume, overwrite, lock, a killed run's last line",
          "[compare]") {
  const std::filesystem::path dir = fresh_dir("store");
  {
    ResultStore store(dir, ResultStore::Mode::Fresh);
    store.append(result("add.ripple", "sequential", 2.0));
    store.append(result("add.ripple", "openmp", 1.0));
    store.append(result("add.ripple", "sequential", 1.5));  // measured again: the last one wins
    CHECK(store.result_count() == 2);
    CHECK(store.find_result("add.ripple u32 | sequential | tfhe_lib_80")->text("median_s") ==
          "1.5");
    // A second run into the same folder while this one holds it.
    CHECK_THROWS_WITH(ResultStore(dir, ResultStore::Mode::Resume),
                      Catch::Matchers::Contains("another comparison run"));
  }
  const std::string csv = read_all(dir / "results.csv");
  CHECK(csv.rfind("group,panel,variant,workload,size,", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
  CHECK(csv.find(",1.5 1.5,") != std::string::npos);  // the runs, space-separated
  std::string json = read_all(dir / "results.json");
  const std::optional<JsonRecord> summary = JsonRecord::parse(json);
  REQUIRE(summary);
  CHECK(summary->text("format") == "torusgate-compare-1");

  CHECK_THROWS_WITH(ResultStore(dir, ResultStore::Mode::Fresh),
                    Catch::Matchers::Contains("(3 records in results.jsonl, 3 of them results); "
                                              "pass --resume"));

  // A killed run: an unfinished last line is dropped, the rest is kept. A fresh run, refused,
  // leaves it as it is.
  { std::ofstream(dir / "results.jsonl", std::ios::app) << "{\"record\": \"result\", \"wor"; }
  const std::string killed = read_all(dir / "results.jsonl");
  CHECK_THROWS_WITH(ResultStore(dir, ResultStore::Mode::Fresh),
                    Catch::Matchers::Contains("already holds a run"));
  CHECK(read_all(dir / "results.jsonl") == killed);
  {
    ResultStore store(dir, ResultStore::Mode::Resume);
    CHECK(store.result_count() == 2);
    store.append(result("add.sklansky", "openmp", 0.5));
    CHECK(store.result_count() == 3);
  }
  {
    ResultStore store(dir, ResultStore::Mode::Resume);
    CHECK(store.result_count() == 3);
    CHECK(store.find_result("add.sklansky u32 | openmp | tfhe_lib_80") != nullptr);
  }
  // A damaged line in the middle is an error, not silently dropped.
  {
    const std::string lines = read_all(dir / "results.jsonl");
    std::ofstream(dir / "results.jsonl") << "{broken\n" << lines;
  }
  CHECK_THROWS_WITH(ResultStore(dir, ResultStore::Mode::Resume),
                    Catch::Matchers::Contains("line 1 is not a JSON object"));
  // So is a complete last line (its newline written) that is not a record: only a line cut
  // off by a kill is dropped.
  for (const char* last : {"this is garbage\n", "\n"}) {
    const std::string lines = read_all(dir / "results.jsonl").substr(8);  // without "{broken\n"
    std::ofstream(dir / "results.jsonl") << lines << last;
    const auto count = static_cast<std::size_t>(std::count(lines.begin(), lines.end(), '\n'));
    CHECK_THROWS_WITH(ResultStore(dir, ResultStore::Mode::Resume),
                      Catch::Matchers::Contains("line " + std::to_string(count + 1) +
                                                " is not a JSON object"));
    CHECK(read_all(dir / "results.jsonl") == lines + last);
    std::ofstream(dir / "results.jsonl") << "{broken\n" << lines;
  }
  {
    ResultStore store(dir, ResultStore::Mode::Overwrite);
    CHECK(store.result_count() == 0);
  }
  CHECK(!std::filesystem::exists(dir / "results.csv"));
  // --out naming a file: the message names the option.
  { std::ofstream(dir / "a_file") << "x"; }
  CHECK_THROWS_WITH(ResultStore(dir / "a_file", ResultStore::Mode::Fresh),
                    Catch::Matchers::Contains("--out '") &&
                        Catch::Matchers::Contains("a_file': cannot make the folder"));
  std::filesystem::remove_all(dir);
}
