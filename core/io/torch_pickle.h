#pragma once
// Core-internal: a restricted unpickler for the data.pkl of torch.save archives, and a small pickle
// (protocol 2) writer. The unpickler is a stack machine that only builds values: it knows a short
// allow-list of globals (collections.OrderedDict, torch._utils._rebuild_tensor_v2 and friends, the torch
// storage types and dtypes, builtins.set / frozenset, _codecs.encode) and interprets them as data; any
// other global refuses the whole pickle before anything else happens. Nothing is ever called.
// Thread affinity: any thread (no shared state). See docs/weights-formats.md.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace icl {
class MemoryBudget;
}

namespace icl::torch_pickle {

/// One unpickled value. Containers point into the owning Unpickled's arena (shared sub-objects, such as
/// a storage used by several tensors, are the same Value).
struct Value {
    enum class Kind {
        None,
        Bool,
        Int, ///< fits int64: `i`
        BigInt, ///< LONG1/LONG4 wider than 64 bits: `s` holds the little-endian two's-complement bytes
        Float, ///< `f`
        String, ///< UTF-8 text: `s`
        Bytes, ///< `s`
        Tuple, ///< `items`
        List, ///< `items`
        Set, ///< set / frozenset: `items`
        Dict, ///< dict / OrderedDict: `entries` in insertion order
        Global, ///< an allow-listed global used as a value (a storage type, a dtype): `s` = "module.name"
        Storage, ///< a torch storage (persistent id): `storage`
        Tensor, ///< torch._utils._rebuild_tensor_v2(...): `tensor`
    };
    Kind kind = Kind::None;
    bool b = false;
    int64_t i = 0;
    double f = 0.0;
    std::string s;
    std::vector<Value*> items;
    std::vector<std::pair<Value*, Value*>> entries;
    /// Storage: persistent id ('storage', storage_type, key, location, numel).
    struct StorageInfo {
        std::string dtype; ///< "float32", "float16", "bfloat16", "float64", "int64", ..., "bool"
        std::string key; ///< record name under "<archive>/data/"
        std::string location; ///< e.g. "cpu", "cuda:0"
        int64_t numel = 0; ///< elements of `dtype`
    };
    std::unique_ptr<StorageInfo> storage; ///< set for Kind::Storage
    /// Tensor: a strided view of a storage, in elements of the storage's dtype.
    struct TensorInfo {
        const Value* storage = nullptr;
        int64_t offset = 0;
        std::vector<int64_t> size;
        std::vector<int64_t> stride;
    };
    std::unique_ptr<TensorInfo> tensor; ///< set for Kind::Tensor
};

/// Short name of a value's kind for messages: "a dict", "a list", "a tensor", ...
std::string describeKind(const Value& value);

/// The result of unpickle(): owns every value.
class Unpickled {
public:
    const Value* root() const { return m_root; }

private:
    friend Unpickled unpickle(const uint8_t* data, size_t size, const std::string& source, MemoryBudget& budget);
    std::deque<Value> m_arena;
    const Value* m_root = nullptr;
};

/// Runs the restricted unpickler over `size` bytes (a torch.save data.pkl; protocols 2 to 5 opcodes that
/// build containers and scalars). `source` names the file in messages. Throws icl::Error naming the file:
/// "<source>: refused: the pickle names the global posix.system, which is not a tensor, container or
/// scalar; nothing was run" for a global outside the allow-list; otherwise for an unsupported opcode,
/// truncated or malformed data, a count that exceeds the bytes left, or more than 2^20 stack entries, 2^16
/// nested marks, 2^22 values or 2^22 memo entries. Its values, containers, strings and memo are charged to
/// `budget` (every 1 MB) before they are allocated, and a pickle that builds more than 2·size + 65536 container
/// items or copies as many bytes of strings (set() of one list thousands of times) is refused: "<source>:
/// refused: the pickle builds more than … container items from its … bytes …; nothing was run".
Unpickled unpickle(const uint8_t* data, size_t size, const std::string& source, MemoryBudget& budget);

/// unpickle with a budget of its own (defaultMemoryBudget()).
Unpickled unpickle(const uint8_t* data, size_t size, const std::string& source);

/// Builds a protocol-2 pickle opcode by opcode (only what writeTorchZip needs).
class PickleWriter {
public:
    PickleWriter(); ///< starts with PROTO 2
    void mark();
    void stop();
    void none();
    void boolean(bool value);
    void integer(int64_t value); ///< BININT1 / BININT2 / BININT / LONG1
    void string(const std::string& utf8); ///< BINUNICODE; throws icl::Error for invalid UTF-8
    void global(const std::string& module, const std::string& name);
    void emptyTuple();
    void emptyDict();
    void tuple(); ///< TUPLE: everything since the last mark
    void intTuple(const std::vector<int64_t>& values); ///< as pickle: EMPTY_TUPLE, TUPLE1..3 or MARK ... TUPLE
    void reduce();
    void binpersid();
    void setitems();
    void put(uint32_t memo_index); ///< BINPUT / LONG_BINPUT
    void get(uint32_t memo_index); ///< BINGET / LONG_BINGET
    const std::string& bytes() const { return m_out; }

private:
    std::string m_out;
};

} // namespace icl::torch_pickle
