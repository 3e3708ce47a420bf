#pragma once
// icl-cli's shared command-line pieces: the validators and option groups several commands declare (--json,
// --threads, --max-memory, --set, …), each written once here, and the runner that parses the command line, runs
// the chosen command's callback and turns its errors into one line on stderr. Thread affinity: main thread.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace icl::cli {

/// Validator for an integer option that must be at least `min` (CLI11's PositiveNumber prints a 300-digit range
/// and accepts fractions).
CLI::Validator atLeast(long long min);

/// Validator for an unsigned 64-bit integer option (seeds): CLI11 wraps "-1" and values past 2^64 − 1 around
/// silently, which would run on a different seed than the one asked for.
CLI::Validator unsignedInteger();

/// `v` with `precision` decimals, as the commands' tables print numbers.
std::string fmt(double v, int precision = 4);

/// Ctrl-C (and SIGTERM) for a long command: the handler only sets a flag that its progress callback polls, so the
/// command stops at its next step and keeps what it saved. Restores the previous handlers when destroyed.
class InterruptFlag {
public:
    InterruptFlag();
    ~InterruptFlag();
    InterruptFlag(const InterruptFlag&) = delete;
    InterruptFlag& operator=(const InterruptFlag&) = delete;
    /// True once SIGINT or SIGTERM arrived.
    bool raised() const;

private:
    void (*m_previousInt)(int);
    void (*m_previousTerm)(int);
};

/// The positional argument "file" of a command that reads an experiment file (required).
void addExperimentFile(CLI::App* command, std::string& path);

/// --json: the command prints one JSON object on stdout instead of text.
void addJsonFlag(CLI::App* command, bool& json);

/// --checkpoint STEP of a command that reads one checkpoint (default: the last).
void addCheckpointOption(CLI::App* command, int64_t& step,
                         const std::string& help = "checkpoint step (default: the last one not damaged)");

/// --threads N of a command that runs LibTorch (default 0: every core).
void addThreadsOption(CLI::App* command, int& threads, const std::string& help = "LibTorch intra-op threads");

/// Refuses, in one line, an output path that is one of the command's input files or a link to one: writing it would
/// destroy that input. Inputs that are empty or do not exist are skipped.
void refuseOutputOverInput(const std::string& out, std::initializer_list<std::string> inputs);

/// --max-memory SIZE of a command that reads a file from outside (import, analyze, eval): the memory budget of what
/// the file's contents size (core/io/memory_budget.h), e.g. 512M or 2G; default ICL_MAX_MEMORY, else RAM / 4.
void addMaxMemoryOption(CLI::App* command, uint64_t& bytes);

/// --set key.path=value (repeatable): config overrides, applied in order.
void addSetOption(CLI::App* command, std::vector<std::string>& sets, const std::string& help);

/// --device auto|cpu|cuda|cuda:N.
void addDeviceOption(CLI::App* command, std::string& device);

/// --dpi of a command that writes PNG files.
void addDpiOption(CLI::App* command, int& dpi);

/// Makes `run` the callback of `command`: its return value becomes icl-cli's exit code. `file` names the file the
/// command reads (empty function: none), against which runCommandLine reports what reading it threw that is not an
/// icl::Error ("FILE: what is wrong", never a backtrace).
void setCommand(CLI::App* command, std::function<int()> run, std::function<std::string()> file = {});

/// Parses the command line, which runs the callback of the command given (setCommand), and returns the exit code:
/// the command's; CLI11's for a command-line error; 1 for an icl::Error or a refusal of the command's file; 2 for
/// any other exception. Every error is one line on stderr (printErrorLine).
int runCommandLine(CLI::App& app, int argc, char** argv);

} // namespace icl::cli
