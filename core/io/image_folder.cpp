#include "core/io/image_folder.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <cerrno>
#include <cstring>
#include <utility>

#include <sys/stat.h>

#include "core/error.h"
#include "core/io/checked_size.h"
#include "core/io/memory_budget.h"
#include "core/io/regular_file.h"

namespace icl {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void failPng(const std::string& path, const std::string& what)
{
    throw Error(path + ": " + what);
}

// libpng's limits (png_set_user_limits, png_set_chunk_cache_max, png_set_chunk_malloc_max): Omniglot's images
// are 105×105; a PNG's header may claim 2^31 − 1 on a side.
constexpr png_uint_32 kMaxPngSide = 16384;
constexpr png_uint_32 kMaxPngAncillaryChunks = 1000;
constexpr png_alloc_size_t kMaxPngChunkBytes = 8u << 20;
// Most pixels of one image (256 MB decoded as RGB), entries listed in one folder, and images in one folder.
constexpr uint64_t kMaxPngPixels = uint64_t(1) << 26;
constexpr size_t kMaxImageFolderEntries = 1000000;
constexpr size_t kMaxImageFolderImages = 1000000;

// libpng reports errors by longjmp. The two guarded steps below keep only trivially destructible
// locals between setjmp and a possible longjmp; the message is copied into this state first.
struct PngErrorState {
    char message[256] = "";
    char warning[256] = ""; ///< the first warning: libpng says why IHDR is invalid ("… exceeds user limit …") in one
};

void onPngError(png_structp png, png_const_charp message)
{
    auto* state = static_cast<PngErrorState*>(png_get_error_ptr(png));
    std::snprintf(state->message, sizeof state->message, "%s", message);
    png_longjmp(png, 1);
}

void onPngWarning(png_structp png, png_const_charp message)
{
    auto* state = static_cast<PngErrorState*>(png_get_error_ptr(png));
    if (state->warning[0] == '\0')
        std::snprintf(state->warning, sizeof state->warning, "%s", message);
}

// "damaged PNG (libpng: Invalid IHDR data: Image width exceeds user limit in IHDR)".
std::string pngFailure(const PngErrorState& state)
{
    std::string text = std::string("damaged PNG (libpng: ") + state.message;
    if (state.warning[0] != '\0')
        text += std::string(": ") + state.warning;
    return text + ")";
}

struct PngHeader {
    png_uint_32 width = 0;
    png_uint_32 height = 0;
    int channels = 0; ///< after the transforms: 1 (gray) or 3 (RGB)
};

bool readPngHeader(png_structp png, png_infop info, FILE* file, PngHeader* header)
{
    if (setjmp(png_jmpbuf(png)))
        return false;
    // libpng's own limits, checked while it reads the header and each chunk (before it allocates for them).
    png_set_user_limits(png, kMaxPngSide, kMaxPngSide);
    png_set_chunk_cache_max(png, kMaxPngAncillaryChunks);
    png_set_chunk_malloc_max(png, kMaxPngChunkBytes);
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

// Sorted names of the entries of `dir` that are folders (wantFolders) or PNG files (regular files; a symlink is
// followed to what it names). At most kMaxImageFolderEntries entries are listed.
std::vector<std::string> sortedEntries(const fs::path& dir, bool wantFolders)
{
    std::vector<std::string> names;
    std::error_code ec;
    size_t listed = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (++listed > kMaxImageFolderEntries)
            throw Error(dir.string() + ": more than " + std::to_string(kMaxImageFolderEntries)
                        + " entries in one folder of an image folder");
        const std::string name = it->path().filename().string();
        std::error_code typeError;
        if (wantFolders ? it->is_directory(typeError) : (it->is_regular_file(typeError) && endsWithPng(name)))
            names.push_back(name);
    }
    if (ec)
        throw Error(dir.string() + ": cannot list the folder (" + ec.message() + ")");
    std::sort(names.begin(), names.end());
    return names;
}

// Identity (device, inode) of a folder, to refuse a symlink back to a folder the walk is inside.
std::pair<uint64_t, uint64_t> folderIdentity(const fs::path& dir)
{
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0)
        throw Error(dir.string() + ": cannot read the folder (" + std::strerror(errno) + ")");
    return { uint64_t(st.st_dev), uint64_t(st.st_ino) };
}

GrayImage readPngGrayWithin(const std::string& path, MemoryBudget* budget);

} // namespace

namespace {

GrayImage readPngGrayWithin(const std::string& path, MemoryBudget* budget)
{
    RegularFile regular(path, "PNG file");
    std::unique_ptr<FILE, int (*)(FILE*)> file(::fdopen(regular.fd(), "rb"), std::fclose);
    if (!file)
        failPng(path, "cannot open for reading");
    regular.release(); // fclose closes it
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
        failPng(path, pngFailure(state));
    if (header.channels != 1 && header.channels != 3)
        failPng(path, "unexpected " + std::to_string(header.channels) + " channels after conversion");
    if (uint64_t(header.width) * header.height > kMaxPngPixels)
        failPng(path, "image of " + std::to_string(header.width) + "×" + std::to_string(header.height)
                          + " pixels, more than the " + std::to_string(kMaxPngPixels) + " an image may have");

    // The decoded rows and the intensities: sized by the header, checked before either is allocated.
    const uint64_t rowBytes = checked::mul(header.width, uint64_t(header.channels), path);
    const uint64_t bufferBytes = checked::mul(rowBytes, header.height, path);
    const uint64_t pixels = uint64_t(header.width) * header.height;
    if (png_get_rowbytes(s.png, s.info) != rowBytes)
        failPng(path, "unexpected row size after conversion");
    if (budget)
        budget->check(checked::add(bufferBytes, checked::mul(pixels, sizeof(float), path), path),
                      "decoding an image of " + std::to_string(header.width) + "×" + std::to_string(header.height)
                          + " pixels");
    std::vector<png_byte> buffer(checked::toSize(bufferBytes, path));
    std::vector<png_bytep> rows(header.height);
    for (size_t y = 0; y < header.height; ++y)
        rows[y] = buffer.data() + y * rowBytes;
    if (!readPngRows(s.png, s.info, rows.data()))
        failPng(path, pngFailure(state));

    GrayImage image { int64_t(header.height), int64_t(header.width), std::vector<float>(size_t(pixels)) };
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

} // namespace

GrayImage readPngGray(const std::string& path, uint64_t max_memory)
{
    MemoryBudget budget(path, max_memory);
    return readPngGrayWithin(path, &budget);
}

ImageDataset loadImageFolder(const std::string& root, const ImageFolderOptions& options)
{
    const bool resize = options.rows != 0 || options.cols != 0;
    if (resize && (options.rows < 1 || options.cols < 1 || options.rows > int64_t(kMaxPngSide) || options.cols > int64_t(kMaxPngSide)))
        throw Error("image_folder: resize size " + std::to_string(options.rows) + "×" + std::to_string(options.cols)
            + " must be 0×0 (keep the stored size) or from 1×1 to " + std::to_string(kMaxPngSide) + "×"
            + std::to_string(kMaxPngSide));
    std::error_code ec;
    if (!fs::exists(root, ec))
        throw Error(root + ": no such folder");
    if (!fs::is_directory(root, ec))
        throw Error(root + ": not a folder (expected root/alphabet/character/*.png)");
    MemoryBudget budget(root, options.max_memory);

    // The walk first (three levels, at most kMaxImageFolderImages files, no folder entered twice on one path),
    // then the images.
    struct ClassFiles {
        std::string name;
        std::vector<std::string> paths;
    };
    std::vector<ClassFiles> classes;
    size_t images = 0;
    const auto rootId = folderIdentity(root);
    const std::vector<std::string> alphabets = sortedEntries(root, true);
    if (alphabets.empty())
        throw Error(root + ": empty folder, no alphabet folders (expected root/alphabet/character/*.png)");
    for (const std::string& alphabet : alphabets) {
        const fs::path alphabetDir = fs::path(root) / alphabet;
        const auto alphabetId = folderIdentity(alphabetDir);
        if (alphabetId == rootId)
            throw Error(alphabetDir.string() + ": a link back to the image folder itself (a loop)");
        const std::vector<std::string> characters = sortedEntries(alphabetDir, true);
        if (characters.empty())
            throw Error(alphabetDir.string()
                + ": empty alphabet folder, no character folders (expected root/alphabet/character/*.png)");
        for (const std::string& character : characters) {
            const fs::path characterDir = alphabetDir / character;
            const auto characterId = folderIdentity(characterDir);
            if (characterId == rootId || characterId == alphabetId)
                throw Error(characterDir.string() + ": a link back to a folder it is in (a loop)");
            const std::vector<std::string> files = sortedEntries(characterDir, false);
            if (files.empty())
                throw Error(characterDir.string() + ": empty character folder, no .png files");
            images += files.size();
            if (images > kMaxImageFolderImages)
                throw Error(root + ": more than " + std::to_string(kMaxImageFolderImages)
                            + " images, more than an image folder may have");
            ClassFiles c { alphabet + "/" + character, {} };
            for (const std::string& name : files)
                c.paths.push_back((characterDir / name).string());
            classes.push_back(std::move(c));
        }
    }

    ImageDataset out;
    for (const ClassFiles& c : classes) {
        const int64_t classIndex = out.numClasses();
        out.classNames.push_back(c.name);
        for (const std::string& path : c.paths) {
            GrayImage image = readPngGrayWithin(path, &budget);
            if (resize)
                image = resizeArea(image, options.rows, options.cols);
            if (out.labels.empty()) {
                out.rows = image.rows;
                out.cols = image.cols;
                // Every image has this size (or is refused): the dataset's bytes, charged once.
                const uint64_t bytes = checked::mul(checked::mul(images, uint64_t(out.rows), root), uint64_t(out.cols), root);
                budget.charge(bytes, std::to_string(images) + " images of " + std::to_string(out.rows) + "×"
                                         + std::to_string(out.cols) + " pixels");
                out.pixels.reserve(checked::toSize(bytes, root));
                out.labels.reserve(images);
            } else if (image.rows != out.rows || image.cols != out.cols) {
                throw Error(path + ": image of " + std::to_string(image.rows) + "×"
                    + std::to_string(image.cols) + " pixels, earlier images have " + std::to_string(out.rows) + "×"
                    + std::to_string(out.cols) + " (set task.image_size to resize images of mixed sizes)");
            }
            for (float v : image.pixels)
                out.pixels.push_back(uint8_t(std::clamp(std::lround(255.0 * v), 0L, 255L)));
            out.labels.push_back(classIndex);
        }
    }
    return out;
}

} // namespace icl
