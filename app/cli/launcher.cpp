// icl-cli: answers the light commands (--version, --help, presets, config, info, verify, recover) without loading
// LibTorch, and hands every other command to icl-cli-torch (main.cpp) with the environment that LibTorch's CPU
// kernels read when they load already set (app/runtime_env.h says which and why), so that LibTorch loads once.
// Start-up timings: docs/performance.md, "Start-up".
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "core/runtime/cpu_features.h"
#include "display.h"
#include "options.h"

namespace {

namespace fs = std::filesystem;

bool isTorchCommand(const char* name)
{
    for (const auto& c : icl::cli::torchCommands())
        if (std::strcmp(name, c.name) == 0)
            return true;
    return false;
}

/// icl-cli-torch beside this executable (the build tree) or in its installed place, ICL_TORCH_CLI_DIR relative to
/// this one's folder (GNUInstallDirs' libexec/icl-workbench); "" when neither is there.
std::string torchCliPath()
{
    std::error_code ec;
    const fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
    if (ec)
        return "";
    for (const fs::path& p : { dir / "icl-cli-torch", dir / ICL_TORCH_CLI_DIR / "icl-cli-torch" })
        if (::access(p.c_str(), X_OK) == 0)
            return p.string();
    return "";
}

/// Runs the command line in icl-cli-torch (argv unchanged, so that its help and errors say icl-cli); returns only
/// when that cannot start.
int runInTorchCli(char** argv)
{
    if (std::getenv("OMP_WAIT_POLICY") == nullptr)
        ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    icl::preferBestAtenCpuCapability();
    if (std::getenv("OPENBLAS_CORETYPE") == nullptr)
        icl::preferBestOpenBlasCore(icl::probeOpenBlasCore());
    std::error_code ec;
    if (const fs::path self = fs::read_symlink("/proc/self/exe", ec); !ec)
        ::setenv("ICL_CLI_LAUNCHER", self.c_str(), 1);  // what sweep writes into the commands it starts
    const std::string path = torchCliPath();
    if (!path.empty())
        ::execv(path.c_str(), argv);
    icl::cli::printErrorLine(path.empty()
            ? std::string("cannot find icl-cli-torch beside icl-cli or in " ICL_TORCH_CLI_DIR
                          " (an incomplete installation?)")
            : "cannot start " + path + ": " + std::strerror(errno));
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    using namespace icl::cli;
    if (argc >= 2 && isTorchCommand(argv[1]))
        return runInTorchCli(argv);
    CLI::App app;
    describeCommandLine(app);
    app.set_version_flag("--version", std::string("icl-cli ") + ICL_APP_VERSION_STRING);
    // The light commands, and the torch commands by name for --help, in icl-cli-torch's order.
    addPresetsCommand(app);
    addConfigCommand(app);
    const auto listTorchCommand = [&app, argv](const TorchCommand& c) {
        app.add_subcommand(c.name, c.help)->allow_extras()->callback([argv] { std::exit(runInTorchCli(argv)); });
    };
    listTorchCommand(torchCommands().front()); // train
    addFileCheckCommands(app); // info, verify, recover
    for (size_t i = 1; i < torchCommands().size(); ++i)
        listTorchCommand(torchCommands()[i]);
    return runCommandLine(app, argc, argv);
}
