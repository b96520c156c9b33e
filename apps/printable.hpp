// apps::printable: file and command-line text made safe to quote in a one-line message.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace torusgate::apps {

// Text from a file or the command line for a message: control bytes (a NUL, an escape
// sequence), bytes that are not UTF-8 (a binary file read as text) and a UTF-8 byte order mark
// shown as \xNN, so that the message reaches the terminal whole and as it is; beyond 48
// bytes, the start and the size ("zzz... (1000 bytes)").
inline std::string printable(std::string_view token) {
  // A long token (a binary file read as text has few separators) shows its start.
  constexpr std::size_t longest = 48;
  const std::size_t size = token.size();
  if (size > longest) token = token.substr(0, longest);
  std::string text;
  if (token.substr(0, 3) == "\xEF\xBB\xBF") {
    text = "\\xEF\\xBB\\xBF";
    token.remove_prefix(3);
  }
  const auto escape = [&](unsigned char byte) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02X", byte);
    text += escaped;
  };
  for (std::size_t i = 0; i < token.size();) {
    const auto byte = static_cast<unsigned char>(token[i]);
    if (byte < 0x80) {
      if (byte < 0x20 || byte == 0x7F) {
        escape(byte);
      } else {
        text += static_cast<char>(byte);
      }
      ++i;
      continue;
    }
    // A whole UTF-8 sequence as it is; any other byte above 0x7F escaped.
    const std::size_t length = byte >= 0xC2 && byte <= 0xDF   ? 2
                               : byte >= 0xE0 && byte <= 0xEF ? 3
                               : byte >= 0xF0 && byte <= 0xF4 ? 4
                                                              : 0;
    bool whole = length != 0 && i + length <= token.size();
    for (std::size_t k = 1; whole && k < length; ++k) {
      whole = (static_cast<unsigned char>(token[i + k]) & 0xC0) == 0x80;
    }
    if (whole) {
      text.append(token.substr(i, length));
      i += length;
    } else {
      escape(byte);
      ++i;
    }
  }
  if (size > longest) text += "... (" + std::to_string(size) + " bytes)";
  return text;
}

}  // namespace torusgate::apps
