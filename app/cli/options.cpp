#include "options.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "core/io/file_error.h"
#include "core/io/memory_budget.h"
#include "display.h"

namespace icl::cli {

namespace {

/// What the callback of the command that ran leaves for runCommandLine: its exit code and the file it reads.
struct CommandOutcome {
    int exit_code = 0;
    std::function<std::string()> file;
};

CommandOutcome& outcome()
{
    static CommandOutcome o;
    return o;
}

std::atomic<bool> g_interrupted{false};

extern "C" void onInterrupt(int)
{
    g_interrupted = true;
}

} // namespace

std::string fmt(double v, int precision)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

InterruptFlag::InterruptFlag()
{
    g_interrupted = false;
    m_previousInt = std::signal(SIGINT, onInterrupt);
    m_previousTerm = std::signal(SIGTERM, onInterrupt);
}

InterruptFlag::~InterruptFlag()
{
    std::signal(SIGINT, m_previousInt);
    std::signal(SIGTERM, m_previousTerm);
}

bool InterruptFlag::raised() const
{
    return g_interrupted.load();
}

CLI::Validator atLeast(long long min)
{
    return CLI::Validator(
        [min](std::string& value) -> std::string {
            try {
                size_t used = 0;
                const long long v = std::stoll(value, &used);
                if (used == value.size() && v >= min)
                    return {};
            } catch (const std::exception&) {
            }
            return "expected an integer >= " + std::to_string(min) + ", got \"" + value + "\"";
        },
        "INT>=" + std::to_string(min));
}

CLI::Validator unsignedInteger()
{
    return CLI::Validator(
        [](std::string& value) -> std::string {
            const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
            if (digits) {
                try {
                    (void)std::stoull(value);
                    return {};
                } catch (const std::exception&) {
                }
            }
            return "expected an integer from 0 to 18446744073709551615, got \"" + value + "\"";
        },
        "UINT");
}

void addExperimentFile(CLI::App* command, std::string& path)
{
    command->add_option("file", path, "experiment file")->required();
}

void addJsonFlag(CLI::App* command, bool& json)
{
    command->add_flag("--json", json, "one JSON object on stdout");
}

void addCheckpointOption(CLI::App* command, int64_t& step, const std::string& help)
{
    command->add_option("--checkpoint", step, help);
}

void addThreadsOption(CLI::App* command, int& threads, const std::string& help)
{
    command->add_option("--threads", threads, help)->check(atLeast(1));
}

void refuseOutputOverInput(const std::string& out, std::initializer_list<std::string> inputs)
{
    for (const std::string& in : inputs) {
        std::error_code ec;
        if (!in.empty() && std::filesystem::equivalent(out, in, ec) && !ec)
            throw Error("--out " + out + ": is " + in + " (or a link to it), which this command reads; writing it would "
                        "destroy it");
    }
}

void addMaxMemoryOption(CLI::App* command, uint64_t& bytes)
{
    command
        ->add_option_function<std::string>(
            "--max-memory", [&bytes](const std::string& text) { bytes = parseMemorySize(text, "--max-memory"); },
            "memory the file's contents may make this command allocate (e.g. 512M, 2G; default: ICL_MAX_MEMORY, else "
            "a quarter of the RAM); a file that needs more is refused in one line")
        ->type_name("SIZE")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
                try {
                    (void)parseMemorySize(text, "SIZE");
                    return {};
                } catch (const Error& e) {
                    return std::string(e.what()).substr(6); // without "SIZE: ": CLI11 names the option
                }
            },
            ""));
}

void addSetOption(CLI::App* command, std::vector<std::string>& sets, const std::string& help)
{
    command->add_option("--set", sets, help);
}

void addDeviceOption(CLI::App* command, std::string& device)
{
    command->add_option("--device", device, "auto, cpu, cuda or cuda:N");
}

void addDpiOption(CLI::App* command, int& dpi)
{
    command->add_option("--dpi", dpi, "PNG resolution")->check(CLI::Range(50, 1200));
}

void setCommand(CLI::App* command, std::function<int()> run, std::function<std::string()> file)
{
    command->callback([run = std::move(run), file = std::move(file)] {
        outcome().file = file;
        outcome().exit_code = run();
    });
}

int runCommandLine(CLI::App& app, int argc, char** argv)
{
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& err) {
        return app.exit(err);
    } catch (const Error& err) {
        printErrorLine(err.what());
        return 1;
    } catch (const std::exception& err) {
        // What else reading a file can throw (std::bad_alloc, std::length_error, nlohmann's and LibTorch's
        // errors) is about the file the command reads: "FILE: what is wrong", never a backtrace.
        if (const std::string file = outcome().file ? outcome().file() : std::string(); !file.empty()) {
            printErrorLine(fileErrorMessage(file, err));
            return 1;
        }
        printErrorLine("internal error: " + firstLine(err.what()));
        return 2;
    }
    return outcome().exit_code;
}

} // namespace icl::cli
