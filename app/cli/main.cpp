// icl-cli-torch: the commands of icl-cli that need LibTorch (the same core as the GUI). Users run icl-cli, the
// launcher (launcher.cpp), which answers the light commands itself and starts this for the others.
// Each command declares its options and its callback in its own *_commands.cpp; main only assembles them.
#include "app/runtime_env.h"

#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"
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
    return runCommandLine(app, argc, argv);
}
