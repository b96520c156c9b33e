// Fuzz harness: the comparison program's results.jsonl reader, used by --resume
// (apps/compare/results.cpp): JsonRecord::parse on each line, then ResultStore on a folder
// whose results.jsonl holds the input. A record that parses must write back (to_json) to a
// line that parses to the same fields, its values must be JSON (a literal, a number, a string
// with JSON's escapes), and its accessors (text, number, result_key) throw nothing;
// JsonRecord::parse throws nothing (nullopt for a line that is no JSON object); ResultStore
// throws Error for a damaged line, and a store that opens takes one more record.
//
// Input: the bytes of results.jsonl.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string_view>

#include "fuzz_support.hpp"
#include "results.hpp"

namespace {

namespace fs = std::filesystem;
using torusgate::apps::compare::JsonRecord;

// The folder of the store: a scratch file's name, without its extension.
const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path p = torusgate::fuzz::scratch_file("compare_results");
    p.replace_extension();
    return p;
  }();
  return dir;
}

void check_record(const JsonRecord& r) {
  using torusgate::fuzz::require;
  for (const auto& [key, raw] : r.fields()) {
    require(!raw.empty(), "compare_results: a field parsed to empty JSON text");
    // What parse accepts is JSON, so that results.json, which copies it, stays JSON: a scalar
    // is a literal or a number, a string's escapes are JSON's.
    if (raw[0] != '"' && raw[0] != '[' && raw[0] != '{') {
      double x = 0;
      const auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), x);
      const bool number = end == raw.data() + raw.size() &&
                          (ec == std::errc{} || ec == std::errc::result_out_of_range) &&
                          raw.find_first_not_of("0123456789+-.eE") == std::string::npos;
      require(raw == "true" || raw == "false" || raw == "null" || number,
              "compare_results: parse accepted the value '" + raw + "', which is no JSON");
    }
    if (raw[0] == '"') {
      for (std::size_t i = 1; i + 1 < raw.size(); ++i) {
        if (raw[i] != '\\') continue;
        require(std::string_view("\"\\/bfnrtu").find(raw[++i]) != std::string_view::npos,
                "compare_results: parse accepted the string " + raw + ", which is no JSON");
      }
    }
    const std::string text = r.text(key);
    const std::optional<double> number = r.number(key);
    if (number) require(std::isfinite(*number), "compare_results: number() is not finite");
    // A string field written again (set) reads back as the same text.
    JsonRecord copy;
    copy.set(key, text);
    require(copy.text(key) == text, "compare_results: the text of field '" + key +
                                        "' does not survive set() and text()");
  }
  (void)torusgate::apps::compare::result_key(r);
  const std::string line = r.to_json();
  const std::optional<JsonRecord> again = JsonRecord::parse(line);
  require(again.has_value(), "compare_results: to_json wrote a line parse refuses: " + line);
  require(again->fields() == r.fields(),
          "compare_results: a record does not read back its own line: " + line);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  namespace cmp = apps::compare;
  const std::string bytes = fuzz::as_string(data, size);

  // Every line alone.
  fuzz::expect_only<>("compare_results: JsonRecord::parse", [&] {
    for (std::size_t start = 0; start <= bytes.size();) {
      const std::size_t end = std::min(bytes.find('\n', start), bytes.size());
      if (const auto r = JsonRecord::parse(std::string_view(bytes).substr(start, end - start))) {
        check_record(*r);
      }
      start = end + 1;
    }
  });

  // The whole file, as --resume reads it (its note on a dropped last line silenced).
  std::error_code ec;
  fs::create_directories(scratch_dir(), ec);
  for (const char* name : {"results.json", "results.csv"}) fs::remove(scratch_dir() / name, ec);
  {
    std::ofstream out(scratch_dir() / "results.jsonl", std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) fuzz::finding("compare_results: cannot write the scratch file");
  }
  std::ostringstream silenced;
  std::streambuf* const cerr_buffer = std::cerr.rdbuf(silenced.rdbuf());
  fuzz::expect_only<Error>("compare_results: ResultStore", [&] {
    cmp::ResultStore store(scratch_dir(), cmp::ResultStore::Mode::Resume);
    const std::size_t results = store.result_count();
    JsonRecord record;
    record.set("record", "result");
    record.set("workload", "fuzz");
    record.set("median_s", 0.5);
    store.append(record);
    fuzz::require(store.result_count() >= results && store.result_count() <= results + 1 &&
                      store.find_result(cmp::result_key(record)) != nullptr,
                  "compare_results: the appended result is not found");
  });
  std::cerr.rdbuf(cerr_buffer);
  fs::remove_all(scratch_dir(), ec);  // libFuzzer may exit without running atexit handlers
  return 0;
}
