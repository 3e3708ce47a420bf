// End-to-end tests of icl-cli as a user runs it: real processes, real files.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include "tests/support/cpu_flags.h"
#include "tests/support/scoped_env.h"
#include "tests/support/scratch.h"

namespace fs = std::filesystem;

namespace {

struct Result {
    int code = -1;
    std::string out;  // stdout
    std::string err;  // stderr
};

/// Runs a shell command line: its stdout and exit code (err left empty).
Result shell(const std::string& cmd)
{
    Result r;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe)
        return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0)
        r.out.append(buf.data(), n);
    const int status = pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

Result run(const std::string& args)
{
    // ctest runs tests as parallel processes: one stderr file per process and call.
    static int calls = 0;
    const std::string errFile
        = icl::test::scratchPrefix() + "cli_stderr_" + std::to_string(::getpid()) + "_" + std::to_string(++calls) + ".txt";
    Result r = shell(std::string(ICL_CLI_PATH) + " " + args + " 2>" + errFile);
    std::ifstream f(errFile);
    std::stringstream ss;
    ss << f.rdbuf();
    r.err = ss.str();
    return r;
}

std::string temp(const std::string& name)
{
    const std::string p = icl::test::scratchPrefix() + name;
    fs::remove_all(p);
    return p;
}

/// Success when the command exited with 0; a failure shows its exit code and stderr.
::testing::AssertionResult succeeded(const Result& r)
{
    if (r.code == 0)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "exit code " << r.code << ": " << r.err;
}

/// The stdout of a command run with --json, parsed into `json`; a failure shows the exit code and stderr, or the
/// output that is not JSON.
::testing::AssertionResult jsonOutput(const Result& r, nlohmann::json* json)
{
    if (r.code != 0)
        return succeeded(r);
    try {
        *json = nlohmann::json::parse(r.out);
    } catch (const nlohmann::json::exception& e) {
        return ::testing::AssertionFailure() << "not JSON (" << e.what() << "): " << r.out;
    }
    return ::testing::AssertionSuccess();
}

/// `train --preset <preset> --set <s>… --steps <steps> --device cpu --threads 1 <more>--out <out>`: a tiny run on the
/// CPU with one thread (the same on every machine).
std::string trainCommand(const std::string& preset, const std::vector<std::string>& sets, int steps,
    const std::string& out, const std::string& more = {})
{
    std::string command = "train --preset " + preset;
    for (const std::string& set : sets)
        command += " --set " + set;
    return command + " --steps " + std::to_string(steps) + " --device cpu --threads 1 " + more + "--out " + out;
}

const char* kTiny = " --preset vonoswald-lsa-1layer --set task.d=5 --set task.n_context=5"
                    " --set training.batch_size=256 --set training.lr=0.003 --set training.eval_every=50"
                    " --set training.checkpoint_every=100 --set eval.n_prompts=1000"
                    " --device cpu --threads 1";

TEST(Cli, TrainThenInfoListsCheckpointsAndFinalLosses)
{
    const std::string out = temp("cli_run.h5");
    const Result t = run(std::string("train") + kTiny + " --steps 300 --out " + out + " --json");
    ASSERT_EQ(t.code, 0) << t.err;
    const auto trained = nlohmann::json::parse(t.out);
    EXPECT_EQ(trained["final_step"], 300);
    EXPECT_TRUE(trained["baselines"].contains("gd_1"));

    const Result i = run("info " + out + " --json");
    ASSERT_EQ(i.code, 0) << i.err;
    const auto info = nlohmann::json::parse(i.out);
    std::vector<int64_t> steps;
    for (const auto& c : info["checkpoints"])
        steps.push_back(c["step"]);
    EXPECT_EQ(steps, (std::vector<int64_t>{0, 100, 200, 300}));
    EXPECT_DOUBLE_EQ(info["final"]["eval_loss"].get<double>(), trained["eval_loss"].get<double>());
    EXPECT_DOUBLE_EQ(info["final"]["baselines"]["gd_1"].get<double>(), trained["baselines"]["gd_1"].get<double>());
    EXPECT_EQ(info["config"]["task"]["d"], 5);
    // The trained model is close to one GD step with the best η (von Oswald et al.).
    EXPECT_LT(info["final"]["eval_loss"].get<double>(), 1.1 * info["final"]["baselines"]["gd_1"].get<double>());

    const Result e = run("eval " + out + " --prompts 500 --json");
    ASSERT_EQ(e.code, 0) << e.err;
    const auto curve = nlohmann::json::parse(e.out);
    EXPECT_EQ(curve["n_examples"], nlohmann::json({1, 2, 3, 4, 5}));
    ASSERT_EQ(curve["model"]["error"].size(), 5u);
    // Least squares is exact once n ≥ d in the noiseless task.
    EXPECT_LT(curve["baselines"]["least_squares"]["error"][4].get<double>(), 1e-6);

    const std::string csv = temp("cli_loss.csv");
    const Result x = run("export " + out + " --plot loss --format csv --out " + csv);
    ASSERT_EQ(x.code, 0) << x.err;
    std::ifstream f(csv);
    std::string all((std::istreambuf_iterator<char>(f)), {});
    EXPECT_NE(all.find("model (eval)"), std::string::npos);
    EXPECT_NE(all.find("\n300,"), std::string::npos) << all;

    const Result lsaLayers = run("analyze " + out + " layers --json");
    ASSERT_EQ(lsaLayers.code, 0) << lsaLayers.err;
    EXPECT_EQ(nlohmann::json::parse(lsaLayers.out)["rows"].size(), 1u);
    const Result align = run("analyze " + out + " gd-alignment --json");
    ASSERT_EQ(align.code, 0) << align.err;
    const auto a = nlohmann::json::parse(align.out);
    EXPECT_GT(a["model_cosine"].get<double>(), 0.95);  // trained 1-layer LSA ≈ one GD step
    EXPECT_EQ(a["reference"], "gd_1");

#ifdef ICL_HAVE_PLOT_EXPORT
    // report renders every plot as PNG/SVG/PDF/CSV and exits cleanly (no crash at exit).
    const std::string dir = temp("cli_report");
    const Result rep = run("report " + out + " --out " + dir + " --json");
    ASSERT_EQ(rep.code, 0) << rep.err;
    for (const char* f : {"loss.png", "loss.svg", "loss.pdf", "icl_curve.png", "alignment.png", "summary.json"}) {
        ASSERT_TRUE(fs::exists(fs::path(dir) / f)) << f;
        EXPECT_GT(fs::file_size(fs::path(dir) / f), 100u) << f;
    }
    std::ifstream png(fs::path(dir) / "loss.png", std::ios::binary);
    char magic[4] = {};
    png.read(magic, 4);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG");
#endif

    const Result resume = run("train --resume --out " + out + " --steps 350 --json");
    ASSERT_EQ(resume.code, 0) << resume.err;
    EXPECT_EQ(nlohmann::json::parse(resume.out)["final_step"], 350);
}

void expectOneLineError(const Result& r, const std::string& needle)
{
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

// The interleaved-copy experiment from the command line: train a few steps, then `analyze copy`
// reports the own / next / other gradient norms (consistent with the matrix it prints) and refuses
// a pair-layout run with one line.
TEST(Cli, AnalyzeCopyOnAnInterleavedRun)
{
    const std::string out = temp("cli_copy.h5");
    ASSERT_TRUE(succeeded(run(trainCommand("vonoswald-interleaved-copy",
        { "task.d=3", "task.n_context=4", "model.pos_dim=4", "training.batch_size=64", "training.eval_every=10",
            "training.checkpoint_every=10", "eval.n_prompts=200" },
        20, out))));
    nlohmann::json c;
    ASSERT_TRUE(jsonOutput(run("analyze " + out + " copy --prompts 16 --json"), &c));
    ASSERT_EQ(c["gradient_norm"].size(), 81u);  // (2N + 1)² with N = 4
    EXPECT_EQ(c["token_labels"][1], "y1");
    // own = mean of G[k][k], next = mean of G[k][k+1] over the x-tokens k = 0, 2, 4, 6
    double own = 0, next = 0;
    for (int k = 0; k < 8; k += 2) {
        own += c["gradient_norm"][k * 9 + k].get<double>() / 4;
        next += c["gradient_norm"][k * 9 + k + 1].get<double>() / 4;
    }
    EXPECT_NEAR(c["own"].get<double>(), own, 1e-9);
    EXPECT_NEAR(c["next"].get<double>(), next, 1e-9);
    EXPECT_NEAR(c["own_next_ratio"].get<double>(), own / next, 1e-9);
    const std::string pair = temp("cli_copy_pair.h5");
    const Result plain = run("train" + std::string(kTiny) + " --steps 10 --out " + pair);
    ASSERT_EQ(plain.code, 0) << plain.err;
    expectOneLineError(run("analyze " + pair + " copy"), "needs the interleaved layout");
}

TEST(Cli, BadInputExitsNonZeroWithOneClearLine)
{
    const std::string out = temp("cli_bad.h5");
    expectOneLineError(run("train --preset no-such --out " + out), "unknown preset \"no-such\"");
    expectOneLineError(run(std::string("train") + kTiny + " --set training.lr=fast --out " + out),
                       "training.lr: expected a number > 0, got \"fast\"");
    expectOneLineError(run(std::string("train") + kTiny + " --set training.optimiser=adam --out " + out),
                       "training.optimiser: unknown key");
    EXPECT_FALSE(fs::exists(out)) << "nothing half-written is left";

    std::ofstream(out) << "garbage";
    expectOneLineError(run(std::string("train") + kTiny + " --out " + out), "file exists");
    expectOneLineError(run("info " + out), "not an ICL Workbench experiment file");
    expectOneLineError(run("info " + temp("cli_missing.h5")), "no such file");
    // verify: a file it cannot read is refused, not counted as a damaged object
    const Result missing = run("verify " + temp("cli_missing.h5"));
    expectOneLineError(missing, temp("cli_missing.h5") + ": no such file");
    EXPECT_EQ(missing.err.find("damaged"), std::string::npos) << missing.err;
    EXPECT_TRUE(missing.out.empty()) << missing.out;
    const auto missingJson = nlohmann::json::parse(run("verify " + temp("cli_missing.h5") + " --json").out);
    EXPECT_EQ(missingJson["ok"], false);
    EXPECT_EQ(missingJson["damaged"], nlohmann::json::array());
    EXPECT_NE(missingJson["error"].get<std::string>().find("no such file"), std::string::npos);
    EXPECT_NE(run("export " + out + " --plot loss --format gif --out x.gif").code, 0);

    // Seeds are unsigned 64-bit: "-1" and 2^64 are refused, not wrapped around to another seed.
    expectOneLineError(run("analyze " + out + " attention --prompt-seed -1"),
                       "expected an integer from 0 to 18446744073709551615, got \"-1\"");
    expectOneLineError(run("analyze " + out + " patching --seed 18446744073709551616"),
                       "got \"18446744073709551616\"");
    expectOneLineError(run("export " + out + " --plot lens --prompt-seed 1e3 --format csv --out " + temp("x.csv")),
                       "got \"1e3\"");
    // A negative index names the bound, not CLI11's 300-digit range.
    const Result layer = run("export " + out + " --plot attention --layer -1 --format csv --out " + temp("x.csv"));
    expectOneLineError(layer, "expected an integer >= 0, got \"-1\"");
    EXPECT_LT(layer.err.size(), 120u) << layer.err;
}

// Each analysis is a subcommand of analyze with its own options and help: `analyze KIND --help` (and
// `analyze RUN.h5 KIND --help`) lists that analysis' options only, every analysis has the shared --checkpoint,
// --max-memory and --json, and an option of another analysis is refused in one line that names the analyses that
// have it, before the file is read (the file here does not exist).
TEST(Cli, EachAnalysisHasItsOwnOptionsAndHelp)
{
    const std::vector<std::string> kinds = {"gd-alignment", "eta-scan", "layers", "ood", "interpolate", "copy",
                                            "kernel", "probe", "paste", "attention", "lens", "patching", "icl-iwl",
                                            "algorithm-map"};
    const Result all = run("analyze --help");
    ASSERT_EQ(all.code, 0) << all.err;
    const size_t heading = all.out.find("\nAnalyses:\n");
    ASSERT_NE(heading, std::string::npos) << all.out;
    for (const std::string& kind : kinds) {
        EXPECT_NE(all.out.find("\n  " + kind + " ", heading), std::string::npos) << kind << " in " << all.out;
        const Result help = run("analyze " + kind + " --help");
        ASSERT_EQ(help.code, 0) << kind << ": " << help.err;
        EXPECT_NE(help.out.find("analyze file " + kind + " [OPTIONS]"), std::string::npos) << help.out;
        for (const char* shared : {"--checkpoint", "--max-memory", "--json"})
            EXPECT_NE(help.out.find(shared), std::string::npos) << kind << " lacks " << shared;
    }

    const Result attention = run("analyze attention --help");
    for (const char* own : {"--prompt-seed", "--prompt ", "--capture", "--store", "--prompts", "--threads", "--out"})
        EXPECT_NE(attention.out.find(own), std::string::npos) << own << " in " << attention.out;
    for (const char* other : {"--cut-layer", "--eta-max", "--corruption", "--families", "--reference", "--m "})
        EXPECT_EQ(attention.out.find(other), std::string::npos) << other << " in " << attention.out;
    const std::string missing = temp("cli_no_such_run.h5");
    const Result paste = run("analyze " + missing + " paste --help");
    ASSERT_EQ(paste.code, 0) << paste.err;
    EXPECT_NE(paste.out.find("--cut-layer"), std::string::npos) << paste.out;
    EXPECT_EQ(paste.out.find("--prompt-seed"), std::string::npos) << paste.out;
    const Result layers = run("analyze layers --help");
    EXPECT_EQ(layers.out.find("--prompts"), std::string::npos) << "layers reads no --prompts: " << layers.out;

    expectOneLineError(run("analyze " + missing + " layers --prompt-seed 3"),
                       "analyze layers: --prompt-seed is an option of attention, lens and patching, not of layers");
    expectOneLineError(run("analyze " + missing + " eta-scan --cut-layer=1"),
                       "--cut-layer is an option of paste, not of eta-scan");
    expectOneLineError(run("analyze " + missing + " attention --corruption shuffle_pairs"),
                       "--corruption is an option of patching, not of attention");
    expectOneLineError(run("analyze " + missing + " kernel --frobnicate"), "analyze kernel: unknown option --frobnicate");
    expectOneLineError(run("analyze " + missing + " --json layers"), "options go after the analysis");
    expectOneLineError(run("analyze " + missing + " layers extra"), "unexpected argument \"extra\"");
    expectOneLineError(run("analyze " + missing + " no-such-analysis"), "analysis: no-such-analysis not in {gd-alignment,");
    expectOneLineError(run("analyze " + missing), "analysis is required");
    expectOneLineError(run("analyze layers"), "file is required");
    // The options of the analysis given are read; the file is then the first thing refused.
    expectOneLineError(run("analyze " + missing + " layers --json --checkpoint 0 --max-memory 1G"), "no such file");
    EXPECT_FALSE(fs::exists(missing));
}

// A damaged file gets the same one line from every command (never "internal error"), and verify lists it.
TEST(Cli, ADamagedFileIsOneLineInEveryCommandAndVerifyListsIt)
{
    const std::string out = temp("cli_damaged.h5");
    ASSERT_EQ(run(std::string("train") + kTiny + " --steps 100 --out " + out).code, 0);
    const Result ok = run("verify " + out);
    EXPECT_EQ(ok.code, 0) << ok.err;
    EXPECT_NE(ok.out.find(out + ": ok ("), std::string::npos) << ok.out;
    const auto okJson = nlohmann::json::parse(run("verify " + out + " --json").out);
    EXPECT_EQ(okJson["ok"], true);
    EXPECT_EQ(okJson["checksums"], true);
    EXPECT_EQ(okJson["damaged"], nlohmann::json::array());
    const auto info = nlohmann::json::parse(run("info " + out + " --json").out);
    EXPECT_EQ(info["format_version"], 2);
    EXPECT_EQ(info["checksums"], true);

    // One changed digit of the learning rate in the stored config (a flipped bit in /config).
    std::string bytes;
    {
        std::ifstream f(out, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(f), {});
    }
    const size_t at = bytes.find("\"lr\": 0.003");
    ASSERT_NE(at, std::string::npos);
    bytes[at + 10] = '4';
    std::ofstream(out, std::ios::binary | std::ios::trunc) << bytes;

    const Result i = run("info " + out);
    expectOneLineError(i, out + ": damaged: /config");
    for (const std::string& cmd : {"info " + out + " --json", "eval " + out, "analyze " + out + " gd-alignment",
                                   "export " + out + " --plot loss --format csv --out " + temp("cli_damaged.csv"),
                                   "report " + out + " --out " + temp("cli_damaged_report"),
                                   "train --resume --out " + out}) {
        const Result r = run(cmd);
        EXPECT_EQ(r.err, i.err) << cmd;
        EXPECT_EQ(r.err.find("internal error"), std::string::npos) << cmd;
        EXPECT_NE(r.code, 0) << cmd;
    }
    const Result v = run("verify " + out);
    EXPECT_EQ(v.code, 1);
    EXPECT_EQ(v.out, i.err.substr(std::string("icl-cli: ").size())) << "verify lists the damaged object";
}

// An output path that is the experiment file, or a link to it, is refused before anything is written: an export
// used to replace the run it read.
TEST(Cli, AnExportNeverWritesOverTheRunItReads)
{
    const std::string out = temp("cli_export_self.h5");
    ASSERT_EQ(run(std::string("train") + kTiny + " --steps 20 --out " + out).code, 0);
    const std::string png = temp("cli_export_self_link.png"), st = temp("cli_export_self_link.safetensors");
    fs::remove(png);
    fs::remove(st);
    fs::create_symlink(out, png);
    fs::create_symlink(out, st);
    expectOneLineError(run("export " + out + " --plot loss --format png --out " + png),
                       "--out " + png + ": is " + out + " (or a link to it)");
    expectOneLineError(run("export-weights " + out + " --out " + st + " --force"),
                       "--out " + st + ": is " + out + " (or a link to it)");
    EXPECT_EQ(run("verify " + out).code, 0) << "the run is intact";

    // export-weights says which checkpoint it wrote (the last, 20), also when none is named.
    const std::string weights = temp("cli_export_self_weights.safetensors");
    fs::remove(weights);
    const Result w = run("export-weights " + out + " --out " + weights + " --json");
    ASSERT_EQ(w.code, 0) << w.err;
    EXPECT_EQ(nlohmann::json::parse(w.out)["checkpoint"], 20);
}

TEST(Cli, PresetsListsTheDefaultExperiment)
{
    const Result r = run("presets --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    bool found = false;
    for (const auto& p : j["presets"])
        found |= p["name"] == "vonoswald-lsa-1layer" && !p["description"].get<std::string>().empty();
    EXPECT_TRUE(found) << r.out;
}

// docs/config.md is the output of `icl-cli config --list --markdown` (the schema in core/io/config.cpp):
// a key added or changed without regenerating it fails here.
TEST(Cli, ConfigReferenceIsCurrent)
{
    const Result r = run("config --list --markdown");
    ASSERT_EQ(r.code, 0) << r.err;
    std::ifstream f(std::string(ICL_SOURCE_DIR) + "/docs/config.md", std::ios::binary);
    ASSERT_TRUE(f) << "docs/config.md is missing; generate it with: build/app/cli/icl-cli config --list --markdown "
                      "> docs/config.md";
    std::stringstream committed;
    committed << f.rdbuf();
    EXPECT_TRUE(committed.str() == r.out)
        << "docs/config.md is not current with the config schema; regenerate it with: "
           "build/app/cli/icl-cli config --list --markdown > docs/config.md";
}

// The text and JSON forms of the reference list the keys with their defaults and choices.
TEST(Cli, ConfigListPrintsEveryKey)
{
    const Result text = run("config --list");
    ASSERT_EQ(text.code, 0) << text.err;
    EXPECT_NE(text.out.find("training.lr  (number, default 0.001)"), std::string::npos) << text.out;
    const Result j = run("config --list --json");
    ASSERT_EQ(j.code, 0) << j.err;
    const auto keys = nlohmann::json::parse(j.out)["keys"];
    bool found = false;
    for (const auto& k : keys)
        found |= k["path"] == "model.kind" && k["default"] == "lsa" && k["choices"].size() == 4;
    EXPECT_TRUE(found) << j.out;
    const Result bare = run("config");
    EXPECT_EQ(bare.code, 1);
    EXPECT_NE(bare.err.find("config: give --list"), std::string::npos) << bare.err;
}

// `runtime` names the BLAS and the kernel core that matrix products run on (the core the loaded OpenBLAS
// reports; with OPENBLAS_CORETYPE set, that core), and icl-cli-torch, started with the environment set by the
// launcher, does not restart itself (it returns at all).
TEST(Cli, RuntimeNamesTheBlasAndItsCore)
{
    const Result r = run("runtime");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("BLAS: OpenBLAS ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(", core "), std::string::npos) << r.out;
    if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) {
        std::string lowerOut = r.out, lowerCore = forced;
        for (std::string* s : {&lowerOut, &lowerCore})
            std::transform(s->begin(), s->end(), s->begin(), [](unsigned char c) { return char(std::tolower(c)); });
        EXPECT_NE(lowerOut.find("core " + lowerCore + " ("), std::string::npos) << r.out;
    }
    const nlohmann::json j = nlohmann::json::parse(run("runtime --json").out);
    EXPECT_EQ(j["blas"]["library"].get<std::string>().rfind("OpenBLAS ", 0), 0u) << j.dump();
}

// `runtime` names the instruction set of LibTorch's own CPU kernels: AVX-512, chosen by the workbench (the
// launcher sets it before icl-cli-torch loads LibTorch), exactly where /proc/cpuinfo lists AVX-512 F, BW, VL and
// DQ (LibTorch 1.13 alone stays on AVX2), and a value the user set is kept.
TEST(Cli, RuntimeNamesTheCpuKernels)
{
    {
        icl::test::ScopedEnv unset("ATEN_CPU_CAPABILITY", std::nullopt), flag("ICL_ATEN_CPU_CAPABILITY_SET", std::nullopt);
        const Result r = run("runtime");
        ASSERT_EQ(r.code, 0) << r.err;
        const bool avx512 = icl::test::cpuinfoHas({"avx512f", "avx512bw", "avx512vl", "avx512dq"});
        const bool avx2 = icl::test::cpuinfoHas({"avx2", "fma"});
        const std::string expected = avx512 ? "\nCPU kernels: AVX512 (set by ICL Workbench)\n"
                                     : avx2 ? "\nCPU kernels: AVX2 (LibTorch's default)\n"
                                            : "\nCPU kernels: NO AVX (LibTorch's default)\n";
        EXPECT_NE(r.out.find(expected), std::string::npos) << r.out;
    }
    icl::test::ScopedEnv user("ATEN_CPU_CAPABILITY", std::string("default"));
    const Result r = run("runtime");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("\nCPU kernels: NO AVX (ATEN_CPU_CAPABILITY from the environment"), std::string::npos)
        << r.out;
}

// The light commands are answered by icl-cli itself, which does not link LibTorch: a copy of icl-cli alone (no
// icl-cli-torch beside it) prints its version, help, presets, config reference, and a run's info and verify, and
// refuses a torch command in one line that names what is missing.
TEST(Cli, LightCommandsRunWithoutLibTorch)
{
    const std::string run_file = temp("cli_light.h5");
    ASSERT_EQ(run("train --preset vonoswald-lsa-1layer --steps 20 --set training.eval_every=10 --force --out "
                  + run_file).code, 0);
    const fs::path dir = fs::path(icl::test::scratchPrefix() + "cli_light_alone_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path alone = dir / "icl-cli";
    fs::copy_file(ICL_CLI_PATH, alone, fs::copy_options::overwrite_existing);
    const auto runAlone = [&](const std::string& args) { return shell(alone.string() + " " + args + " 2>&1"); };
    const std::string libs = shell("ldd " + alone.string()).out;
    EXPECT_NE(libs.find("libc.so"), std::string::npos) << libs;  // ldd ran
    EXPECT_EQ(libs.find("libtorch"), std::string::npos) << libs;
    EXPECT_EQ(libs.find("libQt"), std::string::npos) << libs;
    const Result version = runAlone("--version");
    EXPECT_EQ(version.code, 0);
    EXPECT_EQ(version.out, std::string("icl-cli ") + ICL_APP_VERSION_STRING + "\n");
    const Result help = runAlone("--help");
    EXPECT_EQ(help.code, 0);
    for (const char* command : {"train", "info", "analyze", "export-weights", "runtime"})
        EXPECT_NE(help.out.find(std::string("\n  ") + command + " "), std::string::npos) << command << help.out;
    EXPECT_EQ(runAlone("presets").code, 0);
    EXPECT_EQ(runAlone("config --list --json").code, 0);
    const Result info = runAlone("info " + run_file);
    EXPECT_EQ(info.code, 0) << info.out;
    EXPECT_NE(info.out.find("\ncheckpoints "), std::string::npos) << info.out;
    EXPECT_EQ(runAlone("verify " + run_file).code, 0);
    const Result train = runAlone("train --preset vonoswald-lsa-1layer --out " + (dir / "x.h5").string());
    EXPECT_EQ(train.code, 2);
    EXPECT_NE(train.out.find("icl-cli: cannot find icl-cli-torch"), std::string::npos) << train.out;
    EXPECT_FALSE(fs::exists(dir / "x.h5"));
    fs::remove_all(dir);
}

// The kernel view from the command line on a freshly trained renliu-kernel run: the exact-kernel
// reference model equals the layer, the JSON carries the sweep over the requested m, and bad
// layers are one-line errors.
TEST(Cli, AnalyzeKernelJson)
{
    const std::string out = temp("cli_kernel.h5");
    ASSERT_TRUE(succeeded(run(trainCommand("renliu-kernel",
        { "training.batch_size=64", "training.eval_every=10", "training.checkpoint_every=10", "eval.n_prompts=200" },
        20, out))));
    nlohmann::json j;
    ASSERT_TRUE(jsonOutput(run("analyze " + out + " kernel --m 16,64,256 --seeds 3 --prompts 32 --json"), &j));
    EXPECT_EQ(j["analysis"], "kernel");
    EXPECT_EQ(j["checkpoint_step"], 20);
    EXPECT_EQ(j["attention_variant"], "softmax");
    EXPECT_LE(j["exact_max_error"].get<double>(), 1e-5);
    EXPECT_EQ(j["m"], (std::vector<int64_t>{16, 64, 256}));
    EXPECT_EQ(j["seeds"], 3);
    ASSERT_EQ(j["error"].size(), 3u);
    EXPECT_TRUE(j["slope"].is_number());
    EXPECT_LT(j["error"][2].get<double>(), j["error"][0].get<double>());  // more features, smaller error
    EXPECT_EQ(j["reference_loss"][0]["kernel"], "exact");
    const Result info = run("info " + out + " --json");
    EXPECT_NE(info.out.find("\"kernel\""), std::string::npos) << "the analysis is stored in the file";
    expectOneLineError(run("analyze " + out + " kernel --layer 1"), "layer 1 is not a softmax layer");
}

// export --plot attention of a softmax (GPT-2) head draws the Attention page's figure: viridis weights on a 0 … 1
// colour bar titled "attention weight" (log10 with --attention-scale log), key/query axis titles, token labels.
TEST(Cli, ExportAttentionOfAGpt2HeadIsTheAttentionPagesFigure)
{
    const std::string out = temp("cli_attention_gpt2.h5");
    ASSERT_TRUE(succeeded(run(trainCommand("guo-representation",
        { "task.d=4", "task.rep_dim=4", "task.n_context=4", "model.n_layers=1", "model.n_heads=2", "model.d_model=16",
            "training.eval_every=5", "training.checkpoint_every=5", "eval.n_prompts=16" },
        5, out, "--force "))));
    auto svgOf = [&](const std::string& scale) {
        const std::string svg = temp("cli_attention_gpt2_" + scale + ".svg");
        const Result ex = run("export " + out + " --plot attention --head 1 --attention-scale " + scale
                              + " --format svg --out " + svg);
        EXPECT_EQ(ex.code, 0) << ex.err;
        std::ifstream f(svg);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    };
    const std::string linear = svgOf("linear");
    EXPECT_NE(linear.find("Attention pattern, layer 0, head 1"), std::string::npos);
    EXPECT_NE(linear.find(">attention weight<"), std::string::npos) << "the colour bar's title";
    EXPECT_NE(linear.find(">key token<"), std::string::npos);
    EXPECT_NE(linear.find(">query token<"), std::string::npos);
    EXPECT_NE(linear.find(">query<"), std::string::npos) << "token labels";
    EXPECT_EQ(linear.find(">-1<"), std::string::npos) << "no -1 ... 1 scale";
    EXPECT_NE(linear.find("attention_scale: linear"), std::string::npos);
    const std::string log = svgOf("log");
    EXPECT_NE(log.find("attention weight (log scale)"), std::string::npos);
    EXPECT_NE(log.find("attention_scale: log"), std::string::npos);
}

// The pasting experiment from the command line: a tiny GPT-2 parent, then `analyze paste --json` trains a
// new embedding under its frozen upper blocks and a same-size model from scratch, writes the pasted model
// as an experiment file (readable by info) and stores the comparison in the parent.
TEST(Cli, AnalyzePasteJson)
{
    const std::string out = temp("cli_paste_parent.h5");
    const std::string pasted = temp("cli_paste_child.h5");
    ASSERT_TRUE(succeeded(run(trainCommand("guo-representation",
        { "task.d=4", "task.rep_dim=4", "task.n_context=6", "model.n_layers=3", "model.n_heads=2", "model.d_model=16",
            "training.eval_every=10", "training.checkpoint_every=10", "eval.n_prompts=64" },
        10, out))));
    const Result p = run("analyze " + out + " paste --cut-layer 1 --embedding transformer1 --steps 8 --prompts 64"
                         " --threads 1 --json --out " + pasted);
    ASSERT_EQ(p.code, 0) << p.err;
    const auto j = nlohmann::json::parse(p.out);
    EXPECT_EQ(j["analysis"], "paste");
    EXPECT_EQ(j["checkpoint_step"], 10);
    EXPECT_EQ(j["cut_layer"], 1);
    EXPECT_EQ(j["embedding"], "transformer1");
    EXPECT_EQ(j["pasted_layers"], 3);  // one new block + blocks 1, 2 of the parent
    EXPECT_EQ(j["steps"], 8);
    EXPECT_TRUE(j["frozen_unchanged"].get<bool>());
    EXPECT_TRUE(j["pasted_loss"].is_number());
    EXPECT_TRUE(j["scratch_loss"].is_number());
    EXPECT_LT(j["ridge_loss"].get<double>(), j["zero_loss"].get<double>());
    EXPECT_LT(j["trainable_pasted"].get<int64_t>(), j["trainable_scratch"].get<int64_t>());
    EXPECT_EQ(j["n_examples"].size(), 7u);
    EXPECT_EQ(j["pasted_curve"].size(), 7u);
    EXPECT_EQ(j["ridge_curve"].size(), 7u);
    const Result child = run("info " + pasted + " --json");
    ASSERT_EQ(child.code, 0) << child.err;
    EXPECT_NE(child.out.find("pasting_parent"), std::string::npos) << "the link to the parent is stored";
    const Result parent = run("info " + out + " --json");
    EXPECT_NE(parent.out.find("\"pasting\""), std::string::npos) << "the analysis is stored in the parent";
    expectOneLineError(run("analyze " + out + " paste --cut-layer 3 --steps 1"), "expected 0 ≤ ℓ ≤ 2");
    EXPECT_EQ(j["lr"], 1e-3);
    EXPECT_EQ(j["batch_size"], 64);
    EXPECT_FALSE(j["init_from_parent"].get<bool>());

    // An existing output file is never replaced without --force, and is left as it was.
    const auto sizeBefore = fs::file_size(pasted);
    const auto timeBefore = fs::last_write_time(pasted);
    expectOneLineError(run("analyze " + out + " paste --cut-layer 1 --steps 2 --threads 1 --out " + pasted),
                       "already exists; use --force");
    EXPECT_EQ(fs::file_size(pasted), sizeBefore);
    EXPECT_EQ(fs::last_write_time(pasted), timeBefore);
    const Result forced = run("analyze " + out + " paste --cut-layer 1 --embedding transformer1 --init-from-parent"
                              " --steps 2 --prompts 64 --lr 0.002 --threads 1 --json --force --out " + pasted);
    ASSERT_EQ(forced.code, 0) << forced.err;
    const auto jf = nlohmann::json::parse(forced.out);
    EXPECT_TRUE(jf["init_from_parent"].get<bool>());
    EXPECT_EQ(jf["lr"], 0.002);
    EXPECT_EQ(jf["steps"], 2);
    // τ must be positive (the default is the parent's).
    expectOneLineError(run("analyze " + out + " paste --w-scale 0 --steps 1"), "--w-scale");

    // The parent's report draws the latest stored pasting (the forced one) and carries its numbers.
    const std::string dir = temp("cli_paste_report");
    fs::remove_all(dir);
    const Result rep = run("report " + out + " --out " + dir + " --json");
    ASSERT_EQ(rep.code, 0) << rep.err;
    for (const char* f : {"pasting_icl_curve.csv", "pasting_loss.csv", "summary.json"})
        EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
    std::ifstream sf(fs::path(dir) / "summary.json");
    const auto summary = nlohmann::json::parse(sf);
    ASSERT_TRUE(summary.contains("pasting")) << summary.dump();
    EXPECT_EQ(summary["pasting"]["id"], "0002") << "the second of two stored pastings";
    EXPECT_EQ(summary["pasting"]["steps"], 2);
    EXPECT_EQ(summary["pasting"]["pasted_loss"], jf["pasted_loss"]);
    EXPECT_EQ(summary["pasting"]["ridge_loss"], jf["ridge_loss"]);
    std::ifstream cf(fs::path(dir) / "pasting_icl_curve.csv");
    const std::string csv((std::istreambuf_iterator<char>(cf)), {});
    for (const char* series : {"pasted", "scratch", "ridge", "zero"})
        EXPECT_NE(csv.find(series), std::string::npos) << series << " in\n" << csv;
    const std::string lossCsv = temp("cli_paste_loss.csv");
    ASSERT_EQ(run("export " + out + " --plot pasting_loss --format csv --out " + lossCsv).code, 0);
    EXPECT_TRUE(fs::exists(lossCsv));
    // Damaged stored pastings cost their plots, not the report: a copy of the parent with one byte of every stored
    // pasting's result changed (behind the file's back) still reports its other plots, and says why.
    const std::string flipped = temp("cli_paste_parent_flipped.h5");
    fs::copy_file(out, flipped, fs::copy_options::overwrite_existing);
    {
        std::fstream file(flipped, std::ios::in | std::ios::out | std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(file)), {});
        const std::string key = "\"pasted_train\":[";
        int changed = 0;
        for (size_t at = bytes.find(key); at != std::string::npos; at = bytes.find(key, at + 1), ++changed) {
            file.seekp(std::streamoff(at + 1));
            file.put('q');
        }
        ASSERT_EQ(changed, 2) << "both stored pastings' results found in the file";
    }
    const std::string flippedDir = temp("cli_paste_report_flipped");
    fs::remove_all(flippedDir);
    const Result damagedReport = run("report " + flipped + " --out " + flippedDir + " --json");
    ASSERT_EQ(damagedReport.code, 0) << damagedReport.err;
    EXPECT_NE(damagedReport.err.find("pasting_icl_curve left out"), std::string::npos) << damagedReport.err;
    EXPECT_TRUE(fs::exists(fs::path(flippedDir) / "loss.csv"));
    EXPECT_FALSE(fs::exists(fs::path(flippedDir) / "pasting_icl_curve.csv"));
    std::ifstream df(fs::path(flippedDir) / "summary.json");
    const auto damagedSummary = nlohmann::json::parse(df);
    EXPECT_NE(damagedSummary.value("pasting_error", "").find("damaged"), std::string::npos) << damagedSummary.dump();
    EXPECT_FALSE(damagedSummary.contains("pasting"));
    expectOneLineError(run("export " + flipped + " --plot pasting_loss --format csv --out " + temp("x.csv")),
                       "every stored pasting result is damaged");

    // A run without a stored pasting has no pasting plots.
    const Result none = run("export " + pasted + " --plot pasting_loss --format csv --out " + temp("x.csv"));
    EXPECT_NE(none.code, 0);
    EXPECT_NE(none.err.find("unknown plot"), std::string::npos) << none.err;
}

} // namespace

// Solves the square system A w = b (row-major, n × n) by Gaussian elimination with partial pivoting;
// an independent least-squares solution for a square, full-rank in-context design.
std::vector<double> solveSquare(std::vector<std::vector<double>> a, std::vector<double> b)
{
    const size_t n = b.size();
    for (size_t c = 0; c < n; ++c) {
        size_t p = c;
        for (size_t r = c + 1; r < n; ++r)
            if (std::abs(a[r][c]) > std::abs(a[p][c]))
                p = r;
        std::swap(a[c], a[p]);
        std::swap(b[c], b[p]);
        for (size_t r = c + 1; r < n; ++r) {
            const double f = a[r][c] / a[c][c];
            for (size_t k = c; k < n; ++k)
                a[r][k] -= f * a[c][k];
            b[r] -= f * b[c];
        }
    }
    std::vector<double> w(n);
    for (size_t i = n; i-- > 0;) {
        double s = b[i];
        for (size_t k = i + 1; k < n; ++k)
            s -= a[i][k] * w[k];
        w[i] = s / a[i][i];
    }
    return w;
}

// GD-1's prediction at x_q from the in-context examples (x_i, y_i), i < n, with the step η the run `path` fitted
// (info's eta_gd_1): one GD step from w = 0, ŷ = (η/n)·Σ_i y_i ⟨x_i, x_q⟩ (von Oswald et al. 2023, Prop. 1).
double gdOneStep(const std::string& path, const std::vector<std::vector<double>>& x, const std::vector<double>& y,
    const std::vector<double>& xq, size_t n)
{
    const auto info = nlohmann::json::parse(run("info " + path + " --json").out);
    const double eta = info["final"]["baselines"]["eta_gd_1"].get<double>();
    double gd = 0;
    for (size_t i = 0; i < n; ++i) {
        double dot = 0;
        for (size_t k = 0; k < xq.size(); ++k)
            dot += x[i][k] * xq[k];
        gd += eta / double(n) * y[i] * dot;
    }
    return gd;
}

// The inspector from the command line on a 1-layer LSA run (d = N = 5): the predictions of `analyze
// attention` agree with least squares and one GD step computed here from the printed prompt; the lens
// ends at the model's prediction; patching matches the closed form of a linear layer; the CSV outputs
// and exported figures carry the data.
TEST(Cli, AnalyzeAttentionLensPatchingOnAnLsaRun)
{
    const std::string out = temp("cli_inspect.h5");
    const Result tr = run(std::string("train") + kTiny + " --steps 200 --out " + out);
    ASSERT_EQ(tr.code, 0) << tr.err;
    nlohmann::json j;
    ASSERT_TRUE(jsonOutput(run("analyze " + out + " attention --prompt-seed 3 --json"), &j));
    EXPECT_EQ(j["analysis"], "attention");
    EXPECT_EQ(j["checkpoint_step"], 200);
    EXPECT_EQ(j["n_layers"], 1);
    EXPECT_EQ(j["token_labels"].size(), 6u);  // e₁ … e₅, query
    EXPECT_EQ(j["key_labels"].size(), 5u);    // linear attention reads the in-context tokens only
    ASSERT_EQ(j["patterns"].size(), 1u);
    EXPECT_EQ(j["patterns"][0].size(), 6u);

    // Least squares on the square system X w = y, then ŷ = ⟨w, x_q⟩.
    const auto& x = j["prompt"]["x"];
    const auto& y = j["prompt"]["y"];
    std::vector<std::vector<double>> X;
    std::vector<double> Y;
    for (int i = 0; i < 5; ++i) {
        X.push_back(x[i].get<std::vector<double>>());
        Y.push_back(y[i].get<double>());
    }
    const std::vector<double> xq = x[5].get<std::vector<double>>();
    const double yq = y[5].get<double>();
    const std::vector<double> w = solveSquare(X, Y);
    double ls = 0;
    for (int k = 0; k < 5; ++k)
        ls += w[size_t(k)] * xq[size_t(k)];
    const auto& p = j["predictions"];
    EXPECT_NEAR(p["least_squares"]["prediction"].get<double>(), ls, 1e-6);
    EXPECT_NEAR(p["least_squares"]["error"].get<double>(), 0.5 * (ls - yq) * (ls - yq), 1e-6);
    EXPECT_DOUBLE_EQ(j["target"].get<double>(), yq);

    // One GD step from 0 with the run's fitted η.
    EXPECT_NEAR(p["gd_1"]["prediction"].get<double>(), gdOneStep(out, X, Y, xq, 5), 1e-5);

    const Result l = run("analyze " + out + " lens --prompt-seed 3 --json");
    ASSERT_EQ(l.code, 0) << l.err;
    const auto lens = nlohmann::json::parse(l.out);
    ASSERT_EQ(lens["prediction"].size(), 2u);  // embed, layer 0
    EXPECT_DOUBLE_EQ(lens["prediction"][1].get<double>(), p["model"]["prediction"].get<double>());

    // A linear layer is linear in each context token: with only y_3 changed, patching the clean e_3 (position 2)
    // before the layer restores the clean prediction exactly and every other position does nothing.
    const std::string csv = temp("cli_patching.csv");
    const Result pa = run("analyze " + out + " patching --prompt-seed 3 --corruption change_label --example 3 --json --out "
                          + csv);
    ASSERT_EQ(pa.code, 0) << pa.err;
    const auto patch = nlohmann::json::parse(pa.out);
    const auto& effect = patch["patching_effect"];
    ASSERT_EQ(effect.size(), 2u);
    ASSERT_EQ(effect[0].size(), 6u);
    for (int t = 0; t < 6; ++t)
        EXPECT_NEAR(effect[0][t].get<double>(), t == 2 ? 1.0 : 0.0, 1e-4) << "position " << t;
    EXPECT_NEAR(effect[1][5].get<double>(), 1.0, 1e-4) << "the clean final residual stream at the query";
    {
        // The CSV header says how the corrupted prompt was drawn: --example 3 changes y_3.
        std::ifstream pf(csv);
        std::stringstream header;
        header << pf.rdbuf();
        EXPECT_NE(header.str().find("# changed_label: y_3\n"), std::string::npos) << header.str();
        EXPECT_NE(header.str().find("# corruption_seed: 0\n"), std::string::npos) << header.str();
    }
    // Each context token enters a one-layer LSA's query output through its own separable term, so for any
    // corruption the effects of patching single tokens before the layer add up to the whole change (1).
    const auto shuffled = nlohmann::json::parse(
        run("analyze " + out + " patching --prompt-seed 3 --corruption shuffle_pairs --seed 4 --json").out);
    double sum = 0;
    for (int t = 0; t < 6; ++t)
        sum += shuffled["patching_effect"][0][t].get<double>();
    EXPECT_NEAR(sum, 1.0, 1e-4);
    std::ifstream f(csv);
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_NE(ss.str().find("# corruption: change_label"), std::string::npos) << ss.str();

    // Exports: the lens as CSV holds the plotted predictions; figures are written with their labels.
    const std::string lensCsv = temp("cli_lens.csv");
    ASSERT_EQ(run("export " + out + " --plot lens --prompt-seed 3 --format csv --out " + lensCsv).code, 0);
    std::ifstream lf(lensCsv);
    std::stringstream ls2;
    ls2 << lf.rdbuf();
    EXPECT_NE(ls2.str().find("model (regression lens)"), std::string::npos);
    const std::string svg = temp("cli_attention.svg");
    const Result ex = run("export " + out + " --plot attention --layer 0 --head 0 --format svg --out " + svg);
    ASSERT_EQ(ex.code, 0) << ex.err;
    std::ifstream sf(svg);
    std::stringstream svgText;
    svgText << sf.rdbuf();
    EXPECT_NE(svgText.str().find("Attention pattern, layer 0, head 0"), std::string::npos) << "the GUI's title";
    EXPECT_NE(svgText.str().find("prompt_seed: 0"), std::string::npos) << "the prompt in the metadata";
    // The Attention page's view draws it: its colour bar and axis titles, not the patching heatmap's −1 … 1 scale.
    EXPECT_NE(svgText.str().find("key token"), std::string::npos);
    EXPECT_NE(svgText.str().find("query token"), std::string::npos);
    EXPECT_NE(svgText.str().find("attention score (linear)"), std::string::npos) << "the LSA head's colour bar";
    EXPECT_NE(svgText.str().find("attention_scale: linear"), std::string::npos);
    expectOneLineError(
        run("export " + out + " --plot attention --attention-scale cubic --format svg --out " + temp("x.svg")),
        "--attention-scale");
    // LSA scores have any sign: the log scale (for softmax weights) is refused with the reason, not ignored.
    const std::string logSvg = temp("cli_attention_log.svg");
    expectOneLineError(run("export " + out + " --plot attention --attention-scale log --format svg --out " + logSvg),
                       "--attention-scale log: layer 0, head 0 is a linear-attention head");
    EXPECT_FALSE(fs::exists(logSvg));
    expectOneLineError(run("export " + out + " --plot attention --layer 3 --format csv --out " + temp("x.csv")),
                       "--layer 3");
    expectOneLineError(run("analyze " + out + " attention --out " + temp("x.txt")), "writes .csv or .h5 files");

    // Patterns of many prompts streamed to an HDF5 file: one dataset [prompts, H, T, N] per layer.
    const std::string h5 = temp("cli_capture.h5");
    const Result cap = run("analyze " + out + " attention --prompts 300 --out " + h5 + " --json");
    ASSERT_EQ(cap.code, 0) << cap.err;
    const auto c = nlohmann::json::parse(cap.out);
    EXPECT_EQ(c["names"], (std::vector<std::string>{"attn.pattern.0"}));
    EXPECT_EQ(c["shapes"]["attn.pattern.0"], (std::vector<int64_t>{1, 6, 5}));
    EXPECT_EQ(c["bytes"].get<int64_t>() >= 300 * 1 * 6 * 5 * 4, true);
    EXPECT_TRUE(fs::exists(h5));
    expectOneLineError(run("analyze " + out + " attention --prompts 3 --out " + h5), "add --force");

    // --store: the same capture into the experiment file itself, one group per capture, listed by info.
    for (const char* id : {"0001", "0002"}) {
        const Result stored = run("analyze " + out + " attention --prompts 5 --store --json");
        ASSERT_EQ(stored.code, 0) << stored.err;
        EXPECT_EQ(nlohmann::json::parse(stored.out)["group"], std::string("/analysis/activations/") + id);
        EXPECT_EQ(nlohmann::json::parse(stored.out)["out"], out);
    }
    const Result infoAfter = run("info " + out + " --json");
    ASSERT_EQ(infoAfter.code, 0) << infoAfter.err;
    EXPECT_EQ(nlohmann::json::parse(infoAfter.out)["analyses"]["activations"], 2);
    expectOneLineError(run("analyze " + out + " attention --prompts 3 --store --out " + temp("y.h5")),
                       "--store: the capture goes into");
}

// `analyze attention|lens|patching --prompt FILE` on a 1-layer LSA run (d = 5): a prompt file (written here by
// hand, JSON and CSV, the query's label left out) gives the model's prediction of the same numbers drawn from
// --prompt-seed, least squares solved here on the given numbers, and GD-1 in closed form; patching corrupts
// that prompt; bad files are one line and a non-zero exit.
TEST(Cli, AnalyzeWithAPromptFile)
{
    const std::string tag = std::to_string(::getpid());
    const std::string out = temp("cli_prompt_" + tag + ".h5");
    const Result tr = run(std::string("train") + kTiny + " --steps 100 --out " + out);
    ASSERT_EQ(tr.code, 0) << tr.err;
    const Result sampled = run("analyze " + out + " attention --prompt-seed 3 --json");
    ASSERT_EQ(sampled.code, 0) << sampled.err;
    const auto s = nlohmann::json::parse(sampled.out);
    EXPECT_EQ(s["prompt_seed"], 3);

    // The drawn prompt's numbers in a file of our own, without the query's label.
    const auto X = s["prompt"]["x"].get<std::vector<std::vector<double>>>();
    std::vector<double> Y = s["prompt"]["y"].get<std::vector<double>>();
    ASSERT_EQ(X.size(), 6u);
    Y.pop_back();
    const std::string jsonPath = temp("cli_prompt_" + tag + ".json");
    std::ofstream(jsonPath) << nlohmann::json{{"x", X}, {"y", Y}}.dump();
    const Result a = run("analyze " + out + " attention --prompt " + jsonPath + " --json");
    ASSERT_EQ(a.code, 0) << a.err;
    const auto j = nlohmann::json::parse(a.out);
    EXPECT_EQ(j["prompt_file"], jsonPath);
    EXPECT_FALSE(j.contains("prompt_seed"));
    EXPECT_EQ(j["prompt"]["x"].get<std::vector<std::vector<double>>>(), X) << "the prompt is printed as given";
    ASSERT_EQ(j["prompt"]["y"].size(), 6u);
    EXPECT_TRUE(j["prompt"]["y"][5].is_null()) << "the query's label is unknown";
    EXPECT_TRUE(j["target"].is_null());
    const auto& p = j["predictions"];
    EXPECT_EQ(p["model"]["prediction"].get<double>(), s["predictions"]["model"]["prediction"].get<double>())
        << "the same numbers give the same prediction";
    EXPECT_TRUE(p["model"]["error"].is_null()) << "no error without the query's label";
    // Least squares on the square system X w = y (N = d = 5), ŷ = ⟨w, x_q⟩.
    const std::vector<double> w = solveSquare({X.begin(), X.begin() + 5}, Y);
    double ls = 0;
    for (int k = 0; k < 5; ++k)
        ls += w[size_t(k)] * X[5][size_t(k)];
    EXPECT_NEAR(p["least_squares"]["prediction"].get<double>(), ls, 1e-6);
    EXPECT_NEAR(p["least_squares"]["prediction"].get<double>(), s["predictions"]["least_squares"]["prediction"].get<double>(),
                1e-9);
    // export --plot attention --prompt FILE draws the file's prompt: the same numbers as the drawn prompt give the same
    // pattern rows, and the file is named in the metadata.
    const std::string fromFile = temp("cli_prompt_" + tag + "_file.csv"), fromSeed = temp("cli_prompt_" + tag + "_seed.csv");
    const Result ef = run("export " + out + " --plot attention --prompt " + jsonPath + " --format csv --out " + fromFile);
    ASSERT_EQ(ef.code, 0) << ef.err;
    const Result es = run("export " + out + " --plot attention --prompt-seed 3 --format csv --out " + fromSeed);
    ASSERT_EQ(es.code, 0) << es.err;
    auto dataRows = [](const std::string& path, std::string* comments) {
        std::ifstream in(path);
        std::string line, rows;
        while (std::getline(in, line))
            (line.rfind("#", 0) == 0 ? *comments : rows) += line + "\n";
        return rows;
    };
    std::string fileComments, seedComments;
    const std::string fileRows = dataRows(fromFile, &fileComments), seedRows = dataRows(fromSeed, &seedComments);
    EXPECT_FALSE(fileRows.empty());
    EXPECT_EQ(fileRows, seedRows);
    EXPECT_NE(fileComments.find(jsonPath), std::string::npos) << fileComments;
    EXPECT_NE(run("export " + out + " --plot attention --prompt " + jsonPath + " --prompt-seed 2 --format csv --out "
                  + fromFile).code,
              0);

    const Result text = run("analyze " + out + " attention --prompt " + jsonPath);
    ASSERT_EQ(text.code, 0) << text.err;
    EXPECT_NE(text.out.find("on prompt " + jsonPath), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("unknown (not in the prompt)"), std::string::npos) << text.out;

    // A prompt of our own: N = 8 > the training N, written as CSV with comments and an empty query label.
    std::vector<std::vector<double>> X8(9, std::vector<double>(5));
    std::vector<double> Y8(8);
    for (size_t i = 0; i < 9; ++i)
        for (size_t k = 0; k < 5; ++k)
            X8[i][k] = std::sin(1.3 * double(i) + 0.7 * double(k) + 0.2);
    for (size_t i = 0; i < 8; ++i)
        Y8[i] = 0.5 * X8[i][0] - X8[i][2] + 0.25 * X8[i][4] + 0.1 * std::cos(double(i));
    const std::string csvPath = temp("cli_prompt_" + tag + ".csv");
    {
        std::ofstream f(csvPath);
        f << "# my own prompt\nx_1,x_2,x_3,x_4,x_5,y\n";
        f.precision(17);
        for (size_t i = 0; i < 9; ++i) {
            for (double v : X8[i])
                f << v << ",";
            if (i < 8)
                f << Y8[i];
            f << "\n";
        }
    }
    const Result c = run("analyze " + out + " attention --prompt " + csvPath + " --json");
    ASSERT_EQ(c.code, 0) << c.err;
    const auto jc = nlohmann::json::parse(c.out);
    EXPECT_EQ(jc["token_labels"].size(), 9u);
    // Least squares of the overdetermined system: the normal equations XᵀX w = Xᵀy.
    std::vector<std::vector<double>> xtx(5, std::vector<double>(5, 0.0));
    std::vector<double> xty(5, 0.0);
    for (size_t i = 0; i < 8; ++i)
        for (size_t a1 = 0; a1 < 5; ++a1) {
            xty[a1] += X8[i][a1] * Y8[i];
            for (size_t a2 = 0; a2 < 5; ++a2)
                xtx[a1][a2] += X8[i][a1] * X8[i][a2];
        }
    const std::vector<double> w8 = solveSquare(xtx, xty);
    double ls8 = 0;
    for (size_t k = 0; k < 5; ++k)
        ls8 += w8[k] * X8[8][k];
    EXPECT_NEAR(jc["predictions"]["least_squares"]["prediction"].get<double>(), ls8, 1e-6);
    // One GD step from 0 with the run's fitted η.
    EXPECT_NEAR(jc["predictions"]["gd_1"]["prediction"].get<double>(), gdOneStep(out, X8, Y8, X8[8], 8), 1e-5);

    // The lens ends at the model's prediction on the file's prompt.
    const Result l = run("analyze " + out + " lens --prompt " + jsonPath + " --json");
    ASSERT_EQ(l.code, 0) << l.err;
    const auto lens = nlohmann::json::parse(l.out);
    EXPECT_EQ(lens["prediction"][1].get<double>(), p["model"]["prediction"].get<double>());
    EXPECT_TRUE(lens["target"].is_null());

    // Patching corrupts the file's prompt: change_label changes y_3 only, and (one linear layer) patching the clean
    // e_3 restores the clean prediction while every other position does nothing.
    const Result pa = run("analyze " + out + " patching --prompt " + jsonPath + " --corruption change_label --example 3 --json");
    ASSERT_EQ(pa.code, 0) << pa.err;
    const auto patch = nlohmann::json::parse(pa.out);
    EXPECT_EQ(patch["prompt"]["x"].get<std::vector<std::vector<double>>>(), X);
    EXPECT_EQ(patch["prompt_file"], jsonPath);
    for (size_t i = 0; i < 5; ++i)
        if (i == 2)
            EXPECT_NE(patch["corrupted_prompt"]["y"][i].get<double>(), Y[i]);
        else
            EXPECT_EQ(patch["corrupted_prompt"]["y"][i].get<double>(), Y[i]) << i;
    EXPECT_EQ(patch["clean_prediction"].get<double>(), p["model"]["prediction"].get<double>());
    for (int t = 0; t < 6; ++t)
        EXPECT_NEAR(patch["patching_effect"][0][t].get<double>(), t == 2 ? 1.0 : 0.0, 1e-4) << "position " << t;

    // Bad prompt files and options: one line on stderr, non-zero exit, nothing on stdout.
    const std::string bad = temp("cli_prompt_bad_" + tag + ".json");
    std::ofstream(bad) << R"({"x": [[1, 2, 3, 4, 5], [1, 2, 3, 4], [1, 2, 3, 4, 5]], "y": [1, 2]})";
    const Result b = run("analyze " + out + " attention --prompt " + bad + " --json");
    expectOneLineError(b, bad + ": point 2 has 4 values, expected d = 5");
    EXPECT_TRUE(b.out.empty()) << b.out;
    const std::string badCsv = temp("cli_prompt_bad_" + tag + ".csv");
    std::ofstream(badCsv) << "x_1,x_2,x_3,x_4,x_5,y\n1,2,3,4,5,abc\n1,2,3,4,5,\n";
    expectOneLineError(run("analyze " + out + " lens --prompt " + badCsv),
                       badCsv + " line 2, column y: \"abc\" is not a number");
    expectOneLineError(run("analyze " + out + " patching --prompt " + temp("cli_prompt_missing_" + tag + ".json")),
                       ": no such file");
    // A task instance w of the wrong size (d = 5) is refused by every analysis, naming the file, even by patching,
    // which never reads w.
    const std::string badW = temp("cli_prompt_bad_w_" + tag + ".json");
    std::ofstream(badW) << R"({"x": [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]], "y": [1, 2], "w": [1, 2, 3]})";
    for (const char* kind : {"attention", "lens", "patching --corruption change_label --example 1"}) {
        const Result r = run("analyze " + out + " " + kind + " --prompt " + badW + " --json");
        expectOneLineError(r, badW + ": prompt: w has 3 components, expected d = 5");
        EXPECT_TRUE(r.out.empty()) << kind << ": " << r.out;
    }
    expectOneLineError(run("analyze " + out + " attention --prompt " + jsonPath + " --prompt-seed 2"), "excludes");
    expectOneLineError(run("analyze " + out + " attention --prompt " + jsonPath + " --prompts 3 --out "
                           + temp("cli_prompt_" + tag + "_capture.h5")),
                       "--prompt: attention --out FILE.h5 captures");
}

// A few-shot run with a common / rare split (task.n_common_classes): train, info, analyze icl-iwl and the icl_iwl
// export all report ICL and IWL accuracy on common and on rare classes, and the on-demand evaluation of the run's
// own sequences reproduces what training stored; the split's options without a split are one line naming the key.
TEST(Cli, CommonRareSplitInTrainInfoAnalyzeAndExport)
{
    const std::string out = temp("cli_common_rare.h5");
    const std::string sets = " --set task.n_classes=100 --set task.n_common_classes=10 --set task.p_bursty_zipfian=0"
                             " --set task.non_bursty_type=common --set training.eval_every=2"
                             " --set training.checkpoint_every=2 --set eval.n_prompts=32";
    const Result t = run("train --preset chan-bursty --steps 4 --threads 1 --out " + out + sets);
    ASSERT_EQ(t.code, 0) << t.err;
    EXPECT_NE(t.out.find("common classes: ICL accuracy"), std::string::npos) << t.out;

    const Result infoText = run("info " + out);
    ASSERT_EQ(infoText.code, 0) << infoText.err;
    EXPECT_NE(infoText.out.find("common classes: ICL accuracy"), std::string::npos) << infoText.out;
    EXPECT_NE(infoText.out.find("rare classes:   ICL accuracy"), std::string::npos) << infoText.out;
    const auto info = nlohmann::json::parse(run("info " + out + " --json").out);
    EXPECT_EQ(info["config"]["task"]["n_common_classes"], 10);
    EXPECT_EQ(info["config"]["task"]["non_bursty_type"], "common");

    const Result a = run("analyze " + out + " icl-iwl --json");
    ASSERT_EQ(a.code, 0) << a.err;
    const auto analysis = nlohmann::json::parse(a.out);
    for (const char* key : {"icl_accuracy_common", "icl_accuracy_rare", "iwl_accuracy_common", "iwl_accuracy_rare"}) {
        ASSERT_TRUE(analysis.contains(key)) << key;
        EXPECT_DOUBLE_EQ(analysis[key].get<double>(), info["final"][key].get<double>()) << key;
    }
    const Result aText = run("analyze " + out + " icl-iwl");
    EXPECT_NE(aText.out.find("IWL, rare classes, no support in context"), std::string::npos) << aText.out;

    const std::string csv = temp("cli_common_rare.csv");
    ASSERT_EQ(run("export " + out + " --plot icl_iwl --format csv --out " + csv).code, 0);
    std::ifstream f(csv);
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_NE(text.str().find("ICL (common, labels {0, 1})"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("IWL (rare, no support)"), std::string::npos) << text.str();

    expectOneLineError(run("train --preset chan-bursty --steps 1 --set task.p_bursty_zipfian=0.5 --out "
                           + temp("cli_no_split.h5")),
                       "task.p_bursty_zipfian");
}

// A 2 × 2 sweep (p_bursty × model) of the few-shot classification task run as local processes, then
// aggregated: one table row per run with its grid values, plots per numeric key; a second sweep call finds
// every run finished; --emit-slurm writes a valid array script; a malformed grid is one line naming the key.
TEST(Cli, SweepAggregateAndSlurmScript)
{
    const std::string dir = temp("cli_sweep");
    fs::create_directories(dir);
    const std::string spec = dir + "/sweep.json";
    std::ofstream(spec) << R"({"preset": "chan-bursty", "scale": "quick", "steps": 6,
        "set": ["training.eval_every=3", "training.checkpoint_every=3", "eval.n_prompts=32", "task.n_classes=100"],
        "grid": {"task.p_bursty": [0, 0.9], "model.kind": ["gpt2", "lstm"]}})";
    const std::string out = dir + "/runs";
    const Result s = run("sweep " + spec + " --out " + out + " --jobs 2");
    ASSERT_EQ(s.code, 0) << s.err;
    for (int i = 0; i < 4; ++i)
        EXPECT_TRUE(fs::exists(out + "/run_000" + std::to_string(i) + ".h5")) << i;
    const Result a = run("aggregate " + out + " --json");
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(nlohmann::json::parse(a.out)["runs"], 4);
    EXPECT_EQ(nlohmann::json::parse(a.out)["unfinished"], 0);
    std::ifstream t(out + "/aggregate/table.csv");
    std::string header, line;
    std::getline(t, header);
    // Grid keys in alphabetical order, then the seed; the first key varies fastest.
    EXPECT_EQ(header.rfind("model.kind,seed,task.p_bursty,step,icl_accuracy", 0), 0u) << header;
    std::vector<std::string> rows;
    while (std::getline(t, line))
        rows.push_back(line);
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[3].rfind("lstm,0,0.9,6,", 0), 0u) << rows[3];  // the last grid point, trained to step 6
    EXPECT_EQ(header.substr(header.size() - 5), ",file") << header;  // each row names its run file, last
    EXPECT_EQ(rows[3].substr(rows[3].size() - 12), ",run_0003.h5") << rows[3];
    EXPECT_TRUE(fs::exists(out + "/aggregate/sweep_task.p_bursty.csv"));
    // model.kind is not numeric: one named position per value in grid order, one line per p_bursty; each point is
    // that run's final ICL accuracy, read here from the table's row (icl_accuracy is its 5th column).
    std::ifstream kf(out + "/aggregate/sweep_model.kind.csv");
    std::stringstream kinds;
    kinds << kf.rdbuf();
    EXPECT_NE(kinds.str().find("# x_values: 0 = gpt2, 1 = lstm"), std::string::npos) << kinds.str();
    auto column = [](const std::string& row, int k) {
        std::stringstream ss(row);
        std::string cell;
        for (int i = 0; i <= k; ++i)
            std::getline(ss, cell, ',');
        return std::stod(cell);
    };
    auto tableIcl = [&](const std::string& prefix) {
        for (const std::string& r : rows)
            if (r.rfind(prefix, 0) == 0)
                return column(r, 4);
        ADD_FAILURE() << "no table row " << prefix;
        return -1.0;
    };
    std::stringstream kindLines(kinds.str());
    std::vector<std::string> points;
    for (std::string l; std::getline(kindLines, l);)
        if (!l.empty() && l[0] != '#')
            points.push_back(l);
    ASSERT_EQ(points.size(), 3u) << kinds.str();  // header, x = 0 (gpt2), x = 1 (lstm)
    EXPECT_EQ(points[0], "model.kind,ICL (p_bursty 0),IWL (p_bursty 0),ICL (p_bursty 0.9),IWL (p_bursty 0.9)");
    EXPECT_NEAR(column(points[1], 1), tableIcl("gpt2,0,0,"), 1e-5);
    EXPECT_NEAR(column(points[2], 1), tableIcl("lstm,0,0,"), 1e-5);
    EXPECT_NEAR(column(points[1], 3), tableIcl("gpt2,0,0.9,"), 1e-5);
    EXPECT_NEAR(column(points[2], 3), tableIcl("lstm,0,0.9,"), 1e-5);

    const Result again = run("sweep " + spec + " --out " + out);
    ASSERT_EQ(again.code, 0) << again.err;
    EXPECT_NE(again.out.find("4 finished, 0 failed"), std::string::npos) << again.out;

    const std::string script = dir + "/job.sh";
    ASSERT_EQ(run("sweep " + spec + " --out " + out + " --emit-slurm " + script).code, 0);
    std::ifstream sf(script);
    std::stringstream text;
    text << sf.rdbuf();
    EXPECT_NE(text.str().find("#SBATCH --array=0-3"), std::string::npos) << text.str();
    EXPECT_EQ(std::system(("bash -n " + script).c_str()), 0) << "the script parses";

    // The array tasks themselves, run with bash as Slurm would. ICL_CLI is a wrapper that logs its arguments;
    // for a resume it asks for 3 more steps (--steps 9), so the continuation of a finished 6-step run trains.
    const std::string wrapper = dir + "/icl_cli_wrapper.sh", calls = dir + "/calls.txt";
    std::ofstream(wrapper) << "#!/bin/bash\necho \"$*\" >> '" << calls << "'\n"
                           << "if [ \"$1 $2\" = 'train --resume' ]; then exec '" << ICL_CLI_PATH << "' \"$@\" --steps 9; fi\n"
                           << "exec '" << ICL_CLI_PATH << "' \"$@\"\n";
    fs::permissions(wrapper, fs::perms::owner_all);
    auto task = [&](int id, const std::string& cli, const std::string& jobScript) {
        Result r;
        const std::string log = dir + "/task.log";
        const std::string cmd = "SLURM_ARRAY_TASK_ID=" + std::to_string(id) + " SLURM_CPUS_PER_TASK=1 ICL_CLI=" + cli
                                + " bash " + jobScript + " >" + log + " 2>&1";
        const int status = std::system(cmd.c_str());
        r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        std::ifstream f(log);
        std::stringstream ss;
        ss << f.rdbuf();
        r.out = ss.str();
        return r;
    };
    auto lastLine = [&] {
        std::ifstream f(calls);
        std::string l, last;
        while (std::getline(f, l))
            last = l;
        return last;
    };
    auto checkpoints = [&](const std::string& file) {
        std::vector<int64_t> steps;
        const auto info = nlohmann::json::parse(run("info " + file + " --json").out);
        for (const auto& c : info["checkpoints"])
            steps.push_back(c["step"]);
        return steps;
    };
    // Re-queued task 1 finds its file: `train --resume --threads 1 --out FILE` (no --preset/--set, which
    // --resume refuses), and the run continues from its checkpoint at step 6.
    const Result resumed = task(1, wrapper, script);
    ASSERT_EQ(resumed.code, 0) << resumed.out;
    EXPECT_EQ(lastLine(), "train --resume --threads 1 --out " + out + "/run_0001.h5");
    EXPECT_EQ(checkpoints(out + "/run_0001.h5"), (std::vector<int64_t>{0, 3, 6, 9}));
    // A task whose run has no file yet starts it with the grid point's arguments; run again (re-queued after
    // it finished), it leaves the finished run as it is and succeeds.
    const std::string fresh = dir + "/fresh", freshScript = dir + "/fresh_job.sh";
    ASSERT_EQ(run("sweep " + spec + " --out " + fresh + " --emit-slurm " + freshScript).code, 0);
    const Result first = task(2, wrapper, freshScript);
    ASSERT_EQ(first.code, 0) << first.out;
    EXPECT_EQ(lastLine().rfind("train --preset chan-bursty --scale quick --steps 6 ", 0), 0u) << lastLine();
    EXPECT_NE(lastLine().find("--set model.kind=gpt2 --set task.p_bursty=0.9 --seed 0 --threads 1 --out " + fresh
                              + "/run_0002.h5"),
              std::string::npos)
        << lastLine();
    EXPECT_EQ(checkpoints(fresh + "/run_0002.h5"), (std::vector<int64_t>{0, 3, 6}));
    const Result requeued = task(2, ICL_CLI_PATH, freshScript);
    ASSERT_EQ(requeued.code, 0) << requeued.out;
    EXPECT_NE(requeued.out.find("already finished at step 6"), std::string::npos) << requeued.out;
    EXPECT_EQ(checkpoints(fresh + "/run_0002.h5"), (std::vector<int64_t>{0, 3, 6}));
    EXPECT_EQ(task(4, ICL_CLI_PATH, freshScript).code, 1) << "no grid point 4";

    std::ofstream(dir + "/bad.json") << R"({"preset": "chan-bursty", "grid": {"task.p_bursty": 0.5}})";
    expectOneLineError(run("sweep " + dir + "/bad.json --out " + out), "grid.task.p_bursty");
    // A grid value or key the config refuses is one line naming the grid point and the key, before any run starts
    // or any script or directory is written.
    std::ofstream(dir + "/bad_value.json") << R"({"preset": "chan-bursty", "grid": {"task.p_bursty": [0.5, 2]}})";
    expectOneLineError(run("sweep " + dir + "/bad_value.json --out " + dir + "/bad_runs"),
                       "grid point task.p_bursty=2, seed=0: task.p_bursty: expected a number in [0, 1], got 2");
    EXPECT_FALSE(fs::exists(dir + "/bad_runs"));
    std::ofstream(dir + "/bad_key.json") << R"({"preset": "chan-bursty", "grid": {"task.p_burst": [0, 1]}})";
    expectOneLineError(run("sweep " + dir + "/bad_key.json --out " + dir + "/bad_runs --emit-slurm " + dir + "/bad.sh"),
                       "task.p_burst: unknown key");
    EXPECT_FALSE(fs::exists(dir + "/bad.sh"));

    // A damaged run file is skipped and named; the other runs are still aggregated.
    const std::string damagedDir = dir + "/damaged";
    fs::copy(out, damagedDir, fs::copy_options::recursive);
    fs::resize_file(damagedDir + "/run_0001.h5", 2000);
    const Result d = run("aggregate " + damagedDir + " --json");
    ASSERT_EQ(d.code, 0) << d.err;
    const auto dj = nlohmann::json::parse(d.out);
    EXPECT_EQ(dj["runs"], 3);
    EXPECT_EQ(dj["damaged"], nlohmann::json::array({"run_0001.h5"}));
    EXPECT_NE(d.err.find("skipping"), std::string::npos) << d.err;
}

// The sequence viewer from the command line: `analyze icl-iwl --show-sequence KIND` prints one sequence of a
// few-shot run and the checkpoint's prediction; its JSON obeys the sequence rules of Chan et al. (ICL: 2 holdout
// classes × 4 shots with labels {0, 1}; IWL: no item of the query's class) and is self-consistent (the prediction
// is the argmax of the probabilities, the in-context flag matches the labels); a regression run is one line.
TEST(Cli, ShowSequenceOfAFewShotRun)
{
    const std::string out = temp("cli_show_sequence.h5");
    const std::string sets = " --set task.n_classes=100 --set training.eval_every=2 --set training.checkpoint_every=2"
                             " --set eval.n_prompts=32";
    ASSERT_EQ(run("train --preset chan-bursty --steps 4 --threads 1 --out " + out + sets).code, 0);

    const Result icl = run("analyze " + out + " icl-iwl --show-sequence icl --seed 3 --checkpoint 2 --json --threads 1");
    ASSERT_EQ(icl.code, 0) << icl.err;
    const auto s = nlohmann::json::parse(icl.out);
    EXPECT_EQ(s["kind"], "icl");
    EXPECT_EQ(s["seed"], 3);
    EXPECT_EQ(s["checkpoint_step"], 2);
    ASSERT_EQ(s["items"].size(), 9u);
    std::map<int64_t, int> counts;
    std::map<int64_t, std::set<int64_t>> labels;
    for (size_t i = 0; i < 9; ++i) {
        const auto& item = s["items"][i];
        EXPECT_TRUE(item["holdout"].get<bool>());
        const int64_t label = item["label"];
        EXPECT_TRUE(label == 0 || label == 1);
        labels[item["class"]].insert(label);
        if (i < 8)
            ++counts[item["class"]];
    }
    ASSERT_EQ(counts.size(), 2u);
    for (const auto& [c, n] : counts) {
        EXPECT_EQ(n, 4);
        EXPECT_EQ(labels[c].size(), 1u);
    }
    const std::vector<double> p = s["probabilities"];
    const int64_t argmax = std::max_element(p.begin(), p.end()) - p.begin();
    EXPECT_EQ(s["predicted_label"], argmax);
    EXPECT_EQ(s["predicted_label_01"], p[1] > p[0] ? 1 : 0);
    EXPECT_EQ(s["top_labels"][0]["label"], argmax);
    EXPECT_EQ(s["true_label"], s["items"][8]["label"]);
    EXPECT_EQ(s["prediction_in_context"].get<bool>(), argmax == 0 || argmax == 1);
    EXPECT_EQ(s["items"][0]["exemplar"].size(), s["exemplar_shape"][0].get<size_t>());

    const auto iwl = nlohmann::json::parse(run("analyze " + out + " icl-iwl --show-sequence iwl --json").out);
    for (size_t i = 0; i < 8; ++i)
        EXPECT_NE(iwl["items"][i]["class"], iwl["items"][8]["class"]) << "no support for the query's class";

    const Result text = run("analyze " + out + " icl-iwl --show-sequence training_bursty --seed 1");
    ASSERT_EQ(text.code, 0) << text.err;
    EXPECT_NE(text.out.find("training sequence (bursty), seed 1"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("predicted label "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("most probable labels:"), std::string::npos) << text.out;

    const std::string lsa = temp("cli_show_sequence_lsa.h5");
    ASSERT_EQ(run(std::string("train") + kTiny + " --steps 1 --out " + lsa).code, 0);
    expectOneLineError(run("analyze " + lsa + " icl-iwl --show-sequence icl"), "fewshot_classification");
    EXPECT_NE(run("analyze " + out + " icl-iwl --show-sequence bursty").code, 0);
    // The regression ICL curve on a few-shot run points to icl-iwl (it used to fail on a missing GPT-2 parameter).
    expectOneLineError(run("eval " + out), "icl-iwl");
    expectOneLineError(run("export " + out + " --plot icl_curve --format csv --out " + temp("cli_fewshot_curve.csv")),
                       "icl-iwl");
}

namespace {

/// `text` single-quoted for the shell run() uses (so a name may hold an escape sequence and a newline).
std::string shellQuoted(const std::string& text)
{
    std::string q = "'";
    for (char c : text)
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

} // namespace

// Hostile files (issue 46): refused in one line that names the file, and a file's names and strings printed
// escaped (control characters as \xNN), so a file cannot clear the screen or print a line of its own; --json
// output stays valid JSON with the raw value.
TEST(Cli, HostileFilesGiveOneEscapedLine)
{
    const std::string tag = std::to_string(::getpid());
    const std::string out = temp("cli_hostile_" + tag + ".h5");
    const Result tr = run(std::string("train") + kTiny + " --steps 0 --out " + out);
    ASSERT_EQ(tr.code, 0) << tr.err;
    const std::string evil = "\x1b[2J\nall good";
    const std::string shownEvil = "\\x1b[2J\\x0aall good";

    // JSON nested a million levels deep: SIGSEGV before the fix.
    const std::string deep = temp("cli_deep_" + tag + ".json");
    std::ofstream(deep) << "{\"x\": " << std::string(1000000, '[') << std::string(1000000, ']') << ", \"y\": [1]}";
    const Result d = run("analyze " + out + " attention --prompt " + deep);
    expectOneLineError(d, "icl-cli: " + deep + ": JSON nested deeper than 64 levels");
    EXPECT_TRUE(d.out.empty()) << d.out;

    // A prompt file whose name and header hold an escape sequence and a newline: the error quotes both, escaped.
    const std::string csv = temp("cli_prompt_" + tag + evil + ".csv");
    std::ofstream(csv) << "x_1,\x1b[2J\rall good,x_3,x_4,x_5,y\n1,2,3,4,5,6\n1,2,3,4,5,\n";
    const Result c = run("analyze " + out + " lens --prompt " + shellQuoted(csv));
    expectOneLineError(c, "icl-cli: " + temp("cli_prompt_" + tag) + shownEvil + ".csv line 1: header column 2 is "
                              "\"\\x1b[2J\\x0dall good\", expected \"x_2\" (header x_1,…,x_5,y)");
    EXPECT_EQ(c.err.find('\x1b'), std::string::npos) << "no raw escape character";

    // A run file of that name: info's text names it escaped, --json gives the raw name as valid JSON.
    const std::string named = temp("cli_run_" + tag + evil + ".h5");
    fs::copy_file(out, named);
    const Result i = run("info " + shellQuoted(named));
    ASSERT_EQ(i.code, 0) << i.err;
    EXPECT_EQ(i.out.rfind(temp("cli_run_" + tag) + shownEvil + ".h5  (", 0), 0u) << i.out;
    EXPECT_EQ(i.out.find('\x1b'), std::string::npos) << i.out;
    EXPECT_EQ(i.out.find("\nall good"), std::string::npos) << i.out;
    const Result ij = run("info " + shellQuoted(named) + " --json");
    ASSERT_EQ(ij.code, 0) << ij.err;
    EXPECT_EQ(nlohmann::json::parse(ij.out)["file"], named);
    EXPECT_EQ(ij.out.find('\x1b'), std::string::npos) << "JSON escapes it as \\u001b";

    // Not an HDF5 file, under that name: one escaped line naming it.
    const std::string junk = temp("cli_junk_" + tag + evil + ".h5");
    std::ofstream(junk) << "not an experiment";
    const Result j = run("verify " + shellQuoted(junk));
    expectOneLineError(j, "icl-cli: " + temp("cli_junk_" + tag) + shownEvil + ".h5: ");
    EXPECT_EQ(j.err.find('\x1b'), std::string::npos) << j.err;

    // A sweep.json whose run entry is a number: nlohmann's type error was "internal error" (exit 2) before the fix;
    // it is about the file the command reads.
    const std::string sweepDir = temp("cli_hostile_sweep_" + tag);
    fs::create_directories(sweepDir);
    std::ofstream(sweepDir + "/sweep.json") << R"({"runs": [5]})";
    const Result a = run("aggregate " + sweepDir);
    expectOneLineError(a, "icl-cli: " + sweepDir + ": unexpected content (cannot use operator[] with a string "
                              "argument with number)");
    EXPECT_EQ(a.code, 1);
    EXPECT_EQ(a.err.find("internal error"), std::string::npos) << a.err;
}

// --max-memory on import, eval and analyze: the budget of what a file's contents size, refused in one line.
TEST(Cli, MaxMemoryBoundsWhatAFileMayMakeACommandAllocate)
{
    const std::string foreign = std::string(ICL_SOURCE_DIR) + "/tests/data/foreign/";
    const std::string sets = " --set model.n_heads=4 --set task.kind=linear_regression --set task.n_context=10"
                             " --set eval.n_prompts=200 --set eval.bootstrap=10 --threads 1";
    const Result tiny = run("import " + foreign + "bare.pt --dry-run" + sets + " --max-memory 1K");
    EXPECT_EQ(tiny.code, 1) << tiny.err;
    EXPECT_EQ(tiny.err.rfind("icl-cli: " + foreign + "bare.pt: refused: ", 0), 0u) << tiny.err;
    EXPECT_NE(tiny.err.find("over the memory budget of 1.02 KB (--max-memory or ICL_MAX_MEMORY)\n"), std::string::npos)
        << tiny.err;
    EXPECT_EQ(std::count(tiny.err.begin(), tiny.err.end(), '\n'), 1) << tiny.err;
    {
        // the environment's budget, and --max-memory over it
        const icl::test::ScopedEnv env("ICL_MAX_MEMORY", "1K");
        EXPECT_EQ(run("import " + foreign + "bare.pt --dry-run" + sets).code, 1);
        const Result over = run("import " + foreign + "bare.pt --dry-run" + sets + " --max-memory 64M");
        EXPECT_EQ(over.code, 0) << over.err;
    }
    const Result bad = run("import " + foreign + "bare.pt --dry-run" + sets + " --max-memory lots");
    EXPECT_NE(bad.code, 0);
    EXPECT_NE(bad.err.find("--max-memory: expected a size such as 512M or 2G, got \"lots\""), std::string::npos)
        << bad.err;

    // A run imported from the fixture: eval and analyze refuse its model within 1K and run within 64M.
    const std::string out = temp("cli_max_memory.h5");
    const Result imported = run("import " + foreign + "bare.pt --out " + out + sets);
    ASSERT_EQ(imported.code, 0) << imported.err;
    for (const std::string command : {"eval " + out, "analyze " + out + " ood"}) {
        SCOPED_TRACE(command);
        // 16K holds the run's config (2.4 KB) but not its model (about 100 KB)
        const Result refused = run(command + " --threads 1 --max-memory 16K");
        EXPECT_EQ(refused.code, 1) << refused.err;
        EXPECT_EQ(refused.err.rfind("icl-cli: " + out + ": refused: its model (gpt2, 2 layers, d_model 32, 4 heads, ", 0),
                  0u)
            << refused.err;
        EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    }
    const Result evaluated = run("eval " + out + " --threads 1 --prompts 50 --max-memory 64M --json");
    EXPECT_EQ(evaluated.code, 0) << evaluated.err;
}

// The algorithm map from the command line (docs/science.md §5): an LSA holding the GD construction (trained for 0
// steps from model.init gd_construction, without GD++ baselines) matches GD step ℓ at layer ℓ; --store puts it into the file, report draws
// it and export writes its heatmap; a family that does not apply and a run without a map are one line each.
TEST(Cli, AnalyzeAlgorithmMapStoreReportAndExport)
{
    const std::string out = temp("cli_algorithm_map.h5");
    ASSERT_TRUE(succeeded(run(trainCommand("vonoswald-lsa-multilayer",
        { "model.init=gd_construction", "task.d=5", "task.n_context=8", "eval.n_prompts=500",
            "'eval.baselines=[\"zero\",\"gd\"]'", "'eval.alignment=[\"gd_3\"]'" },
        0, out))));
    nlohmann::json j;
    ASSERT_TRUE(jsonOutput(run("analyze " + out + " algorithm-map --prompts 300 --store --json --threads 1"), &j));
    EXPECT_EQ(j["analysis"], "algorithm_map");
    EXPECT_EQ(j["layers"], (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(j["positions"], "query");
    const auto& gd = j["families"]["gd"];
    const std::vector<double> steps = gd["steps"].get<std::vector<double>>();
    for (int l = 1; l <= 3; ++l) {
        EXPECT_EQ(gd["best_step"][l - 1].get<double>(), double(l));
        const size_t s = size_t(std::find(steps.begin(), steps.end(), double(l)) - steps.begin());
        ASSERT_LT(s, steps.size());
        EXPECT_NEAR(gd["sim_errors"][l - 1][s].get<double>(), 1.0, 1e-6);
    }
    for (const char* family : {"newton", "ridge"}) {
        ASSERT_TRUE(j["families"].contains(family)) << family;
        EXPECT_EQ(j["families"][family]["sim_errors"].size(), 3u);
        EXPECT_TRUE(j["families"][family]["fit"].contains("r2"));
    }
    EXPECT_TRUE(j["families"]["gdpp"].contains("unavailable"));
    const Result info = run("info " + out + " --json");
    EXPECT_NE(info.out.find("\"algorithm_map\""), std::string::npos) << "the map is stored in the file";

    const std::string reportDir = temp("cli_algorithm_map_report");
    ASSERT_EQ(run("report " + out + " --out " + reportDir).code, 0);
    for (const char* file : {"algorithm_map_gd.csv", "algorithm_map_newton.csv", "algorithm_map_best_step.csv"})
        EXPECT_TRUE(fs::exists(reportDir + "/" + file)) << file;
    const auto summary = nlohmann::json::parse(std::ifstream(reportDir + "/summary.json"));
    EXPECT_EQ(summary["algorithm_map"]["families"]["gd"]["best_step"], gd["best_step"]);

    const std::string csv = temp("cli_algorithm_map.csv");
    ASSERT_EQ(run("export " + out + " --plot algorithm-map --family gd --format csv --out " + csv).code, 0);
    std::ifstream f(csv);
    std::string line, header;
    while (std::getline(f, line) && line.rfind("#", 0) == 0) {
    }
    header = line;
    EXPECT_EQ(header.rfind("row,k=1,", 0), 0u) << header;
    EXPECT_NE(header.find("best_step,best_similarity"), std::string::npos) << header;
    std::getline(f, line);
    EXPECT_EQ(line.rfind("layer 1,", 0), 0u) << line;

    expectOneLineError(run("analyze " + out + " algorithm-map --families gdpp"), "does not apply");
    expectOneLineError(run("export " + out + " --plot algorithm-map --family gdpp --format csv --out " + temp("x.csv")),
                       "not on the map");
    const std::string fewshot = temp("cli_algorithm_map_fewshot.h5");
    ASSERT_EQ(run("train --preset chan-bursty --steps 2 --threads 1 --set task.n_classes=100 --set eval.n_prompts=16"
                  " --set training.eval_every=2 --set training.checkpoint_every=2 --out " + fewshot).code, 0);
    expectOneLineError(run("analyze " + fewshot + " algorithm-map"), "not a regression task");
}
