// ByteWriter (internal to core/src): little-endian values buffered and written to a stream
// in chunks, shared by the native file format and the TFHE library formats. A failed stream
// throws SystemError naming the context and how many bytes were written.
#pragma once

#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "file_io.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::detail {

class ByteWriter {
 public:
  static constexpr std::size_t chunk_bytes = std::size_t{1} << 16;
  // `observe`, when given, sees every byte written through put/flush (the native format
  // hashes them for its checksum); write_unobserved bypasses it.
  using Observer = std::function<void(const unsigned char*, std::size_t)>;

  ByteWriter(std::ostream& out, std::string context, Observer observe = {})
      : out_(out), context_(std::move(context)), observe_(std::move(observe)) {
    buffer_.reserve(chunk_bytes);
  }

  void put(unsigned char c) {
    buffer_.push_back(c);
    if (buffer_.size() == chunk_bytes) flush();
  }
  void bytes(const unsigned char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) put(data[i]);
  }
  void text(std::string_view s) {
    for (char c : s) put(static_cast<unsigned char>(c));
  }
  void u32(std::uint32_t v) {
    for (int b = 0; b < 4; ++b) put(static_cast<unsigned char>(v >> (8 * b)));
  }
  void u64(std::uint64_t v) {
    for (int b = 0; b < 8; ++b) put(static_cast<unsigned char>(v >> (8 * b)));
  }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }

  // Shows the buffered bytes to the observer and writes them.
  void flush() {
    if (observe_) observe_(buffer_.data(), buffer_.size());
    write_buffer();
  }
  // Writes `data` after everything buffered, without showing it to the observer.
  void write_unobserved(const unsigned char* data, std::size_t size) {
    flush();
    buffer_.assign(data, data + size);
    write_buffer();
  }
  // Writes what is buffered and flushes the stream; throws SystemError on failure.
  void finish() {
    flush();
    errno = 0;
    out_.flush();
    check();
  }

 private:
  void write_buffer() {
    errno = 0;
    out_.write(reinterpret_cast<const char*>(buffer_.data()),
               static_cast<std::streamsize>(buffer_.size()));
    check();
    written_ += buffer_.size();
    buffer_.clear();
  }
  // The system's reason where the stream is a file and the failed write set errno ("No space
  // left on device", "File too large").
  void check() const {
    if (!out_) {
      throw SystemError(context_ + ": the output stream failed after " + std::to_string(written_) +
                        " bytes" + errno_reason(errno));
    }
  }

  std::ostream& out_;
  std::string context_;
  Observer observe_;
  std::vector<unsigned char> buffer_;
  std::uint64_t written_ = 0;
};

}  // namespace torusgate::detail
