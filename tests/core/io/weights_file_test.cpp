// Foreign weight files (core/io/weights_file.h). The right values come from tests/data/foreign/ (written by real
// PyTorch 1.13 and NumPy, make_fixtures.py), from the raw bytes of those files decoded here by the definition of
// each number format, or from bytes this test builds itself (pickles, .npy, safetensors headers, zip archives
// written with libzip). Nothing expected is computed by the code under test.
#include <gtest/gtest.h>
#include <zip.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/io/display_text.h"
#include "core/io/weights_file.h"
#include "image_fixtures.h"
#include "tests/support/core_checks.h"

namespace fs = std::filesystem;
using icl::NamedArray;
using icl::WeightsFile;
using icl::WeightsFormat;

namespace {
using icl::test::errorOf;
using icl::test::sameBits;

const std::string kForeign = std::string(ICL_TEST_DATA_DIR) + "/foreign/";
const char* const kHostileMarker = "/tmp/icl_workbench_hostile_pickle_ran";

std::string readBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    ASSERT_TRUE(out.good()) << path;
}

std::string le(uint64_t v, int n)
{
    std::string s;
    for (int k = 0; k < n; ++k)
        s += char((v >> (8 * k)) & 0xFF);
    return s;
}

std::string floatBytes(const std::vector<float>& values, bool big_endian = false)
{
    std::string s;
    for (float f : values) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        std::string b = le(u, 4);
        if (big_endian)
            std::reverse(b.begin(), b.end());
        s += b;
    }
    return s;
}

const WeightsFile& bare()
{
    static const WeightsFile file = icl::readWeightsFile(kForeign + "bare.pt");
    return file;
}

std::map<std::string, const NamedArray*> byName(const WeightsFile& file)
{
    std::map<std::string, const NamedArray*> out;
    for (const NamedArray& t : file.tensors)
        out[t.name] = &t;
    return out;
}

std::vector<std::string> names(const WeightsFile& file)
{
    std::vector<std::string> out;
    for (const NamedArray& t : file.tensors)
        out.push_back(t.name);
    return out;
}

// `got` holds bare.pt's tensors (names with `prefix` in front), bit for bit; in bare.pt's order when `ordered`.
void expectBareTensors(const WeightsFile& got, const std::string& prefix = "", bool ordered = true)
{
    ASSERT_EQ(got.tensors.size(), bare().tensors.size());
    const auto mine = byName(got);
    for (size_t i = 0; i < bare().tensors.size(); ++i) {
        const NamedArray& want = bare().tensors[i];
        if (ordered) {
            EXPECT_EQ(got.tensors[i].name, prefix + want.name);
        }
        const auto it = mine.find(prefix + want.name);
        ASSERT_NE(it, mine.end()) << prefix + want.name;
        EXPECT_EQ(it->second->shape, want.shape) << want.name;
        EXPECT_TRUE(sameBits(it->second->data, want.data)) << want.name;
    }
}

// ---- independent number formats ------------------------------------------------------------------------

// IEEE binary16 by its definition: (-1)^s 2^(e-15) (1 + m/1024); subnormals (-1)^s 2^-14 m/1024.
double halfValue(uint16_t bits)
{
    const int s = bits >> 15, e = (bits >> 10) & 0x1F, m = bits & 0x3FF;
    double v;
    if (e == 31)
        v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else if (e == 0)
        v = std::ldexp(double(m), -24);
    else
        v = std::ldexp(double(1024 + m), e - 25);
    return s ? -v : v;
}

// x rounded to nearest (ties to even) in a binary format with `mantissa_bits` stored mantissa bits and
// smallest normal exponent `min_exp` (float16: 10, -14; bfloat16: 7, -126). Finite x in range only.
float roundToFormat(float x, int mantissa_bits, int min_exp)
{
    if (x == 0.0f || !std::isfinite(x))
        return x;
    int e = 0;
    std::frexp(double(x), &e); // |x| = f 2^e, f in [0.5, 1): leading bit 2^(e-1)
    const int lead = std::max(e - 1, min_exp);
    const double ulp = std::ldexp(1.0, lead - mantissa_bits);
    return float(std::nearbyint(double(x) / ulp) * ulp);
}

// The tensors of a safetensors file decoded here from its bytes: name -> (dtype, shape, raw data).
struct RawTensor {
    std::string dtype;
    std::vector<int64_t> shape;
    std::string bytes;
};
std::map<std::string, RawTensor> rawSafetensors(const std::string& path)
{
    const std::string file = readBytes(path);
    uint64_t n = 0;
    for (int k = 7; k >= 0; --k)
        n = (n << 8) | uint8_t(file[size_t(k)]);
    const nlohmann::json header = nlohmann::json::parse(file.substr(8, n));
    std::map<std::string, RawTensor> out;
    for (const auto& [name, info] : header.items()) {
        if (name == "__metadata__")
            continue;
        const uint64_t begin = info["data_offsets"][0].get<uint64_t>();
        const uint64_t end = info["data_offsets"][1].get<uint64_t>();
        out[name] = { info["dtype"].get<std::string>(), info["shape"].get<std::vector<int64_t>>(),
            file.substr(8 + n + begin, end - begin) };
    }
    return out;
}

// ---- zip archives and pickles built here ------------------------------------------------------------------

void writeZip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries)
{
    int code = 0;
    zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
    ASSERT_NE(z, nullptr);
    for (const auto& [name, bytes] : entries) {
        zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
        ASSERT_GE(zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE), 0);
    }
    ASSERT_EQ(zip_close(z), 0);
}

// Pickle opcodes (protocol 2 unless noted), written out by hand.
std::string pGlobal(const std::string& module, const std::string& name)
{
    return "c" + module + "\n" + name + "\n";
}
std::string pStr(const std::string& s)
{
    return "X" + le(s.size(), 4) + s;
}
std::string pInt(int64_t v)
{
    return "J" + le(uint64_t(uint32_t(int32_t(v))), 4);
}
std::string pInts(const std::vector<int64_t>& v)
{
    std::string s = "(";
    for (int64_t x : v)
        s += pInt(x);
    return s + "t";
}
const std::string kProto2 = "\x80\x02";
const std::string kEmptyOrderedDict = pGlobal("collections", "OrderedDict") + ")R";

// torch._utils._rebuild_tensor_v2(('storage', torch.FloatStorage, key, 'cpu', numel), offset, size, stride,
// False, OrderedDict()) as torch.save writes it.
std::string pTensor(const std::string& key, int64_t numel, int64_t offset, const std::vector<int64_t>& size,
    const std::vector<int64_t>& stride, const std::string& storage_type = "FloatStorage")
{
    return pGlobal("torch._utils", "_rebuild_tensor_v2") + "((" + pStr("storage") + pGlobal("torch", storage_type)
        + pStr(key) + pStr("cpu") + pInt(numel) + "tQ" + pInt(offset) + pInts(size) + pInts(stride) + "\x89"
        + kEmptyOrderedDict + "tR";
}

// A pickle of OrderedDict {name: value pickle, ...}.
std::string pStateDict(const std::vector<std::pair<std::string, std::string>>& items)
{
    std::string s = kProto2 + kEmptyOrderedDict + "(";
    for (const auto& [name, value] : items)
        s += pStr(name) + value;
    return s + "u.";
}

// Writes a torch zip "t/data.pkl" + "t/data/<key>" into `dir` and returns its path.
std::string writePickled(const fixtures::ScratchDir& dir, const std::string& pickle,
    const std::vector<std::pair<std::string, std::string>>& storages = {})
{
    std::vector<std::pair<std::string, std::string>> entries { { "t/data.pkl", pickle }, { "t/version", "3\n" } };
    for (const auto& [key, bytes] : storages)
        entries.emplace_back("t/data/" + key, bytes);
    const std::string path = dir.file("t.pt");
    writeZip(path, entries);
    return path;
}

// Writes a torch zip "t/data.pkl" + "t/data/<key>" and reads it.
WeightsFile readPickled(const fixtures::ScratchDir& dir, const std::string& pickle,
    const std::vector<std::pair<std::string, std::string>>& storages = {})
{
    return icl::readWeightsFile(writePickled(dir, pickle, storages));
}

// ---- .npy and safetensors built here ------------------------------------------------------------------------

std::string npyBytes(int major, const std::string& header, const std::string& data)
{
    const size_t preamble = major == 1 ? 10 : 12;
    std::string h = header;
    while ((preamble + h.size() + 1) % 64)
        h += ' ';
    h += '\n';
    return std::string("\x93NUMPY", 6) + char(major) + '\0' + le(h.size(), major == 1 ? 2 : 4) + h + data;
}

std::string safetensorsBytes(const std::string& header, const std::string& data)
{
    return le(header.size(), 8) + header + data;
}

} // namespace

// ---- detection ------------------------------------------------------------------------------------------------

TEST(WeightsFile, DetectsEveryFormatFromItsBytes)
{
    using F = WeightsFormat;
    const std::pair<const char*, F> cases[] = {
        { "bare.pt", F::TorchZip },
        { "garg_run/model_100.pt", F::TorchZip },
        { "garg_run/state.pt", F::TorchZip },
        { "fp16.pt", F::TorchZip },
        { "noncontiguous.pt", F::TorchZip },
        { "hostile.pt", F::TorchZip },
        { "torchscript.pt", F::TorchScript },
        { "legacy.pt", F::TorchLegacy },
        { "model.safetensors", F::Safetensors },
        { "model_fp16.safetensors", F::Safetensors },
        { "model.npz", F::Npz },
        { "model_compressed.npz", F::Npz },
        { "truncated.pt", F::Unknown },
        { "garg_run/config.yaml", F::Unknown },
        { "reference.json", F::Unknown },
    };
    for (const auto& [file, format] : cases)
        EXPECT_EQ(icl::detectWeightsFormat(kForeign + file), format) << file;

    // Not from the name: a safetensors file called .pt, a .npy called .bin, empty and short files.
    fixtures::ScratchDir dir("weights_detect");
    fs::copy_file(kForeign + "model.safetensors", dir.file("weights.pt"));
    EXPECT_EQ(icl::detectWeightsFormat(dir.file("weights.pt")), F::Safetensors);
    writeBytes(dir.file("a.bin"),
        npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", floatBytes({ 1.0f })));
    EXPECT_EQ(icl::detectWeightsFormat(dir.file("a.bin")), F::Npy);
    writeBytes(dir.file("empty.pt"), "");
    EXPECT_EQ(icl::detectWeightsFormat(dir.file("empty.pt")), F::Unknown);
    writeBytes(dir.file("short.pt"), "PK\x03");
    EXPECT_EQ(icl::detectWeightsFormat(dir.file("short.pt")), F::Unknown);
    // torch.save names the archive folder after the file's stem: "code.pt" holds "code/data.pkl".
    const std::string pickle = pStateDict({ { "w", pTensor("0", 1, 0, { 1 }, { 1 }) } });
    writeZip(dir.file("code.pt"), { { "code/data.pkl", pickle }, { "code/data/0", floatBytes({ 2.5f }) } });
    EXPECT_EQ(icl::detectWeightsFormat(dir.file("code.pt")), F::TorchZip);
    EXPECT_EQ(icl::readWeightsFile(dir.file("code.pt")).tensors.at(0).data, std::vector<float> { 2.5f });
    writeZip(dir.file("m.pt"), { { "m/data.pkl", pickle }, { "m/constants.pkl", kProto2 + ")." } });
    EXPECT_EQ(icl::detectWeightsFormat(dir.file("m.pt")), F::TorchScript);
    // A zip of other things.
    writeZip(dir.file("other.zip"), { { "readme.txt", "hello" } });
    EXPECT_EQ(icl::detectWeightsFormat(dir.file("other.zip")), F::Unknown);
    EXPECT_NE(
        errorOf([&] { icl::readWeightsFile(dir.file("other.zip")); }).find("neither a data.pkl"), std::string::npos);
    EXPECT_NE(
        errorOf([&] { icl::detectWeightsFormat(dir.file("missing.pt")); }).find("no such file"), std::string::npos);

    EXPECT_EQ(icl::weightsFormatName(F::TorchZip), "pytorch-zip");
    EXPECT_EQ(icl::weightsFormatName(F::Safetensors), "safetensors");
    EXPECT_EQ(icl::weightsFormatName(F::Npz), "npz");
    EXPECT_EQ(icl::weightsFormatName(F::Npy), "npy");
    EXPECT_EQ(icl::weightsFormatName(F::TorchScript), "torchscript");
    EXPECT_EQ(icl::weightsFormatName(F::TorchLegacy), "pytorch-legacy");
    EXPECT_EQ(icl::weightsFormatName(F::Unknown), "unknown");
}

// ---- PyTorch zip fixtures -------------------------------------------------------------------------------------

TEST(WeightsFile, BareStateDictMatchesTheRawSafetensorsBytes)
{
    const WeightsFile& file = bare();
    EXPECT_EQ(file.format, WeightsFormat::TorchZip);
    EXPECT_EQ(file.container_key, "");
    EXPECT_FALSE(file.train_step.has_value());
    EXPECT_TRUE(file.metadata.empty());
    ASSERT_EQ(file.tensors.size(), 36u); // README: Garg's 36 state-dict keys
    EXPECT_EQ(file.tensors.front().name, "_read_in.weight");
    EXPECT_EQ(file.tensors.back().name, "_read_out.bias");

    // model.safetensors holds the same step-300 tensors; decode its bytes here (F32: IEEE bits; U8: bytes).
    const auto raw = rawSafetensors(kForeign + "model.safetensors");
    ASSERT_EQ(raw.size(), file.tensors.size());
    for (const NamedArray& t : file.tensors) {
        const auto it = raw.find(t.name);
        ASSERT_NE(it, raw.end()) << t.name;
        const RawTensor& r = it->second;
        EXPECT_EQ(t.shape, r.shape) << t.name;
        std::vector<float> want;
        if (r.dtype == "F32") {
            want.resize(r.bytes.size() / 4);
            std::memcpy(want.data(), r.bytes.data(), r.bytes.size());
            EXPECT_EQ(file.source_dtypes.at(t.name), "float32");
        } else {
            ASSERT_EQ(r.dtype, "U8") << t.name;
            for (char c : r.bytes)
                want.push_back(float(uint8_t(c)));
            EXPECT_EQ(file.source_dtypes.at(t.name), "uint8");
        }
        EXPECT_TRUE(sameBits(t.data, want)) << t.name;
    }

    // Closed forms: the causal mask is lower-triangular ones, masked_bias is -1e4 (GPT-2's constants).
    const auto m = byName(file);
    const NamedArray& mask = *m.at("_backbone.h.1.attn.bias");
    EXPECT_EQ(mask.shape, (std::vector<int64_t> { 1, 1, 22, 22 }));
    for (int i = 0; i < 22; ++i)
        for (int j = 0; j < 22; ++j)
            EXPECT_EQ(mask.data[size_t(i * 22 + j)], j <= i ? 1.0f : 0.0f);
    EXPECT_TRUE(m.at("_backbone.h.0.attn.masked_bias")->shape.empty());
    EXPECT_EQ(m.at("_backbone.h.0.attn.masked_bias")->data, std::vector<float> { -1e4f });
    EXPECT_EQ(m.at("_backbone.h.0.attn.c_attn.weight")->shape, (std::vector<int64_t> { 32, 96 }));
    EXPECT_EQ(m.at("_backbone.wte.weight")->shape, (std::vector<int64_t> { 4, 32 }));
}

TEST(WeightsFile, EveryLayoutReadsTheBareValues)
{
    for (const char* file : { "garg_run/state.pt", "model_key.pt", "state_dict_key.pt", "noncontiguous.pt",
             "cuda_location.pt", "fp64.pt" }) {
        SCOPED_TRACE(file);
        expectBareTensors(icl::readWeightsFile(kForeign + file));
    }
    expectBareTensors(icl::readWeightsFile(kForeign + "prefixed_module.pt"), "module.");
    expectBareTensors(icl::readWeightsFile(kForeign + "prefixed_compile.pt"), "_orig_mod.module.");
    for (const char* file : { "model.npz", "model_compressed.npz", "model.safetensors" }) {
        SCOPED_TRACE(file);
        const WeightsFile f = icl::readWeightsFile(kForeign + file);
        expectBareTensors(f, "", /*ordered=*/std::string(file) != "model.safetensors");
        EXPECT_EQ(f.source_dtypes.at("_read_in.weight"), "float32");
        EXPECT_EQ(f.source_dtypes.at("_backbone.h.0.attn.bias"), "uint8");
    }
    EXPECT_EQ(icl::readWeightsFile(kForeign + "model.safetensors").metadata,
        (std::map<std::string, std::string> { { "format", "pt" } }));

    const WeightsFile fp64 = icl::readWeightsFile(kForeign + "fp64.pt");
    EXPECT_EQ(fp64.source_dtypes.at("_read_in.weight"), "float64");
    EXPECT_EQ(fp64.source_dtypes.at("_backbone.h.0.attn.bias"), "uint8");
    EXPECT_EQ(icl::readWeightsFile(kForeign + "model_key.pt").container_key, "model");
    EXPECT_EQ(icl::readWeightsFile(kForeign + "state_dict_key.pt").container_key, "state_dict");
    EXPECT_EQ(icl::readWeightsFile(kForeign + "noncontiguous.pt").container_key, "");
}

TEST(WeightsFile, HalfPrecisionFilesHoldTheRoundedValues)
{
    const WeightsFile fp16 = icl::readWeightsFile(kForeign + "fp16.pt");
    const WeightsFile bf16 = icl::readWeightsFile(kForeign + "bf16.pt");
    const auto raw16 = rawSafetensors(kForeign + "model_fp16.safetensors");
    const auto h = byName(fp16), b = byName(bf16);
    ASSERT_EQ(fp16.tensors.size(), bare().tensors.size());
    ASSERT_EQ(bf16.tensors.size(), bare().tensors.size());
    size_t checked = 0;
    for (const NamedArray& t : bare().tensors) {
        SCOPED_TRACE(t.name);
        const bool is_mask = bare().source_dtypes.at(t.name) == "uint8";
        EXPECT_EQ(fp16.source_dtypes.at(t.name), is_mask ? "uint8" : "float16");
        EXPECT_EQ(bf16.source_dtypes.at(t.name), is_mask ? "uint8" : "bfloat16");
        ASSERT_EQ(h.at(t.name)->data.size(), t.data.size());
        ASSERT_EQ(b.at(t.name)->data.size(), t.data.size());
        const RawTensor& r = raw16.at(t.name);
        for (size_t k = 0; k < t.data.size(); ++k) {
            const float want16 = is_mask ? t.data[k] : roundToFormat(t.data[k], 10, -14);
            const float wantbf = is_mask ? t.data[k] : roundToFormat(t.data[k], 7, -126);
            ASSERT_EQ(h.at(t.name)->data[k], want16) << k;
            ASSERT_EQ(b.at(t.name)->data[k], wantbf) << k;
            if (!is_mask) {
                const uint16_t bits = uint16_t(uint8_t(r.bytes[2 * k]) | uint8_t(r.bytes[2 * k + 1]) << 8);
                ASSERT_EQ(double(h.at(t.name)->data[k]), halfValue(bits)) << k;
            }
            ++checked;
        }
    }
    EXPECT_GT(checked, 10000u);
    // The F16 safetensors file reads the same as fp16.pt.
    const WeightsFile st16 = icl::readWeightsFile(kForeign + "model_fp16.safetensors");
    for (const NamedArray& t : st16.tensors)
        EXPECT_TRUE(sameBits(t.data, h.at(t.name)->data)) << t.name;
}

TEST(WeightsFile, GargStateHasTrainStepAndContainerKey)
{
    const WeightsFile state = icl::readWeightsFile(kForeign + "garg_run/state.pt");
    EXPECT_EQ(state.container_key, "model_state_dict");
    ASSERT_TRUE(state.train_step.has_value());
    EXPECT_EQ(*state.train_step, 300);
    EXPECT_TRUE(state.metadata.empty());
    EXPECT_EQ(names(state), names(bare())); // the optimizer state is not taken for weights

    const WeightsFile m100 = icl::readWeightsFile(kForeign + "garg_run/model_100.pt");
    const WeightsFile m200 = icl::readWeightsFile(kForeign + "garg_run/model_200.pt");
    EXPECT_EQ(names(m100), names(bare()));
    EXPECT_FALSE(m100.train_step.has_value());
    EXPECT_FALSE(sameBits(m100.tensors[0].data, m200.tensors[0].data));
    EXPECT_FALSE(sameBits(m200.tensors[0].data, bare().tensors[0].data));
}

TEST(WeightsFile, OneKeyIsAOneTensorStateDict)
{
    const WeightsFile file = icl::readWeightsFile(kForeign + "one_key.pt");
    ASSERT_EQ(file.tensors.size(), 1u);
    EXPECT_EQ(file.tensors[0].name, "weight");
    EXPECT_EQ(file.tensors[0].shape, (std::vector<int64_t> { 3, 4 }));
    EXPECT_EQ(file.tensors[0].data.size(), 12u);
    EXPECT_EQ(file.container_key, "");
}

TEST(WeightsFile, RefusesTorchScriptLegacyTruncatedAndOtherFiles)
{
    const std::string ts = kForeign + "torchscript.pt";
    const std::string e1 = errorOf([&] { icl::readWeightsFile(ts); });
    EXPECT_NE(e1.find("TorchScript"), std::string::npos) << e1;
    EXPECT_NE(e1.find("python3 -c \"import torch; torch.save(torch.jit.load('" + ts + "').state_dict(), '" + ts
                  + ".state_dict.pt')\""),
        std::string::npos)
        << e1;

    const std::string legacy = kForeign + "legacy.pt";
    const std::string e2 = errorOf([&] { icl::readWeightsFile(legacy); });
    EXPECT_NE(e2.find("legacy PyTorch"), std::string::npos) << e2;
    EXPECT_NE(e2.find("python3 -c \"import torch; torch.save(torch.load('" + legacy + "'), '" + legacy + ".zip.pt')\""),
        std::string::npos)
        << e2;

    const std::string e3 = errorOf([&] { icl::readWeightsFile(kForeign + "truncated.pt"); });
    EXPECT_EQ(e3.rfind(kForeign + "truncated.pt: ", 0), 0u) << e3;
    EXPECT_NE(e3.find("truncated"), std::string::npos) << e3;

    EXPECT_NE(errorOf([&] { icl::readWeightsFile(kForeign + "garg_run/config.yaml"); }).find("not a weights file"),
        std::string::npos);
    EXPECT_NE(errorOf([&] { icl::readWeightsFile(kForeign + "garg_run"); }).find("is a directory"), std::string::npos);

    fixtures::ScratchDir dir("weights_refuse");
    writeBytes(dir.file("empty.pt"), "");
    EXPECT_NE(errorOf([&] { icl::readWeightsFile(dir.file("empty.pt")); }).find("empty"), std::string::npos);
    writeBytes(dir.file("short.pt"), "abc");
    EXPECT_NE(errorOf([&] { icl::readWeightsFile(dir.file("short.pt")); }).find("too short"), std::string::npos);

    // A path with quotes and a dollar sign stays one Python string literal inside the shell's double quotes.
    const std::string odd = dir.file("it's $HOME.pt");
    fs::copy_file(legacy, odd);
    EXPECT_NE(errorOf([&] { icl::readWeightsFile(odd); }).find("torch.load('" + dir.file("it\\'s \\$HOME.pt") + "')"),
        std::string::npos);
}

TEST(WeightsFile, HostileFixtureIsRefusedAndNothingRuns)
{
    std::remove(kHostileMarker);
    const std::string e = errorOf([] { icl::readWeightsFile(kForeign + "hostile.pt"); });
    EXPECT_NE(e.find("refused"), std::string::npos) << e;
    EXPECT_NE(e.find("posix.system"), std::string::npos) << e;
    EXPECT_NE(e.find("nothing was run"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists(kHostileMarker));
}

// ---- pickles built in the test ----------------------------------------------------------------------------

TEST(WeightsFile, HandBuiltPickleWithSharedStorageOffsetsAndStrides)
{
    fixtures::ScratchDir dir("weights_pickle");
    // One storage of 12 floats s[i] = i + 0.5; a [3, 2] transposed view (offset 1, stride (1, 3)), a [2] view at
    // offset 10, a 0-d view at offset 7, a [2, 3] expanded view (stride (0, 1)); plus an int64 storage.
    std::vector<float> s(12);
    for (size_t i = 0; i < s.size(); ++i)
        s[i] = float(i) + 0.5f;
    std::string longs;
    for (int64_t v : { int64_t(-3), int64_t(1) << 40, int64_t(7) })
        longs += le(uint64_t(v), 8);
    const std::string pickle
        = pStateDict({ { "t", pTensor("0", 12, 1, { 3, 2 }, { 1, 3 }) }, { "tail", pTensor("0", 12, 10, { 2 }, { 1 }) },
            { "scalar", pTensor("0", 12, 7, {}, {}) }, { "expanded", pTensor("0", 12, 4, { 2, 3 }, { 0, 1 }) },
            { "longs", pTensor("k", 3, 0, { 3 }, { 1 }, "LongStorage") }, { "note", pStr("not a tensor") } });
    const WeightsFile f = readPickled(dir, pickle, { { "0", floatBytes(s) }, { "k", longs } });
    ASSERT_EQ(names(f), (std::vector<std::string> { "t", "tail", "scalar", "expanded", "longs" }));
    EXPECT_EQ(f.tensors[0].shape, (std::vector<int64_t> { 3, 2 }));
    // t[i][j] = s[1 + i + 3 j]
    EXPECT_EQ(f.tensors[0].data, (std::vector<float> { 1.5f, 4.5f, 2.5f, 5.5f, 3.5f, 6.5f }));
    EXPECT_EQ(f.tensors[1].data, (std::vector<float> { 10.5f, 11.5f }));
    EXPECT_TRUE(f.tensors[2].shape.empty());
    EXPECT_EQ(f.tensors[2].data, (std::vector<float> { 7.5f }));
    EXPECT_EQ(f.tensors[3].data, (std::vector<float> { 4.5f, 5.5f, 6.5f, 4.5f, 5.5f, 6.5f }));
    EXPECT_EQ(f.tensors[4].data, (std::vector<float> { -3.0f, 1099511627776.0f, 7.0f }));
    EXPECT_EQ(f.source_dtypes.at("longs"), "int64");
    EXPECT_EQ(f.source_dtypes.at("t"), "float32");
}

TEST(WeightsFile, PickledTensorsMustStayInsideTheirStorage)
{
    fixtures::ScratchDir dir("weights_bounds");
    const std::string four = floatBytes({ 1, 2, 3, 4 });
    const auto err = [&](const std::string& value, const std::string& bytes = "") {
        return errorOf([&] {
            readPickled(dir, pStateDict({ { "w", value } }), { { "0", bytes.empty() ? four : bytes } });
        });
    };
    EXPECT_NE(err(pTensor("0", 4, 2, { 3 }, { 1 })).find("outside its storage"), std::string::npos);
    EXPECT_NE(err(pTensor("0", 4, 0, { 2, 2 }, { 3, 1 })).find("outside its storage"), std::string::npos);
    EXPECT_NE(err(pTensor("0", 4, -1, { 1 }, { 1 })).find("outside its storage"), std::string::npos);
    EXPECT_NE(err(pTensor("0", 4, 0, { -2 }, { 1 })).find("invalid shape"), std::string::npos) << "negative size";
    EXPECT_NE(err(pTensor("0", 4, 0, { 2 }, { 1, 1 })).find("sizes but"), std::string::npos);
    EXPECT_NE(err(pTensor("0", 4, 0, { int64_t(1) << 30, int64_t(1) << 30 }, { 0, 0 })).find("elements but"),
        std::string::npos);
    EXPECT_NE(err(pTensor("0", 8, 0, { 8 }, { 1 })).find("fewer than"), std::string::npos) << "storage shorter";
    EXPECT_NE(err(pTensor("missing", 4, 0, { 4 }, { 1 })).find("lacks"), std::string::npos);
    EXPECT_NE(err(pTensor("0", 4, 0, { 4 }, { 1 }, "ComplexFloatStorage")).find("storage type"), std::string::npos);
}

TEST(WeightsFile, HostilePicklesAreRefusedNamingTheGlobal)
{
    fixtures::ScratchDir dir("weights_hostile");
    const std::string marker = dir.file("ran");
    const std::string good = pTensor("0", 4, 0, { 4 }, { 1 });
    const auto refused = [&](const std::string& payload) {
        return errorOf([&] {
            readPickled(
                dir, pStateDict({ { "w", good }, { "payload", payload } }), { { "0", floatBytes({ 1, 2, 3, 4 }) } });
        });
    };
    const std::string code = "open('" + marker + "', 'w').close()";
    const std::pair<std::string, std::string> cases[] = {
        { pGlobal("builtins", "exec") + pStr(code) + "\x85R", "builtins.exec" },
        { pGlobal("builtins", "eval") + pStr(code) + "\x85R", "builtins.eval" },
        { pGlobal("posix", "system") + pStr("touch " + marker) + "\x85R", "posix.system" },
        { pGlobal("os", "system") + pStr("touch " + marker) + "\x85R", "os.system" },
        { pGlobal("builtins", "getattr") + pGlobal("collections", "OrderedDict") + pStr("fromkeys") + "\x86R",
            "builtins.getattr" },
        { pGlobal("subprocess", "Popen") + pStr("sh") + "\x85R", "subprocess.Popen" },
        // protocol 4's STACK_GLOBAL takes module and name from the stack
        { "\x8c\x05posix\x8c\x06system\x93" + pStr("touch " + marker) + "\x85R", "posix.system" },
        // a global only mentioned, never called, still refuses the file
        { pGlobal("__main__", "Evil"), "__main__.Evil" },
    };
    for (const auto& [payload, global] : cases) {
        const std::string e = refused(payload);
        EXPECT_NE(e.find("refused"), std::string::npos) << global << ": " << e;
        EXPECT_NE(e.find(global), std::string::npos) << global << ": " << e;
    }
    // Calling an allow-listed non-function (a storage type) is refused too.
    EXPECT_NE(refused(pGlobal("torch", "FloatStorage") + ")R").find("calls torch.FloatStorage"), std::string::npos);
    // Protocol 0/1 opcodes that call: INST, OBJ.
    EXPECT_NE(refused("(ios\nsystem\n").find("unsupported opcode 0x69 (INST)"), std::string::npos);
    EXPECT_NE(refused("(o").find("unsupported opcode 0x6f (OBJ)"), std::string::npos);
    EXPECT_FALSE(fs::exists(marker));
}

TEST(WeightsFile, DamagedPicklesAreErrorsNotCrashes)
{
    fixtures::ScratchDir dir("weights_damaged");
    const auto err = [&](const std::string& pickle) { return errorOf([&] { readPickled(dir, pickle); }); };
    // Lengths that lie: a 4 GB string, an 8-byte length, a LONG4 of 2 GB, a frame past the end.
    EXPECT_NE(err(kProto2
                  + "X\xf0\xff\xff\xff"
                    "abc.")
                  .find("exceeds"),
        std::string::npos);
    EXPECT_NE(err(kProto2 + "\x8d" + le(uint64_t(1) << 62, 8) + "ab.").find("exceeds"), std::string::npos);
    EXPECT_NE(err(kProto2 + "\x8b" + le(1u << 31, 4) + ".").find("exceeds"), std::string::npos);
    EXPECT_NE(err(kProto2 + "\x95" + le(1000, 8) + "N.").find("frame"), std::string::npos);
    EXPECT_NE(err(kProto2 + "}q\x01").find("before its STOP"), std::string::npos);
    EXPECT_NE(err(kProto2 + "h\x07.").find("memo"), std::string::npos);
    EXPECT_NE(err(kProto2 + "s.").find("empty stack"), std::string::npos);
    EXPECT_NE(err(kProto2 + "}Ns.").find("empty stack"), std::string::npos) << "SETITEM needs 3 values";
    EXPECT_NE(err(kProto2 + std::string(70000, '(') + ".").find("nested marks"), std::string::npos);
    EXPECT_NE(err(kProto2 + std::string((1u << 20) + 1, 'N') + ".").find("stack grows"), std::string::npos);
    EXPECT_NE(err(kProto2 + "\x80\x09.").find("protocol 9"), std::string::npos);
    EXPECT_NE(err("").find("before its STOP"), std::string::npos);
    // Well-formed pickles that are not state dicts.
    EXPECT_NE(err(kProto2 + "](" + pInt(1) + pInt(2) + "e.").find("holds a list, not a state dict"), std::string::npos);
    const std::string keys = err(kProto2 + "}(" + pStr("a") + pInt(1) + pStr("b") + pStr("x") + pStr("c") + "Nu.");
    EXPECT_NE(keys.find("holds a dict with keys a, b, c but no state dict"), std::string::npos) << keys;
    EXPECT_NE(err(kProto2 + "}.").find("empty dict"), std::string::npos);
    EXPECT_NE(err(kProto2 + pTensor("0", 1, 0, {}, {}) + ".").find("single tensor"), std::string::npos);
}

TEST(WeightsFile, OuterDictGivesContainerTrainStepAndMetadata)
{
    fixtures::ScratchDir dir("weights_outer");
    const std::string inner = kEmptyOrderedDict + "(" + pStr("w") + pTensor("0", 2, 0, { 2 }, { 1 }) + "u";
    const std::string pickle = kProto2 + "}(" + pStr("optimizer_state_dict") + "}" + pStr("train_step") + pInt(1234)
        + pStr("state_dict") + inner + pStr("config") + pStr("{\"a\": 1}") + pStr("epoch") + pInt(3) + "u.";
    const WeightsFile f = readPickled(dir, pickle, { { "0", floatBytes({ -1.5f, 2.25f }) } });
    EXPECT_EQ(f.container_key, "state_dict");
    ASSERT_TRUE(f.train_step.has_value());
    EXPECT_EQ(*f.train_step, 1234);
    EXPECT_EQ(f.metadata, (std::map<std::string, std::string> { { "config", "{\"a\": 1}" } }));
    ASSERT_EQ(f.tensors.size(), 1u);
    EXPECT_EQ(f.tensors[0].data, (std::vector<float> { -1.5f, 2.25f }));
}

// ---- safetensors and NumPy built in the test ---------------------------------------------------------------

TEST(WeightsFile, SafetensorsDtypesAndMetadata)
{
    fixtures::ScratchDir dir("weights_st");
    std::string data = floatBytes({ 1.5f, -2.0f }); // F32 [2]       0..8
    data += le(0x3C00, 2) + le(0xC000, 2) + le(0x0001, 2); // F16 [3]       8..14
    data += le(0x3FC0, 2); // BF16 [1]      14..16
    data += le(0x3FF8000000000000ull, 8); // F64 1.5       16..24
    data += le(uint64_t(-5), 8); // I64 [1]       24..32
    data += std::string("\x00\x01\x02", 3); // BOOL [3]      32..35
    data += std::string("\xff\x80", 2); // I8 [2]        35..37
    const std::string header
        = R"({"__metadata__":{"format":"pt","note":"x"},"f":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
          R"("h":{"dtype":"F16","shape":[3],"data_offsets":[8,14]},"b":{"dtype":"BF16","shape":[],"data_offsets":[14,16]},)"
          R"("d":{"dtype":"F64","shape":[1,1],"data_offsets":[16,24]},"i":{"dtype":"I64","shape":[1],"data_offsets":[24,32]},)"
          R"("o":{"dtype":"BOOL","shape":[3],"data_offsets":[32,35]},"c":{"dtype":"I8","shape":[2],"data_offsets":[35,37]},)"
          R"("z":{"dtype":"F32","shape":[0,4],"data_offsets":[37,37]}})";
    writeBytes(dir.file("a.safetensors"), safetensorsBytes(header, data));
    const WeightsFile f = icl::readWeightsFile(dir.file("a.safetensors"));
    EXPECT_EQ(f.format, WeightsFormat::Safetensors);
    EXPECT_EQ(names(f), (std::vector<std::string> { "f", "h", "b", "d", "i", "o", "c", "z" }));
    const auto m = byName(f);
    EXPECT_EQ(m.at("f")->data, (std::vector<float> { 1.5f, -2.0f }));
    EXPECT_EQ(m.at("h")->data, (std::vector<float> { 1.0f, -2.0f, float(std::ldexp(1.0, -24)) }));
    EXPECT_EQ(m.at("b")->data, (std::vector<float> { 1.5f }));
    EXPECT_TRUE(m.at("b")->shape.empty());
    EXPECT_EQ(m.at("d")->data, (std::vector<float> { 1.5f }));
    EXPECT_EQ(m.at("i")->data, (std::vector<float> { -5.0f }));
    EXPECT_EQ(m.at("o")->data, (std::vector<float> { 0.0f, 1.0f, 1.0f }));
    EXPECT_EQ(m.at("c")->data, (std::vector<float> { -1.0f, -128.0f }));
    EXPECT_EQ(m.at("z")->shape, (std::vector<int64_t> { 0, 4 }));
    EXPECT_TRUE(m.at("z")->data.empty());
    EXPECT_EQ(f.source_dtypes.at("h"), "float16");
    EXPECT_EQ(f.source_dtypes.at("b"), "bfloat16");
    EXPECT_EQ(f.source_dtypes.at("o"), "bool");
    EXPECT_EQ(f.source_dtypes.at("c"), "int8");
    EXPECT_EQ(f.metadata, (std::map<std::string, std::string> { { "format", "pt" }, { "note", "x" } }));
}

TEST(WeightsFile, LyingSafetensorsHeadersAreRefused)
{
    fixtures::ScratchDir dir("weights_st_lies");
    const std::string path = dir.file("x.safetensors");
    const auto err = [&](const std::string& bytes) {
        writeBytes(path, bytes);
        return errorOf([&] { icl::readWeightsFile(path); });
    };
    const auto entry = [](const std::string& body) { return "{\"w\":" + body + "}"; };
    const std::string eight = floatBytes({ 1, 2 });

    // The header length itself.
    EXPECT_NE(err(le(200'000'000, 8) + "{\"w\":1}").find("limit of 100000000"), std::string::npos);
    EXPECT_NE(err(le(5000, 8) + "{\"w\":1}").find("runs past the end"), std::string::npos);
    EXPECT_NE(err(le(~uint64_t(0), 8) + "{}").find("header length"), std::string::npos);
    // The JSON.
    EXPECT_NE(err(safetensorsBytes("{not json", eight)).find("not valid JSON"), std::string::npos);
    // One tensor "w" over eight bytes of data: the JSON of its entry, then its offsets and sizes.
    const std::vector<std::pair<std::string, std::string>> lyingEntries = {
        {"5", "is not an object"},
        {R"({"shape":[2],"data_offsets":[0,8]})", "no dtype"},
        {R"({"dtype":"F32","data_offsets":[0,8]})", "no shape"},
        {R"({"dtype":"F32","shape":[2]})", "no data_offsets"},
        {R"({"dtype":"C64","shape":[1],"data_offsets":[0,8]})", "dtype C64"},
        {R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})", "past the end of the data"},
        {R"({"dtype":"F32","shape":[1],"data_offsets":[8,4]})", "begin > end"},
        {R"({"dtype":"F32","shape":[1],"data_offsets":[0,8]})", "spanning 8 bytes"},
        {R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})", "overflows"},
        {R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", "non-negative"},
        {R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})", "non-negative"},
    };
    for (const auto& [body, fragment] : lyingEntries)
        EXPECT_NE(err(safetensorsBytes(entry(body), eight)).find(fragment), std::string::npos) << body;
    EXPECT_NE(
        err(safetensorsBytes(
                R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                eight))
            .find("overlap"),
        std::string::npos);
    EXPECT_NE(err(safetensorsBytes(R"({"__metadata__":{"k":3}})", "")).find("not a string"), std::string::npos);
    // Every message names the file.
    EXPECT_EQ(err(safetensorsBytes("{not json", eight)).rfind(path + ": ", 0), 0u);
}

TEST(WeightsFile, NpyVersionsDtypesAndFortranOrder)
{
    fixtures::ScratchDir dir("weights_npy");
    const std::vector<float> rowMajor = { 0, 1, 2, 3, 4, 5 }; // [2, 3]
    const std::vector<float> colMajor = { 0, 3, 1, 4, 2, 5 }; // the same [2, 3] stored column by column
    const auto read = [&](const std::string& name, const std::string& bytes) {
        writeBytes(dir.file(name), bytes);
        return icl::readWeightsFile(dir.file(name));
    };
    for (int major : { 1, 2, 3 }) {
        const WeightsFile f = read("v" + std::to_string(major) + ".npy",
            npyBytes(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floatBytes(rowMajor)));
        EXPECT_EQ(f.format, WeightsFormat::Npy);
        ASSERT_EQ(f.tensors.size(), 1u);
        EXPECT_EQ(f.tensors[0].name, "v" + std::to_string(major));
        EXPECT_EQ(f.tensors[0].shape, (std::vector<int64_t> { 2, 3 }));
        EXPECT_EQ(f.tensors[0].data, rowMajor);
    }
    EXPECT_EQ(
        read("f.npy", npyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", floatBytes(colMajor)))
            .tensors[0]
            .data,
        rowMajor);
    EXPECT_EQ(
        read("be.npy",
            npyBytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", floatBytes(rowMajor, true)))
            .tensors[0]
            .data,
        rowMajor);
    std::string i8;
    for (int64_t v : { -1, 2, 3 })
        i8 += le(uint64_t(v), 8);
    const WeightsFile ints
        = read("i.npy", npyBytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", i8));
    EXPECT_EQ(ints.tensors[0].data, (std::vector<float> { -1, 2, 3 }));
    EXPECT_EQ(ints.source_dtypes.at("i"), "int64");
    const WeightsFile b = read(
        "b.npy", npyBytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x00", 2)));
    EXPECT_EQ(b.tensors[0].data, (std::vector<float> { 1, 0 }));
    const WeightsFile h
        = read("h.npy", npyBytes(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }", le(0xBC00, 2)));
    EXPECT_TRUE(h.tensors[0].shape.empty());
    EXPECT_EQ(h.tensors[0].data, (std::vector<float> { -1.0f }));
    const WeightsFile d = read("d.npy",
        npyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", le(0xC004000000000000ull, 8)));
    EXPECT_EQ(d.tensors[0].data, (std::vector<float> { -2.5f }));

    const auto err = [&](const std::string& header, const std::string& data) {
        return errorOf([&] { read("bad.npy", npyBytes(1, header, data)); });
    };
    EXPECT_NE(err("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')).find("<c8"),
        std::string::npos);
    EXPECT_NE(err("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'))
                  .find("structured"),
        std::string::npos);
    EXPECT_NE(
        err("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", floatBytes(rowMajor)).find("truncated"),
        std::string::npos);
    EXPECT_NE(
        err("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", "").find("overflows"),
        std::string::npos);
    EXPECT_NE(err("{'descr': '<f4', 'shape': (1,), }", floatBytes({ 1 })).find("lacks"), std::string::npos);
    EXPECT_NE(err("not a dict", "").find(".npy header"), std::string::npos);
}

// ---- writers --------------------------------------------------------------------------------------------------

namespace {

std::vector<NamedArray> writerTensors()
{
    std::vector<NamedArray> t = bare().tensors;
    uint32_t nan_bits = 0x7FC01234u;
    float nan;
    std::memcpy(&nan, &nan_bits, 4);
    t.push_back({ "special", { 6 },
        { std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), nan, -0.0f,
            std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max() } });
    t.push_back({ "scalar", {}, { 3.25f } });
    t.push_back({ "empty", { 0, 3 }, {} });
    t.push_back({ "h\xc3\xa9llo/w\xc3\xb6rld.weight", { 1, 2 }, { 1.0f, 2.0f } }); // UTF-8 and a slash
    return t;
}

void expectSameFile(const WeightsFile& got, const std::vector<NamedArray>& want)
{
    ASSERT_EQ(got.tensors.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got.tensors[i].name, want[i].name);
        EXPECT_EQ(got.tensors[i].shape, want[i].shape) << want[i].name;
        EXPECT_TRUE(sameBits(got.tensors[i].data, want[i].data)) << want[i].name;
        EXPECT_EQ(got.source_dtypes.at(want[i].name), "float32");
    }
}

} // namespace

TEST(WeightsFile, SafetensorsRoundTripIsBitwise)
{
    fixtures::ScratchDir dir("weights_st_write");
    const std::vector<NamedArray> tensors = writerTensors();
    const std::map<std::string, std::string> metadata { { "format", "pt" },
        { "icl_workbench_config", "{\"x\": [1, 2]}" } };
    icl::writeSafetensors(dir.file("w.safetensors"), tensors, metadata);
    const WeightsFile got = icl::readWeightsFile(dir.file("w.safetensors"));
    EXPECT_EQ(got.format, WeightsFormat::Safetensors);
    expectSameFile(got, tensors);
    EXPECT_EQ(got.metadata, metadata);

    // The layout, read here: 8-byte length, a header padded with spaces to a multiple of 8, F32 data in order.
    const std::string bytes = readBytes(dir.file("w.safetensors"));
    uint64_t n = 0;
    for (int k = 7; k >= 0; --k)
        n = (n << 8) | uint8_t(bytes[size_t(k)]);
    EXPECT_EQ(n % 8, 0u);
    const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
    EXPECT_EQ(header["__metadata__"]["format"], "pt");
    EXPECT_EQ(header["_read_in.weight"]["dtype"], "F32");
    EXPECT_EQ(header["_read_in.weight"]["data_offsets"], nlohmann::json::array({ 0, 32 * 5 * 4 }));
    EXPECT_EQ(bytes.substr(8 + n, 32 * 5 * 4), floatBytes(bare().tensors[0].data));

    icl::writeSafetensors(dir.file("plain.safetensors"), tensors);
    EXPECT_TRUE(icl::readWeightsFile(dir.file("plain.safetensors")).metadata.empty());
    EXPECT_EQ(readBytes(dir.file("plain.safetensors")).find("__metadata__"), std::string::npos);
}

TEST(WeightsFile, TorchZipRoundTripIsBitwise)
{
    fixtures::ScratchDir dir("weights_pt_write");
    const std::vector<NamedArray> tensors = writerTensors();
    icl::writeTorchZip(dir.file("w.pt"), tensors);
    const WeightsFile plain = icl::readWeightsFile(dir.file("w.pt"));
    EXPECT_EQ(plain.format, WeightsFormat::TorchZip);
    EXPECT_EQ(plain.container_key, "");
    EXPECT_TRUE(plain.metadata.empty());
    expectSameFile(plain, tensors);

    const std::map<std::string, std::string> metadata { { "icl_workbench_config", "{\"model\": {}}" },
        { "note", "\xc3\xa9" } };
    icl::writeTorchZip(dir.file("m.pt"), tensors, metadata);
    const WeightsFile with = icl::readWeightsFile(dir.file("m.pt"));
    EXPECT_EQ(with.container_key, "state_dict");
    EXPECT_EQ(with.metadata, metadata);
    expectSameFile(with, tensors);

    // The archive as torch.save lays it out, read here with libzip: stored entries, one raw storage per tensor.
    int code = 0;
    zip_t* z = zip_open(dir.file("w.pt").c_str(), ZIP_RDONLY, &code);
    ASSERT_NE(z, nullptr);
    std::set<std::string> entries;
    const auto entry = [&](const std::string& name) {
        zip_stat_t st;
        EXPECT_EQ(zip_stat(z, name.c_str(), 0, &st), 0) << name;
        EXPECT_EQ(st.comp_method, ZIP_CM_STORE) << name;
        std::string bytes(st.size, '\0');
        zip_file_t* f = zip_fopen(z, name.c_str(), 0);
        EXPECT_EQ(zip_fread(f, bytes.data(), st.size), zip_int64_t(st.size));
        zip_fclose(f);
        return bytes;
    };
    for (zip_int64_t i = 0; i < zip_get_num_entries(z, 0); ++i)
        entries.insert(zip_get_name(z, zip_uint64_t(i), 0));
    std::set<std::string> want { "archive/data.pkl", "archive/version", "archive/byteorder" };
    for (size_t i = 0; i < tensors.size(); ++i)
        want.insert("archive/data/" + std::to_string(i));
    EXPECT_EQ(entries, want);
    EXPECT_EQ(entry("archive/version"), "3\n");
    EXPECT_EQ(entry("archive/byteorder"), "little");
    for (size_t i = 0; i < tensors.size(); ++i)
        EXPECT_EQ(entry("archive/data/" + std::to_string(i)), floatBytes(tensors[i].data)) << i;
    const std::string pkl = entry("archive/data.pkl");
    EXPECT_EQ(pkl.substr(0, 2), kProto2);
    EXPECT_EQ(pkl.back(), '.');
    EXPECT_EQ(pkl.find(kEmptyOrderedDict.substr(0, kEmptyOrderedDict.size() - 2)), 2u);
    EXPECT_NE(pkl.find(pGlobal("torch._utils", "_rebuild_tensor_v2")), std::string::npos);
    EXPECT_NE(pkl.find(pGlobal("torch", "FloatStorage")), std::string::npos);
    zip_close(z);
}

TEST(WeightsFile, WritersRefuseBadInputAndLeaveNoHalfFile)
{
    fixtures::ScratchDir dir("weights_write_fail");
    const std::string path = dir.file("w.pt");
    icl::writeTorchZip(path, { { "a", { 2 }, { 1, 2 } } });
    const std::string before = readBytes(path);
    const std::vector<std::vector<NamedArray>> bad = {
        { { "a", { 3 }, { 1, 2 } } }, // shape does not match the values
        { { "a", { 1 }, { 1 } }, { "a", { 1 }, { 2 } } }, // two tensors of one name
        { { "ok", { 1 }, { 1 } }, { "\xff\xfe", { 1 }, { 2 } } }, // not UTF-8
    };
    for (const auto& tensors : bad) {
        EXPECT_NE(errorOf([&] { icl::writeTorchZip(path, tensors); }), "");
        EXPECT_NE(errorOf([&] { icl::writeSafetensors(path, tensors); }), "");
        EXPECT_EQ(readBytes(path), before);
    }
    EXPECT_NE(errorOf([&] { icl::writeTorchZip(path, { { "a", { 1 }, { 1 } } }, { { "state_dict", "x" } }); }), "");
    EXPECT_EQ(readBytes(path), before);
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(dir.path)) {
        (void)e;
        ++files;
    }
    EXPECT_EQ(files, 1u) << "no temporary file is left behind";

    const std::string nowhere = dir.file("no/such/folder/w.pt");
    EXPECT_NE(errorOf([&] {
        icl::writeTorchZip(nowhere, { { "a", { 1 }, { 1 } } });
    }).find(nowhere),
        std::string::npos);
    EXPECT_NE(errorOf([&] {
        icl::writeSafetensors(nowhere, { { "a", { 1 }, { 1 } } });
    }).find(nowhere),
        std::string::npos);
    EXPECT_FALSE(fs::exists(nowhere));
}

// ---- the memory budget and hostile sizes (issue 46) -------------------------------------------------------
// Each hostile file is small; what it would make the reader allocate is computed here from its shapes. The
// budgets are small and explicit, so a reader that allocated first and checked later would be caught by
// budget.used() (and by the machine's memory) instead of by the message.

namespace {

bool oneLine(const std::string& message)
{
    return !message.empty() && message.find('\n') == std::string::npos;
}

} // namespace

TEST(WeightsFileBudget, StrideZeroViewsCountAtTheirMaterialisedSizeBeforeAnyIsRead)
{
    fixtures::ScratchDir dir("weights_budget_views");
    // 200 stride-0 views of one float, each of 2^23 elements: a 7 KB pickle, 200 · 2^23 · 4 = 6710886400 bytes
    // of float32.
    std::vector<std::pair<std::string, std::string>> items;
    for (int i = 0; i < 200; ++i)
        items.emplace_back("v" + std::to_string(i), pTensor("0", 1, 0, { int64_t(1) << 23 }, { 0 }));
    const std::string path = writePickled(dir, pStateDict(items), { { "0", floatBytes({ 2.5f }) } });
    EXPECT_LT(fs::file_size(path), 16u << 10);
    icl::MemoryBudget budget(path, uint64_t(64) << 20);
    const std::string e = errorOf([&] { icl::readWeightsFile(path, budget); });
    EXPECT_TRUE(oneLine(e)) << e;
    EXPECT_EQ(e.rfind(path + ": refused: ", 0), 0u) << e;
    EXPECT_NE(e.find("would need 6.71 GB"), std::string::npos) << e;
    EXPECT_NE(e.find("over the memory budget of 67.1 MB"), std::string::npos) << e;
    EXPECT_LT(budget.used(), uint64_t(1) << 20) << "no view was materialised";

    // Within a budget the same kind of view is read: 1000 copies of the one float.
    const std::string small = writePickled(dir, pStateDict({ { "a", pTensor("0", 1, 0, { 10, 100 }, { 0, 0 }) } }),
        { { "0", floatBytes({ 2.5f }) } });
    icl::MemoryBudget enough(small, uint64_t(1) << 20);
    const WeightsFile f = icl::readWeightsFile(small, enough);
    ASSERT_EQ(f.tensors.size(), 1u);
    EXPECT_EQ(f.tensors[0].data, std::vector<float>(1000, 2.5f));
    EXPECT_GE(enough.used(), 4000u) << "the 1000 float32 values are charged";
}

TEST(WeightsFileBudget, PicklesThatCopyContainersOrOutgrowTheBudgetAreRefused)
{
    fixtures::ScratchDir dir("weights_budget_pickle");
    // L = [None] * 1000 from the stack, then 2500 times holder.append(set(L)): 16 KB that would copy 2.5 million
    // pointers. A torch.save pickle holds about one container item per byte.
    std::string p = kProto2 + std::string("]q\x00(", 4) + std::string(1000, 'N') + "e0"; // L, memo 0
    p += std::string("h\x00\x85q\x01", 5) + "0";                          // (L,), memo 1
    p += pGlobal("builtins", "set") + "q\x02" + "0";                      // set, memo 2
    p += "]";                                                              // holder
    for (int i = 0; i < 2500; ++i)
        p += std::string("h\x02h\x01Ra", 6);
    p += ".";
    const std::string path = writePickled(dir, p);
    icl::MemoryBudget budget(path, uint64_t(1) << 30);
    const std::string e = errorOf([&] { icl::readWeightsFile(path, budget); });
    EXPECT_TRUE(oneLine(e)) << e;
    EXPECT_EQ(e.rfind(path + ": refused: the pickle builds more than ", 0), 0u) << e;
    EXPECT_NE(e.find("container items from its " + std::to_string(p.size()) + " bytes"), std::string::npos) << e;
    EXPECT_NE(e.find("nothing was run"), std::string::npos) << e;

    // A pickle's values are charged to the budget: one string of 3 MB, within a budget of 4 MB for the 3 MB
    // data.pkl itself.
    const std::string big = kProto2 + "X" + le(3'000'000, 4) + std::string(3'000'000, 'a') + ".";
    const std::string bigPath = writePickled(dir, big);
    icl::MemoryBudget four(bigPath, 4'000'000);
    const std::string e2 = errorOf([&] { icl::readWeightsFile(bigPath, four); });
    EXPECT_TRUE(oneLine(e2)) << e2;
    EXPECT_EQ(e2.rfind(bigPath + ": refused: the pickle's values and containers would need ", 0), 0u) << e2;
    // and the decompressed data.pkl before it is inflated
    icl::MemoryBudget two(bigPath, 2'000'000);
    const std::string e3 = errorOf([&] { icl::readWeightsFile(bigPath, two); });
    EXPECT_EQ(e3.rfind(bigPath + ": refused: decompressed entry 't/data.pkl' would need 3.00 MB, over the memory "
                                 "budget of 2.00 MB",
                  0),
        0u)
        << e3;
    EXPECT_EQ(two.used(), 0u);
}

TEST(WeightsFileBudget, ZipEntriesAreChargedBeforeTheyAreInflated)
{
    fixtures::ScratchDir dir("weights_budget_zip");
    // One .npy entry of 2^23 float32 zeros: 32 MiB that deflate to about 32 KB.
    const uint64_t n = uint64_t(1) << 23;
    const std::string npy = npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (8388608,), }",
        std::string(size_t(n * 4), '\0'));
    const std::string path = dir.file("bomb.npz");
    writeZip(path, { { "w.npy", npy } }); // libzip's default: deflate
    EXPECT_LT(fs::file_size(path), uint64_t(1) << 20);
    icl::MemoryBudget budget(path, uint64_t(16) << 20);
    bool sawHeader = false;
    const std::string e = errorOf([&] {
        icl::readWeightsFile(path, budget, [&](const WeightsFile& header) {
            sawHeader = true;
            ASSERT_EQ(header.tensors.size(), 1u);
            EXPECT_EQ(header.tensors[0].name, "w");
            EXPECT_EQ(header.tensors[0].shape, (std::vector<int64_t> { int64_t(n) }));
            EXPECT_TRUE(header.tensors[0].data.empty());
        });
    });
    EXPECT_TRUE(sawHeader);
    EXPECT_TRUE(oneLine(e)) << e;
    icl::test::expectStartsWith(
        e, path + ": refused: its 1 arrays (33.6 MB as float32) would need 33.6 MB, over the memory budget of 16.8 MB");
    EXPECT_LT(budget.used(), uint64_t(1) << 20) << "only the array's header was inflated";

    // What the header check throws refuses the file before its data is inflated.
    icl::MemoryBudget large(path, uint64_t(1) << 30);
    const std::string e2 = errorOf([&] {
        icl::readWeightsFile(path, large, [](const WeightsFile&) { throw icl::Error("not the model I wanted"); });
    });
    EXPECT_EQ(e2, "not the model I wanted");
    EXPECT_LT(large.used(), uint64_t(1) << 20);
}

TEST(WeightsFileBudget, SafetensorsHeadersAndTensorsAreCheckedBeforeTheyAreRead)
{
    fixtures::ScratchDir dir("weights_budget_st");
    const std::string path = dir.file("x.safetensors");
    // __metadata__ nested a million levels deep (2 MB of brackets).
    const size_t depth = 1'000'000;
    writeBytes(path, safetensorsBytes("{\"__metadata__\":" + std::string(depth, '[') + std::string(depth, ']') + "}", ""));
    const std::string e = errorOf([&] { icl::readWeightsFile(path); });
    EXPECT_EQ(e, path + ": safetensors header: JSON nested deeper than 64 levels");

    // 2^20 float16 values (2 MiB in the file) are 4 MiB of float32, converted through a scratch of 1 MiB: 5 MiB,
    // refused within 3 MiB before any is read.
    writeBytes(path,
        safetensorsBytes(R"({"h":{"dtype":"F16","shape":[1048576],"data_offsets":[0,2097152]}})",
            std::string(2097152, '\0')));
    icl::MemoryBudget budget(path, uint64_t(3) << 20);
    const std::string e2 = errorOf([&] { icl::readWeightsFile(path, budget); });
    EXPECT_TRUE(oneLine(e2)) << e2;
    EXPECT_NE(e2.find("refused: its 1 tensors (4.19 MB as float32) would need 5.24 MB"), std::string::npos) << e2;
    EXPECT_LT(budget.used(), uint64_t(1) << 20);
}

// Core's messages quote a file's names as they are; the CLI and the GUI print every message through
// escapeForDisplay (app/cli/display.h, app/gui/shown_text.h), which makes it one line without control characters.
TEST(WeightsFileBudget, MessagesQuoteTheFilesNamesAndEscapeToOneLine)
{
    fixtures::ScratchDir dir("weights_escape");
    const std::string path = dir.file("x.safetensors");
    const std::string name = "\x1b[2J\nall good\x9b";
    writeBytes(path,
        safetensorsBytes("{\"\\u001b[2J\\nall good\\u009b\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}",
            floatBytes({ 1, 2 })));
    const std::string e = errorOf([&] { icl::readWeightsFile(path); });
    EXPECT_NE(e.find("safetensors entry '\x1b[2J\nall good\xc2\x9b' has dtype C64"), std::string::npos) << e;
    const std::string shownE = icl::escapeForDisplay(e);
    EXPECT_NE(shownE.find("safetensors entry '\\x1b[2J\\x0aall good\\xc2\\x9b' has dtype C64"), std::string::npos)
        << shownE;
    EXPECT_TRUE(oneLine(shownE)) << shownE;

    // A pickled global's name, and a tensor name in a pickle.
    const std::string g = errorOf([&] {
        readPickled(dir, pStateDict({ { "w", pGlobal("posix\x1b[31m", "system") } }));
    });
    EXPECT_NE(g.find("the global posix\x1b[31m.system"), std::string::npos) << g;
    EXPECT_NE(icl::escapeForDisplay(g).find("the global posix\\x1b[31m.system"), std::string::npos) << g;
    const std::string t = errorOf([&] {
        readPickled(dir, pStateDict({ { name, pTensor("0", 4, 2, { 3 }, { 1 }) } }), { { "0", floatBytes({ 1, 2, 3, 4 }) } });
    });
    // (raw bytes in a pickle: the lone 0x9b is not UTF-8)
    EXPECT_NE(icl::escapeForDisplay(t).find("tensor '\\x1b[2J\\x0aall good\\x9b' (shape [3]"), std::string::npos) << t;
    EXPECT_TRUE(oneLine(icl::escapeForDisplay(t))) << t;
}

TEST(WeightsFileBudget, TheFixturesReadWithinASmallBudgetAsBefore)
{
    // Every fixture of one model (36 tensors, ~80 KB of float32) reads within 1 MB, with the values of bare.pt.
    for (const char* file : { "bare.pt", "noncontiguous.pt", "model.safetensors", "model.npz", "model_compressed.npz" }) {
        icl::MemoryBudget budget(kForeign + file, uint64_t(1) << 20);
        const WeightsFile f = icl::readWeightsFile(kForeign + file, budget);
        expectBareTensors(f, "", false);
        uint64_t floats = 0;
        for (const NamedArray& t : f.tensors)
            floats += 4 * t.data.size();
        EXPECT_GE(budget.used(), floats) << file << ": every float32 value is charged";
    }
}
