// The version of the library linked (core/version.hpp.in).
#include "torusgate/core/version.hpp"

namespace torusgate {

const char* version() { return TORUSGATE_VERSION_STRING; }

}  // namespace torusgate
