#include "core/runtime/device.h"
#include "core/runtime/device_name.h"

#include <thread>

#include "core/error.h"

namespace icl {

torch::Device resolveDevice(const std::string& spec)
{
    if (spec == "auto")
        return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    if (spec == "cpu")
        return torch::kCPU;
    if (spec.rfind("cuda", 0) == 0) {
        int index = 0;
        if (spec.size() > 4) {
            if (spec[4] != ':' || spec.size() == 5 || spec.find_first_not_of("0123456789", 5) != std::string::npos)
                throw Error("device: expected \"cuda\" or \"cuda:N\", got \"" + spec + "\"");
            index = std::stoi(spec.substr(5));
        }
        if (!torch::cuda::is_available())
            throw Error("device " + spec + ": CUDA is not available in this build or on this machine (use --device cpu)");
        if (index >= static_cast<int>(torch::cuda::device_count()))
            throw Error("device " + spec + ": only " + std::to_string(torch::cuda::device_count())
                        + " CUDA device(s) present");
        return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
    }
    throw Error("device: expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\", got \"" + spec + "\"");
}

std::string resolveDeviceName(const std::string& spec)
{
    return resolveDevice(spec).str();
}

} // namespace icl
