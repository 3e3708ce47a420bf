#pragma once
// The core's one exception type. Thread-safe to throw from any thread; the app turns it into a
// dialog, the CLI into a one-line message on stderr and a non-zero exit.

#include <stdexcept>
#include <string>

namespace icl {

/// Error raised by the core for bad input, damaged files, divergence and I/O failure.
/// The message names what was wrong and where (file, key path, tensor shape).
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace icl
