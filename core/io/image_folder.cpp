#include "core/io/image_folder.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/error.h"

namespace icl {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void failPng(const std::string& path, const std::string& what)
{
    throw Error("image_folder: " + path + ": " + what);
}

// libpng reports errors by longjmp. The two guarded steps below keep only trivially destructible
// locals between setjmp and a possible longjmp; the message is copied into this state first.
struct PngErrorState {
    char message[256] = "";
};

void onPngError(png_structp png, png_const_charp message)
{
    auto* state = static_cast<PngErrorState*>(png_get_error_ptr(png));
    std::snprintf(state->message, sizeof state->message, "%s", message);
    png_longjmp(png, 1);
}

void onPngWarning(png_structp, png_const_charp) { }

struct PngHeader {
    png_uint_32 width = 0;
    png_uint_32 height = 0;
    int channels = 0; ///< after the transforms: 1 (gray) or 3 (RGB)
};

bool readPngHeader(png_structp png, png_infop info, FILE* file, PngHeader* header)
{
    if (setjmp(png_jmpbuf(png)))
        return false;
    png_init_io(png, file);
    png_set_sig_bytes(png, 8);
    png_read_info(png, info);
    png_set_expand(png); // palette → RGB, gray < 8 bits → 8 bits, tRNS → alpha
    png_set_scale_16(png); // 16 → 8 bits, rounded
    png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    header->width = png_get_image_width(png, info);
    header->height = png_get_image_height(png, info);
    header->channels = png_get_channels(png, info);
    return true;
}

bool readPngRows(png_structp png, png_infop info, png_bytepp rows)
{
    if (setjmp(png_jmpbuf(png)))
        return false;
    png_read_image(png, rows);
    png_read_end(png, info); // reads up to IEND: a file cut after the image data is damaged too
    return true;
}

struct PngReadStruct {
    png_structp png = nullptr;
    png_infop info = nullptr;
    ~PngReadStruct() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

bool endsWithPng(const std::string& name)
{
    if (name.size() < 4)
        return false;
    std::string ext = name.substr(name.size() - 4);
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext == ".png";
}

// Sorted names of the entries of `dir` that are folders (wantFolders) or PNG files.
std::vector<std::string> sortedEntries(const fs::path& dir, bool wantFolders)
{
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (wantFolders ? it->is_directory(ec) : (it->is_regular_file(ec) && endsWithPng(name)))
            names.push_back(name);
    }
    if (ec)
        throw Error("image_folder: " + dir.string() + ": cannot list the folder (" + ec.message() + ")");
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace

GrayImage readPngGray(const std::string& path)
{
    std::error_code ec;
    if (!fs::exists(path, ec))
        failPng(path, "no such file");
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!file)
        failPng(path, "cannot open for reading");
    png_byte signature[8] = {};
    const size_t got = std::fread(signature, 1, 8, file.get());
    if (got < 8 || png_sig_cmp(signature, 0, 8) != 0)
        failPng(path, "not a PNG file (bad signature)");

    PngErrorState state;
    PngReadStruct s;
    s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, onPngError, onPngWarning);
    if (s.png)
        s.info = png_create_info_struct(s.png);
    if (!s.png || !s.info)
        failPng(path, "libpng could not allocate its read structures");
    PngHeader header;
    if (!readPngHeader(s.png, s.info, file.get(), &header))
        failPng(path, std::string("damaged PNG (libpng: ") + state.message + ")");
    if (header.channels != 1 && header.channels != 3)
        failPng(path, "unexpected " + std::to_string(header.channels) + " channels after conversion");

    const size_t rowBytes = size_t(header.width) * size_t(header.channels);
    std::vector<png_byte> buffer(rowBytes * header.height);
    std::vector<png_bytep> rows(header.height);
    for (size_t y = 0; y < header.height; ++y)
        rows[y] = buffer.data() + y * rowBytes;
    if (!readPngRows(s.png, s.info, rows.data()))
        failPng(path, std::string("damaged PNG (libpng: ") + state.message + ")");

    GrayImage image { int64_t(header.height), int64_t(header.width),
        std::vector<float>(buffer.size() / header.channels) };
    if (header.channels == 1) {
        for (size_t p = 0; p < image.pixels.size(); ++p)
            image.pixels[p] = float(buffer[p] / 255.0);
    } else {
        for (size_t p = 0; p < image.pixels.size(); ++p) {
            const png_byte* rgb = buffer.data() + 3 * p;
            image.pixels[p] = float((0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255.0);
        }
    }
    return image;
}

ImageDataset loadImageFolder(const std::string& root, const ImageFolderOptions& options)
{
    const bool resize = options.rows != 0 || options.cols != 0;
    if (resize && (options.rows < 1 || options.cols < 1))
        throw Error("image_folder: resize size " + std::to_string(options.rows) + "×" + std::to_string(options.cols)
            + " must be 0×0 (keep the stored size) or at least 1×1");
    std::error_code ec;
    if (!fs::exists(root, ec))
        throw Error("image_folder: " + root + ": no such folder");
    if (!fs::is_directory(root, ec))
        throw Error("image_folder: " + root + ": not a folder (expected root/alphabet/character/*.png)");
    const std::vector<std::string> alphabets = sortedEntries(root, true);
    if (alphabets.empty())
        throw Error(
            "image_folder: " + root + ": empty folder, no alphabet folders (expected root/alphabet/character/*.png)");

    ImageDataset out;
    for (const std::string& alphabet : alphabets) {
        const fs::path alphabetDir = fs::path(root) / alphabet;
        const std::vector<std::string> characters = sortedEntries(alphabetDir, true);
        if (characters.empty())
            throw Error("image_folder: " + alphabetDir.string()
                + ": empty alphabet folder, no character folders (expected root/alphabet/character/*.png)");
        for (const std::string& character : characters) {
            const fs::path characterDir = alphabetDir / character;
            const std::vector<std::string> files = sortedEntries(characterDir, false);
            if (files.empty())
                throw Error("image_folder: " + characterDir.string() + ": empty character folder, no .png files");
            const int64_t classIndex = out.numClasses();
            out.classNames.push_back(alphabet + "/" + character);
            for (const std::string& name : files) {
                const std::string path = (characterDir / name).string();
                GrayImage image = readPngGray(path);
                if (resize)
                    image = resizeArea(image, options.rows, options.cols);
                if (out.labels.empty()) {
                    out.rows = image.rows;
                    out.cols = image.cols;
                } else if (image.rows != out.rows || image.cols != out.cols) {
                    throw Error("image_folder: " + path + ": image of " + std::to_string(image.rows) + "×"
                        + std::to_string(image.cols) + " pixels, earlier images have " + std::to_string(out.rows) + "×"
                        + std::to_string(out.cols) + " (set task.image_size to resize images of mixed sizes)");
                }
                for (float v : image.pixels)
                    out.pixels.push_back(uint8_t(std::clamp(std::lround(255.0 * v), 0L, 255L)));
                out.labels.push_back(classIndex);
            }
        }
    }
    return out;
}

} // namespace icl
