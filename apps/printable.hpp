// apps::printable: file and command-line text made safe to quote in a one-line message.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace torusgate::apps {

// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong form, no surrogate,
// nothing above U+10FFFF) at the start of `text`, or 0.
inline std::size_t utf8_sequence(std::string_view text) {
  if (text.empty()) return 0;
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = at(0);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < length || at(1) < low || at(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if ((at(k) & 0xC0) != 0x80) return 0;
  }
  return length;
}

// Appends `token` to `text` with control bytes (a NUL, an escape sequence, the C1 controls)
// and bytes that are not UTF-8 shown as \xNN; line feeds and tabs kept where `keep_lines`.
inline void append_escaped(std::string& text, std::string_view token, bool keep_lines) {
  const auto escape = [&](unsigned char byte) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02X", byte);
    text += escaped;
  };
  for (std::size_t i = 0; i < token.size();) {
    const auto byte = static_cast<unsigned char>(token[i]);
    if (byte < 0x80) {
      const bool kept = keep_lines && (byte == '\n' || byte == '\t');
      if ((byte < 0x20 || byte == 0x7F) && !kept) {
        escape(byte);
      } else {
        text += static_cast<char>(byte);
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 character as it is, but the C1 controls (U+0080..U+009F: C2 80..9F,
    // which some terminals obey); any other byte above 0x7F escaped.
    const std::size_t length = utf8_sequence(token.substr(i));
    const bool c1 =
        length == 2 && byte == 0xC2 && static_cast<unsigned char>(token[i + 1]) < 0xA0;
    if (length != 0 && !c1) {
      text.append(token.substr(i, length));
      i += length;
    } else {
      escape(byte);
      ++i;
    }
  }
}

// Text from a file or the command line for a message: control bytes (a NUL, an escape
// sequence, the C1 controls), bytes that are not UTF-8 (a binary file read as text) and a
// UTF-8 byte order mark shown as \xNN, so that the message reaches the terminal whole and as
// it is; beyond 48 bytes, the start (whole characters) and the size ("zzz... (1000 bytes)").
inline std::string printable(std::string_view token) {
  // A long token (a binary file read as text has few separators) shows its start, cut
  // before a character that would not fit whole.
  constexpr std::size_t longest = 48;
  const std::size_t size = token.size();
  if (size > longest) {
    std::size_t cut = longest;
    while (cut > longest - 3 && (static_cast<unsigned char>(token[cut]) & 0xC0) == 0x80) --cut;
    token = token.substr(0, cut);
  }
  std::string text;
  if (token.substr(0, 3) == "\xEF\xBB\xBF") {
    text = "\\xEF\\xBB\\xBF";
    token.remove_prefix(3);
  }
  append_escaped(text, token, false);
  if (size > longest) text += "... (" + std::to_string(size) + " bytes)";
  return text;
}

// A whole message for the terminal, as a program's last line on stderr: escaped as
// printable escapes (its lines and tabs kept) and never cut, so that text a message quotes
// without printable (a value, a path, a library's message) cannot drive the terminal.
inline std::string terminal_text(std::string_view message) {
  std::string text;
  append_escaped(text, message, true);
  return text;
}

}  // namespace torusgate::apps
