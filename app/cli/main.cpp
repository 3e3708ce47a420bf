// icl-cli: the headless face of ICL Workbench (same core as the GUI). See docs/architecture.md for the contract.
// Each command declares its options and its callback in its own *_commands.cpp; main only assembles them.
#include "app/runtime_env.h"

#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "core/runtime/allocator.h"
#include "core/runtime/blas.h"
#include "core/runtime/cpu_kernels.h"
#include "options.h"

int main(int argc, char** argv)
{
    icl::app::ensureRuntimeEnvironment(argv);
    using namespace icl::cli;
    CLI::App app { "ICL Workbench command line: train transformers on in-context-learning tasks and compare them "
                   "with learning algorithms" };
    app.require_subcommand(1);
    // One line on stderr for every command-line error, like every other error of icl-cli.
    app.failure_message(
        [](const CLI::App*, const CLI::Error& e) { return "icl-cli: " + std::string(e.what()) + "\n"; });
    app.set_version_flag("--version", [] {
        return std::string("icl-cli ") + ICL_APP_VERSION_STRING + "\nBLAS: " + icl::blasInfo().summary()
            + "\nCPU kernels: " + icl::atenCpuInfo().summary() + "\nallocator: " + icl::cpuAllocatorInfo().summary();
    });

    // In the order of --help.
    addPresetsCommand(app);
    addConfigCommand(app);
    addTrainCommand(app);
    addFileCheckCommands(app); // info, verify, recover
    addEvalCommand(app);
    addExportCommand(app);
    addReportCommand(app);
    addAnalyzeCommand(app);
    addWeightsCommands(app); // import, export-weights
    addSweepCommands(app); // sweep, aggregate
    return runCommandLine(app, argc, argv);
}
