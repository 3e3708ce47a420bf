// icl-cli-torch: the commands of icl-cli that need LibTorch (the same core as the GUI). Users run icl-cli, the
// launcher (launcher.cpp), which answers the light commands itself and starts this for the others.
// Each command declares its options and its callback in its own *_commands.cpp; main only assembles them.
#include "app/runtime_env.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "core/io/experiment_file.h"
#include "options.h"

int main(int argc, char** argv)
{
    icl::app::ensureRuntimeEnvironment(argv);
    using namespace icl::cli;
    CLI::App app;
    describeCommandLine(app);
    app.set_version_flag("--version", std::string("icl-cli ") + ICL_APP_VERSION_STRING);

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
    addRuntimeCommand(app);
    const int rc = runCommandLine(app, argc, argv);
#if !defined(__SANITIZE_ADDRESS__)
    // LibTorch's static destructors (operator deregistration) take ~70 ms of a short command. Once the command has
    // closed every file nothing is left but the standard streams, so leave without them (docs/performance.md).
    if (!icl::anyHdf5ObjectOpen()) {
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        std::_Exit(rc);
    }
#endif
    return rc;
}
