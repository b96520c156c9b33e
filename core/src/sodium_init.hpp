// ensure_sodium: libsodium initialised once before its first use in core (the CSPRNG, key ids).
#pragma once

#include <sodium.h>

#include <string>

#include "torusgate/core/error.hpp"

namespace torusgate::detail {

// Throws SystemError naming `who` when libsodium cannot be initialised (sodium_init runs once).
inline void ensure_sodium(const char* who) {
  static const int status = sodium_init();
  if (status < 0) throw SystemError(std::string(who) + ": sodium_init failed; libsodium cannot be used");
}

}  // namespace torusgate::detail
