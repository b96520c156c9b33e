// The output folder of a comparison run: results.jsonl (one JSON object per line, written
// after every measurement, so a killed run loses at most the item it was running), and
// results.json and results.csv, rewritten from it after every measurement (a temporary file,
// then a rename). A lock on results.jsonl keeps two runs out of one folder; the kernel drops
// it when a run dies, so a killed run can be resumed at once.
//
// Line records ("record" field): "run" (one per invocation: date, commit, machine, command
// line), "keys" (key generation of a parameter set), "backend" (a backend's setup and
// calibration, or why it is unavailable) and "result" (one item on one backend: measured,
// skipped, or wrong). A result is identified by workload, size, backend and params; the
// last line wins.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace torusgate::apps::compare {

// A JSON object of one line; values are kept as JSON text, fields in insertion order.
class JsonRecord {
 public:
  void set_raw(const std::string& key, std::string json);
  void set(const std::string& key, const std::string& value);
  void set(const std::string& key, const char* value) { set(key, std::string(value)); }
  void set(const std::string& key, double value);
  void set(const std::string& key, std::uint64_t value);
  void set(const std::string& key, int value) { set(key, static_cast<std::uint64_t>(value)); }
  void set(const std::string& key, bool value);
  void set(const std::string& key, const std::vector<double>& values);

  // The JSON text of a field, or nullptr.
  const std::string* raw(const std::string& key) const;
  // A field as text: strings decoded, numbers and literals as written, null and missing "".
  std::string text(const std::string& key) const;
  // A field that is a finite JSON number, else nullopt (missing, null, text, ...).
  std::optional<double> number(const std::string& key) const;
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

  std::string to_json() const;  // one line, no newline
  // nullopt unless `line` is one JSON object (any values; nested ones are kept as text).
  static std::optional<JsonRecord> parse(std::string_view line);

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// The identity of a result: workload, size, backend, params.
std::string result_key(const JsonRecord& r);

// The columns of results.csv, in order.
const std::vector<std::string>& csv_columns();
// One CSV field (quoted when it holds a comma, quote or line break).
std::string csv_field(const std::string& text);

class ResultStore {
 public:
  enum class Mode {
    Fresh,      // the folder must hold no results yet
    Resume,     // keep what is there and add to it
    Overwrite,  // start again: the old results are removed
  };
  // Creates the folder, takes the lock, reads results.jsonl (a damaged last line, the mark of
  // a killed run, is dropped with a warning on stderr). Throws Error when another run holds
  // the lock, when the folder has results and mode is Fresh, or on a damaged line elsewhere.
  ResultStore(std::filesystem::path dir, Mode mode);
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // The last result with this key, or nullptr.
  const JsonRecord* find_result(const std::string& key) const;
  std::size_t result_count() const { return result_index_.size(); }

  // Appends a record (written at once) and rewrites results.json and results.csv.
  void append(const JsonRecord& record);

 private:
  void truncate_lines(std::size_t bytes);
  void index_result(std::size_t record);
  void write_summaries() const;

  // An open file, closed (and so unlocked) when the store goes, or when its constructor throws.
  struct FileDescriptor {
    int fd = -1;
    FileDescriptor() = default;
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor();
  };

  std::filesystem::path dir_;
  FileDescriptor lines_;  // results.jsonl, locked, opened for appending
  std::vector<JsonRecord> records_;
  std::map<std::string, std::size_t> result_index_;  // key -> index into records_
  std::vector<std::string> result_order_;            // keys in order of first appearance
};

}  // namespace torusgate::apps::compare
