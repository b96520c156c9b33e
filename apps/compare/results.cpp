// The output folder of a comparison run: JSON lines, the JSON and CSV summaries, the lock.
#include "results.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "printable.hpp"
#include "text_support.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::apps::compare {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void skip_space(std::string_view s, std::size_t& i) {
  while (i < s.size() && is_space(s[i])) ++i;
}

// Scans a JSON string starting at s[i] == '"'; returns its decoded text (\uXXXX outside
// ASCII becomes '?': our records are ASCII) and moves i past the closing quote.
std::optional<std::string> scan_string(std::string_view s, std::size_t& i) {
  std::string out;
  for (++i; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      ++i;
      return out;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= s.size()) return std::nullopt;
    switch (s[i]) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        if (i + 4 >= s.size()) return std::nullopt;
        unsigned code = 0;
        const char* first = s.data() + i + 1;
        const auto r = std::from_chars(first, first + 4, code, 16);
        if (r.ec != std::errc{} || r.ptr != first + 4) return std::nullopt;  // not 4 hex digits
        out += code < 0x80 ? static_cast<char>(code) : '?';
        i += 4;
        break;
      }
      case '"':
      case '\\':
      case '/':
        out += s[i];
        break;
      default:
        return std::nullopt;  // no JSON escape: the line is damaged
    }
  }
  return std::nullopt;
}

// Scans one JSON value at s[i]; returns its text and moves i past it.
std::optional<std::string> scan_value(std::string_view s, std::size_t& i) {
  const std::size_t start = i;
  if (i >= s.size()) return std::nullopt;
  if (s[i] == '"') {
    if (!scan_string(s, i)) return std::nullopt;
    return std::string(s.substr(start, i - start));
  }
  if (s[i] == '[' || s[i] == '{') {
    int depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        if (!scan_string(s, i)) return std::nullopt;
        continue;
      }
      if (c == '[' || c == '{') ++depth;
      if (c == ']' || c == '}') --depth;
      ++i;
      if (depth == 0) return std::string(s.substr(start, i - start));
    }
    return std::nullopt;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_space(s[i])) ++i;
  const std::string text(s.substr(start, i - start));
  if (text == "true" || text == "false" || text == "null") return text;
  // A number: of the characters of JSON numbers, from a sign or digit, read whole as a double,
  // in its range or not (1e400; number() gives nullopt then). "1.2.3", "-" or "1abc" would make
  // results.json invalid when copied there.
  if (text.empty() || text.find_first_not_of("0123456789+-.eE") != std::string::npos ||
      !(text[0] == '-' || (text[0] >= '0' && text[0] <= '9')))
    return std::nullopt;
  double x = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), x);
  if ((r.ec != std::errc{} && r.ec != std::errc::result_out_of_range) ||
      r.ptr != text.data() + text.size())
    return std::nullopt;
  return text;
}


}  // namespace

void JsonRecord::set_raw(const std::string& key, std::string json) {
  for (auto& [k, v] : fields_)
    if (k == key) {
      v = std::move(json);
      return;
    }
  fields_.emplace_back(key, std::move(json));
}

void JsonRecord::set(const std::string& key, const std::string& value) {
  set_raw(key, json_string(value));
}
void JsonRecord::set(const std::string& key, double value) { set_raw(key, json_number(value)); }
void JsonRecord::set(const std::string& key, std::uint64_t value) {
  set_raw(key, std::to_string(value));
}
void JsonRecord::set(const std::string& key, bool value) { set_raw(key, value ? "true" : "false"); }
void JsonRecord::set(const std::string& key, const std::vector<double>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + json_number(values[i]);
  set_raw(key, s + "]");
}

const std::string* JsonRecord::raw(const std::string& key) const {
  for (const auto& [k, v] : fields_)
    if (k == key) return &v;
  return nullptr;
}

std::string JsonRecord::text(const std::string& key) const {
  const std::string* v = raw(key);
  if (v == nullptr || *v == "null") return "";
  if (!v->empty() && (*v)[0] == '"') {
    std::size_t i = 0;
    return scan_string(*v, i).value_or("");
  }
  return *v;
}

std::optional<double> JsonRecord::number(const std::string& key) const {
  const std::string* v = raw(key);
  if (v == nullptr || v->empty()) return std::nullopt;
  double x = 0;
  const char* last = v->data() + v->size();
  const auto r = std::from_chars(v->data(), last, x);
  if (r.ec != std::errc{} || r.ptr != last || !std::isfinite(x)) return std::nullopt;
  return x;
}

std::string JsonRecord::to_json() const {
  std::string s = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i)
    s += (i ? ", " : "") + json_string(fields_[i].first) + ": " + fields_[i].second;
  return s + "}";
}

std::optional<JsonRecord> JsonRecord::parse(std::string_view line) {
  JsonRecord r;
  std::size_t i = 0;
  skip_space(line, i);
  if (i >= line.size() || line[i] != '{') return std::nullopt;
  ++i;
  skip_space(line, i);
  if (i < line.size() && line[i] == '}') {
    ++i;
  } else {
    while (true) {
      skip_space(line, i);
      if (i >= line.size() || line[i] != '"') return std::nullopt;
      const std::optional<std::string> key = scan_string(line, i);
      if (!key) return std::nullopt;
      skip_space(line, i);
      if (i >= line.size() || line[i] != ':') return std::nullopt;
      ++i;
      skip_space(line, i);
      std::optional<std::string> value = scan_value(line, i);
      if (!value) return std::nullopt;
      r.set_raw(*key, std::move(*value));
      skip_space(line, i);
      if (i < line.size() && line[i] == ',') {
        ++i;
        continue;
      }
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      return std::nullopt;
    }
  }
  skip_space(line, i);
  if (i != line.size()) return std::nullopt;
  return r;
}

std::string result_key(const JsonRecord& r) {
  return r.text("workload") + " " + r.text("size") + " | " + r.text("backend") + " | " +
         r.text("params");
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> columns = {
      "group",    "panel",   "variant",         "workload",         "size",       "x_name",
      "x",        "bits",    "length",          "dimension",        "rows",       "attributes",
      "backend",  "params",  "threads",         "status",           "reps",       "warmup",
      "median_s", "min_s",   "max_s",           "seconds",          "bootstraps", "gates",
      "depth",    "batches", "ciphertext_bits", "bootstraps_per_s", "compile_s",  "estimated_s",
      "check",    "note",    "device",          "machine",          "commit",     "date"};
  return columns;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

ResultStore::ResultStore(std::filesystem::path dir, Mode mode) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    throw SystemError("--out '" + dir_.string() + "': cannot make the folder: " + ec.message());
  }
  const std::filesystem::path lines_path = dir_ / "results.jsonl";
  // results.jsonl is the lock too: flock() on it keeps other runs out until this one ends.
  lines_.fd = ::open(lines_path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (lines_.fd < 0)
    throw SystemError("cannot open '" + lines_path.string() + "': " + std::strerror(errno));
  if (::flock(lines_.fd, LOCK_EX | LOCK_NB) != 0) {
    throw Error("another comparison run is writing to '" + dir_.string() +
                "' (it holds the lock on results.jsonl); wait for it or choose another --out");
  }
  if (mode == Mode::Overwrite) {
    truncate_lines(0);
    std::filesystem::remove(dir_ / "results.json");
    std::filesystem::remove(dir_ / "results.csv");
  }

  std::ifstream in(lines_path, std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Every complete line must be a record; only a last line without its newline (a run killed
  // while it wrote) is dropped, and only once the folder is known to be ours to continue.
  std::size_t good_bytes = 0, line_count = 0;
  bool unfinished = false;
  while (good_bytes < all.size()) {
    const std::size_t end = all.find('\n', good_bytes);
    if (end == std::string::npos) {
      unfinished = true;
      break;
    }
    ++line_count;
    std::optional<JsonRecord> r =
        JsonRecord::parse(std::string_view(all.data() + good_bytes, end - good_bytes));
    if (!r) {
      throw Error("'" + lines_path.string() + "' line " + std::to_string(line_count) +
                  " is not a JSON object; fix or remove that line to resume");
    }
    records_.push_back(std::move(*r));
    good_bytes = end + 1;
  }
  if (!records_.empty() && mode == Mode::Fresh) {
    std::size_t results = 0;
    for (const JsonRecord& r : records_) results += r.text("record") == "result" ? 1 : 0;
    throw Error("'" + dir_.string() + "' already holds a run (" +
                std::to_string(records_.size()) + " records in results.jsonl, " +
                std::to_string(results) + " of them results); pass --resume to continue it or " +
                "--overwrite to start again");
  }
  if (unfinished) {
    std::cerr << "compare_backends: note: dropping the unfinished last line of "
              << terminal_text(lines_path.string()) << " (the mark of a killed run)\n";
    truncate_lines(good_bytes);
  }
  for (std::size_t i = 0; i < records_.size(); ++i)
    if (records_[i].text("record") == "result") index_result(i);
}

ResultStore::FileDescriptor::~FileDescriptor() {
  if (fd >= 0) ::close(fd);  // releases the lock
}

void ResultStore::truncate_lines(std::size_t bytes) {
  if (::ftruncate(lines_.fd, static_cast<off_t>(bytes)) != 0)
    throw SystemError("cannot truncate '" + (dir_ / "results.jsonl").string() +
                      "': " + std::strerror(errno));
}

void ResultStore::index_result(std::size_t i) {
  const std::string key = result_key(records_[i]);
  if (result_index_.emplace(key, i).second)
    result_order_.push_back(key);
  else
    result_index_[key] = i;
}

const JsonRecord* ResultStore::find_result(const std::string& key) const {
  const auto it = result_index_.find(key);
  return it == result_index_.end() ? nullptr : &records_[it->second];
}

void ResultStore::append(const JsonRecord& record) {
  const std::string line = record.to_json() + "\n";
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(lines_.fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw SystemError("writing '" + (dir_ / "results.jsonl").string() +
                        "' failed: " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  records_.push_back(record);
  if (record.text("record") == "result") index_result(records_.size() - 1);
  write_summaries();
}

void ResultStore::write_summaries() const {
  // results.json: every setup record, and the last result of each key.
  std::string json =
      "{\n  \"format\": \"torusgate-compare-1\",\n  \"written\": " + json_string(utc_timestamp());
  for (const char* kind : {"run", "keys", "backend"}) {
    json += std::string(",\n  \"") + kind + (std::string(kind) == "keys" ? "" : "s") + "\": [";
    bool first = true;
    for (const JsonRecord& r : records_) {
      if (r.text("record") != kind) continue;
      json += (first ? "\n    " : ",\n    ") + r.to_json();
      first = false;
    }
    json += first ? "]" : "\n  ]";
  }
  json += ",\n  \"results\": [";
  for (std::size_t i = 0; i < result_order_.size(); ++i)
    json += (i ? ",\n    " : "\n    ") + records_[result_index_.at(result_order_[i])].to_json();
  json += result_order_.empty() ? "]\n}\n" : "\n  ]\n}\n";
  write_file_atomically((dir_ / "results.json").string(), json);

  std::string csv;
  for (std::size_t c = 0; c < csv_columns().size(); ++c) csv += (c ? "," : "") + csv_columns()[c];
  csv += "\n";
  for (const std::string& key : result_order_) {
    const JsonRecord& r = records_[result_index_.at(key)];
    for (std::size_t c = 0; c < csv_columns().size(); ++c) {
      std::string value = r.text(csv_columns()[c]);
      if (!value.empty() && value[0] == '[') {  // an array of numbers: space-separated
        std::string joined;
        for (const char ch : value)
          if (ch != '[' && ch != ']' && ch != ',') joined += ch;
        value = joined;
      }
      if (c) csv += ',';
      csv += csv_field(value);
    }
    csv += "\n";
  }
  write_file_atomically((dir_ / "results.csv").string(), csv);
}

}  // namespace torusgate::apps::compare
