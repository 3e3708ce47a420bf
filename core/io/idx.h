#pragma once
// IDX files, the format of MNIST and Fashion-MNIST (LeCun et al.): a big-endian header — magic
// 0x0000TTNN (TT = element type, NN = number of dimensions), then NN uint32 dimension sizes — followed by
// the elements in row-major order. Plain files and gzip-compressed ones (`.gz`, detected by content) are
// read through zlib. Torch-free and Qt-free; exemplar source (c) of Chan et al. 2022 (docs/science.md §4).
//
// Intended usage:
//     const icl::IdxImageSet train = icl::readIdxImageSet("train-images-idx3-ubyte.gz",
//                                                         "train-labels-idx1-ubyte.gz");
//     // train.images.pixels: [count, rows, cols] bytes; train.labels: [count]

#include <cstdint>
#include <string>
#include <vector>

namespace icl {

/// Magic number of an IDX file of unsigned-byte images [n, rows, cols] (MNIST's `idx3-ubyte`).
constexpr uint32_t kIdxImagesMagic = 0x00000803;
/// Magic number of an IDX file of unsigned-byte labels [n] (MNIST's `idx1-ubyte`).
constexpr uint32_t kIdxLabelsMagic = 0x00000801;

/// An IDX array of unsigned bytes (element type 0x08): `shape` from the header, `data` row-major.
struct IdxArray {
    std::vector<int64_t> shape;
    std::vector<uint8_t> data; ///< Π shape bytes
};

/// Grayscale images as stored in an IDX images file: `pixels` [count, rows, cols] row-major, 0 … 255.
struct IdxImages {
    int64_t count = 0;
    int64_t rows = 0;
    int64_t cols = 0;
    std::vector<uint8_t> pixels;
};

/// An images file and its labels file: `labels[i]` is the label of image i.
struct IdxImageSet {
    IdxImages images;
    std::vector<uint8_t> labels; ///< [count]
};

/// Reads an IDX file of unsigned bytes with any number of dimensions (plain or gzip-compressed).
/// Throws icl::Error naming the file when it is missing or unreadable, the gzip stream is damaged, the
/// magic's leading bytes are not 0 or its element type is not 0x08 (unsigned byte), the data is shorter
/// than the header's dimensions say (truncated) or longer (trailing bytes), or it is not a regular file. The
/// header is checked before the data is allocated: its dimensions' product overflow-checked, compared with
/// the file's size (a gzip stream: with the most its compressed size can hold) and charged to a memory
/// budget of `max_memory` bytes (0: defaultMemoryBudget()). Any thread.
IdxArray readIdx(const std::string& path, uint64_t max_memory = 0);

/// Reads an IDX images file (magic 0x00000803: [n, rows, cols] unsigned bytes). Throws icl::Error as
/// readIdx, and for another magic (e.g. a labels file), wrong dimensions or rows/cols of 0. Any thread.
IdxImages readIdxImages(const std::string& path, uint64_t max_memory = 0);

/// Reads an IDX labels file (magic 0x00000801: [n] unsigned bytes). Throws icl::Error as readIdx, and for
/// another magic (e.g. an images file). Any thread.
std::vector<uint8_t> readIdxLabels(const std::string& path, uint64_t max_memory = 0);

/// Reads an images file and its labels file. Throws icl::Error as readIdxImages / readIdxLabels, and when
/// the two files hold different numbers of items (naming both files and both counts). Both files share one
/// memory budget of `max_memory` bytes (0: defaultMemoryBudget()). Any thread.
IdxImageSet readIdxImageSet(const std::string& imagesPath, const std::string& labelsPath, uint64_t max_memory = 0);

} // namespace icl
