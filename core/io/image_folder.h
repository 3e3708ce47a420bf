#pragma once
// Image folders in Omniglot's layout, `root/alphabet/character/*.png`, each character folder one class:
// exemplar source (b) of Chan et al. 2022 (docs/science.md §4). PNG decoding by libpng. Torch-free, Qt-free.
//
// Intended usage:
//     icl::ImageFolderOptions o;
//     o.rows = o.cols = 28;                                   // 105×105 → 28×28 by area averaging
//     const icl::ImageDataset omniglot = icl::loadImageFolder("omniglot/images_background", o);

#include <cstdint>
#include <string>

#include "core/io/image_dataset.h"

namespace icl {

/// Reads a PNG file as grayscale intensities in [0, 1] (byte / 255 after conversion to 8 bits): palette
/// and low-bit-depth images are expanded, 16-bit samples scaled to 8 bits, alpha dropped (not composited;
/// Omniglot has none), no gamma correction, and RGB converted with the Rec. 601 luma weights
/// 0.299 R + 0.587 G + 0.114 B, as PIL's convert("L"). Throws icl::Error naming the file when it is
/// missing, not a PNG (bad signature) or damaged (libpng's message: truncated data, CRC error, bad
/// compressed data, …), not a regular file, over 16384 pixels on a side or 2^26 pixels in all (libpng's
/// png_set_user_limits and a check of width × height × channels before the rows are allocated), or when
/// decoding it would exceed a memory budget of `max_memory` bytes (0: defaultMemoryBudget()). Any thread.
GrayImage readPngGray(const std::string& path, uint64_t max_memory = 0);

/// Options of loadImageFolder. rows = cols = 0 keeps the stored size (all images must share it);
/// rows, cols ≥ 1 resize every image with resizeArea (area averaging).
struct ImageFolderOptions {
    int64_t rows = 0;
    int64_t cols = 0;
    uint64_t max_memory = 0;  ///< memory budget of the whole load in bytes (0: defaultMemoryBudget())
};

/// Loads `root/alphabet/character/*.png`. Classes are the character folders in sorted order of
/// (alphabet, character) names (byte-wise, locale-independent), named "alphabet/character"; images within a
/// class in sorted file-name order. Files ending in ".png" (any case) are read, other files ignored.
/// Intensities are rounded to bytes (round(255·v)). Throws icl::Error when root is missing or not a
/// folder, has no alphabet folders, an alphabet has no character folders, a character folder has no PNG
/// file, a PNG is damaged (readPngGray), images differ in size without resizing, or options are invalid; and
/// for a walk over its bounds (more than 1,000,000 entries in a folder or images in all, a folder that links
/// back to one it is in) or images over the memory budget. The walk is three levels deep whatever the links.
/// Blocks on disk I/O; any thread.
ImageDataset loadImageFolder(const std::string& root, const ImageFolderOptions& options = {});

} // namespace icl
