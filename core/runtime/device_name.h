#pragma once
// Device names for torch-free callers (the GUI's status bar, the CLI). Implemented in device.cpp.

#include <string>

namespace icl {

/// Human-readable name of the device `spec` ("auto", "cpu", "cuda:1") resolves to on this machine.
/// Throws icl::Error for an unknown spec or an unavailable CUDA device.
std::string resolveDeviceName(const std::string& spec);

} // namespace icl
