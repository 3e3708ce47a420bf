#pragma once
// A structure-aware mutator for the zip-based formats (.pt, .npz): libFuzzer's byte mutations rarely get past a zip's
// CRC-32s to the pickle or the .npy headers inside, so half of the mutations unpack the archive (libzip, in memory),
// mutate one entry's bytes with LLVMFuzzerMutate and pack it again (stored entries, fresh CRCs); the other half
// mutate the archive's bytes as they are, which fuzzes libzip's parsing and the container checks.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <zip.h>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace icl::fuzz {

/// The entries (name, bytes) of the zip archive in `data`; false when it is not one libzip opens.
inline bool unzipEntries(const uint8_t* data, size_t size, std::vector<std::pair<std::string, std::string>>& entries)
{
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* source = zip_source_buffer_create(data, size, 0, &error);
    if (source == nullptr)
        return false;
    zip_t* archive = zip_open_from_source(source, ZIP_RDONLY, &error);
    if (archive == nullptr) {
        zip_source_free(source);
        return false;
    }
    const zip_int64_t n = zip_get_num_entries(archive, 0);
    bool ok = n > 0 && n < 4096;
    for (zip_int64_t i = 0; ok && i < n; ++i) {
        zip_stat_t st;
        zip_file_t* file = nullptr;
        ok = zip_stat_index(archive, zip_uint64_t(i), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE) &&
             (st.valid & ZIP_STAT_NAME) && st.size < (uint64_t(1) << 24) &&
             (file = zip_fopen_index(archive, zip_uint64_t(i), 0)) != nullptr;
        if (!ok)
            break;
        std::string bytes(size_t(st.size), '\0');
        ok = zip_fread(file, bytes.data(), st.size) == zip_int64_t(st.size);
        zip_fclose(file);
        entries.emplace_back(st.name, std::move(bytes));
    }
    zip_discard(archive);
    return ok;
}

/// A zip archive of `entries`, stored (no compression); empty when libzip fails.
inline std::string zipEntries(const std::vector<std::pair<std::string, std::string>>& entries)
{
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* source = zip_source_buffer_create(nullptr, 0, 0, &error);
    if (source == nullptr)
        return {};
    zip_source_keep(source);
    zip_t* archive = zip_open_from_source(source, ZIP_TRUNCATE, &error);
    std::string out;
    if (archive != nullptr) {
        bool ok = true;
        for (const auto& [name, bytes] : entries) {
            // libzip does not take (or free) the buffer of an empty entry: give it none.
            void* copy = bytes.empty() ? nullptr : std::malloc(bytes.size());
            if (copy)
                std::memcpy(copy, bytes.data(), bytes.size());
            zip_source_t* entry = zip_source_buffer(archive, copy, bytes.size(), copy ? 1 : 0);
            if (!entry)
                std::free(copy);
            const zip_int64_t index = entry ? zip_file_add(archive, name.c_str(), entry, ZIP_FL_OVERWRITE) : -1;
            if (index < 0) {
                if (entry)
                    zip_source_free(entry);
                ok = false;
                break;
            }
            zip_set_file_compression(archive, zip_uint64_t(index), ZIP_CM_STORE, 0);
        }
        const bool closed = ok && zip_close(archive) == 0;
        if (ok && !closed)
            zip_discard(archive);  // zip_close failed and left the archive open
        if (closed) {
            zip_stat_t st;
            if (zip_source_stat(source, &st) == 0 && zip_source_open(source) == 0) {
                out.resize(size_t(st.size));
                if (zip_source_read(source, out.data(), st.size) != zip_int64_t(st.size))
                    out.clear();
                zip_source_close(source);
            }
        } else if (!ok) {
            zip_discard(archive);
        }
    }
    zip_source_free(source);
    return out;
}

/// libFuzzer's custom mutator for zip inputs (see above).
inline size_t mutateZip(uint8_t* data, size_t size, size_t max_size, unsigned int seed)
{
    std::vector<std::pair<std::string, std::string>> entries;
    if ((seed & 1) == 0 || !unzipEntries(data, size, entries))
        return LLVMFuzzerMutate(data, size, max_size);
    std::string& bytes = entries[(seed >> 1) % entries.size()].second;
    const size_t room = bytes.size() + 256;
    bytes.resize(room);
    bytes.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(bytes.data()), room - 256, room));
    const std::string packed = zipEntries(entries);
    if (packed.empty() || packed.size() > max_size)
        return LLVMFuzzerMutate(data, size, max_size);
    std::memcpy(data, packed.data(), packed.size());
    return packed.size();
}

} // namespace icl::fuzz
