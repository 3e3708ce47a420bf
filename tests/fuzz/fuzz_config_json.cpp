// Fuzz harness: a JSON experiment config from a file (resolveConfig with config_file, then parseConfig and the
// curriculum, core/io/config.h), as `icl-cli train --config` and `import --config FILE.json` read it.
// Seeds: corpus/config_json (every preset, resolved). Garg et al.'s config.yaml is read by
// core/training/weights_import.cpp, a LibTorch file outside this build (docs/security.md).
#include <nlohmann/json.hpp>

#include "core/io/config.h"
#include "tests/fuzz/fuzz_file_driver.h"

const char* const icl::fuzz::kInputName = "config.json";

void icl::fuzz::fuzzInput(const std::string& path, const uint8_t*, size_t)
{
    icl::fuzz::readOrRefuse("resolveConfig", [&] {
        icl::ConfigRequest request;
        request.config_file = path;
        const nlohmann::json resolved = icl::resolveConfig(request);
        const icl::ExperimentConfig config = icl::parseConfig(resolved);
        (void)icl::toJson(config).dump();
        for (int64_t step : {int64_t(0), int64_t(1), int64_t(1) << 40})
            (void)icl::trainingTask(config, step);
    });
}
