#include "core/io/torch_pickle.h"

#include <cstring>
#include <unordered_map>

#include "core/error.h"
#include "core/io/memory_budget.h"

namespace icl::torch_pickle {

namespace {

// Limits that no torch.save pickle comes near (a state dict takes ~30 values per tensor, and its stack stays
// below a few thousand entries); they bound the memory a hostile pickle can make the machine use.
constexpr size_t kMaxStack = 1u << 20;
constexpr size_t kMaxMarks = 1u << 16;
constexpr size_t kMaxValues = 1u << 22;
constexpr size_t kMaxMemo = 1u << 22;
constexpr size_t kMaxDims = 64;
// The values, containers and strings of a pickle are charged to the budget in steps of this much.
constexpr uint64_t kChargeStep = uint64_t(1) << 20;
// A torch.save pickle puts each value it pushes into at most one container and copies a container at most once
// (set(list)), so its containers hold at most about two items per byte, and its dict keys and encoded strings
// copy at most about twice its bytes; more is a pickle built to make copies (set() of one list thousands of
// times). The slack lets tiny pickles build small containers freely.
constexpr uint64_t kCopySlack = 65536;

using Kind = Value::Kind;

// What an allow-listed global is.
enum class GlobalRole { Callable, StorageType, DType, None };

struct GlobalInfo {
    GlobalRole role = GlobalRole::None;
    std::string dtype; // StorageType / DType: element type
};

GlobalInfo classifyGlobal(const std::string& module, const std::string& name)
{
    static const std::unordered_map<std::string, GlobalInfo> table = [] {
        std::unordered_map<std::string, GlobalInfo> t;
        for (const char* callable :
            { "collections.OrderedDict", "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor",
                "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state", "builtins.set",
                "builtins.frozenset", "__builtin__.set", "__builtin__.frozenset", "_codecs.encode" })
            t[callable] = { GlobalRole::Callable, "" };
        const std::pair<const char*, const char*> storages[]
            = { { "FloatStorage", "float32" }, { "HalfStorage", "float16" }, { "BFloat16Storage", "bfloat16" },
                  { "DoubleStorage", "float64" }, { "LongStorage", "int64" }, { "IntStorage", "int32" },
                  { "ShortStorage", "int16" }, { "CharStorage", "int8" }, { "ByteStorage", "uint8" },
                  { "BoolStorage", "bool" }, { "UntypedStorage", "uint8" } };
        for (const auto& [storage, dtype] : storages) {
            t[std::string("torch.") + storage] = { GlobalRole::StorageType, dtype };
            t[std::string("torch.storage.") + storage] = { GlobalRole::StorageType, dtype };
        }
        const std::pair<const char*, const char*> dtypes[]
            = { { "float32", "float32" }, { "float", "float32" }, { "float16", "float16" }, { "half", "float16" },
                  { "bfloat16", "bfloat16" }, { "float64", "float64" }, { "double", "float64" }, { "int64", "int64" },
                  { "long", "int64" }, { "int32", "int32" }, { "int", "int32" }, { "int16", "int16" },
                  { "short", "int16" }, { "int8", "int8" }, { "uint8", "uint8" }, { "bool", "bool" } };
        for (const auto& [dtype_name, dtype] : dtypes)
            t[std::string("torch.") + dtype_name] = { GlobalRole::DType, dtype };
        return t;
    }();
    const auto it = table.find(module + "." + name);
    return it == table.end() ? GlobalInfo {} : it->second;
}

const char* opcodeName(uint8_t op)
{
    switch (op) {
    case 'I':
        return "INT";
    case 'L':
        return "LONG";
    case 'F':
        return "FLOAT";
    case 'S':
        return "STRING";
    case 'V':
        return "UNICODE";
    case 'P':
        return "PERSID";
    case 'g':
        return "GET";
    case 'p':
        return "PUT";
    case 'i':
        return "INST";
    case 'o':
        return "OBJ";
    case 0x82:
        return "EXT1";
    case 0x83:
        return "EXT2";
    case 0x84:
        return "EXT4";
    case 0x92:
        return "NEWOBJ_EX";
    case 0x96:
        return "BYTEARRAY8";
    case 0x97:
        return "NEXT_BUFFER";
    case 0x98:
        return "READONLY_BUFFER";
    default:
        return nullptr;
    }
}

class Machine {
public:
    Machine(const uint8_t* data, size_t size, const std::string& source, std::deque<Value>& arena,
        MemoryBudget& budget)
        : m_data(data)
        , m_size(size)
        , m_source(source)
        , m_arena(arena)
        , m_budget(budget)
        , m_maxCopies(2 * uint64_t(size) + kCopySlack)
    {
    }

    const Value* run()
    {
        while (true) {
            if (m_pos >= m_size)
                fail("ends before its STOP opcode (truncated?)");
            m_opPos = m_pos;
            const uint8_t op = m_data[m_pos++];
            if (op == '.')
                break;
            step(op);
        }
        if (m_stack.empty())
            fail("STOP with an empty stack");
        flushCharge();
        return m_stack.back();
    }

private:
    [[noreturn]] void fail(const std::string& what) const
    {
        throw Error(m_source + ": damaged pickle: " + what + " (at byte " + std::to_string(m_opPos) + ")");
    }

    [[noreturn]] void refuseGlobal(const std::string& name) const
    {
        throw Error(m_source + ": refused: the pickle names the global " + name
            + ", which is not a tensor, container or scalar; nothing was run");
    }

    // --- memory ----------------------------------------------------------------------------------
    // `bytes` about to be allocated for the pickle's values; charged to the budget every kChargeStep.
    void account(uint64_t bytes)
    {
        m_pending += bytes;
        if (m_pending >= kChargeStep)
            flushCharge();
    }
    void flushCharge()
    {
        if (m_pending)
            m_budget.charge(m_pending, "the pickle's values and containers");
        m_pending = 0;
    }
    // `n` more container items (pointers), refused past what a torch.save pickle of this size can hold.
    void addItems(uint64_t n)
    {
        m_items += n;
        if (m_items > m_maxCopies)
            throw Error(m_source + ": refused: the pickle builds more than " + std::to_string(m_maxCopies)
                + " container items from its " + std::to_string(m_size)
                + " bytes (a state dict's pickle holds about one per byte: this one copies containers); nothing was run");
        account(n * sizeof(Value*));
    }
    // `n` more bytes copied from strings (dict keys indexed, _codecs.encode), refused likewise.
    void addCopiedBytes(uint64_t n)
    {
        m_copied += n;
        if (m_copied > m_maxCopies)
            throw Error(m_source + ": refused: the pickle copies more than " + std::to_string(m_maxCopies)
                + " bytes of strings from its " + std::to_string(m_size) + " bytes; nothing was run");
        account(n);
    }

    // --- input -----------------------------------------------------------------------------------
    const uint8_t* take(size_t n)
    {
        if (n > m_size - m_pos)
            fail("needs " + std::to_string(n) + " bytes but only " + std::to_string(m_size - m_pos) + " are left");
        const uint8_t* p = m_data + m_pos;
        m_pos += n;
        return p;
    }
    uint64_t readLE(size_t n)
    {
        const uint8_t* p = take(n);
        uint64_t v = 0;
        for (size_t k = 0; k < n; ++k)
            v |= uint64_t(p[k]) << (8 * k);
        return v;
    }
    std::string readBytes(uint64_t n)
    {
        if (n > m_size - m_pos)
            fail("a length of " + std::to_string(n) + " bytes exceeds the " + std::to_string(m_size - m_pos)
                + " bytes left");
        account(n);
        const uint8_t* p = take(size_t(n));
        return std::string(reinterpret_cast<const char*>(p), size_t(n));
    }
    std::string readLine()
    {
        const void* nl = std::memchr(m_data + m_pos, '\n', m_size - m_pos);
        if (!nl)
            fail("a GLOBAL without its newline");
        const size_t n = size_t(static_cast<const uint8_t*>(nl) - (m_data + m_pos));
        std::string line(reinterpret_cast<const char*>(m_data + m_pos), n);
        m_pos += n + 1;
        return line;
    }

    // --- values ----------------------------------------------------------------------------------
    Value* make(Kind kind)
    {
        if (m_arena.size() >= kMaxValues)
            fail("builds more than " + std::to_string(kMaxValues) + " values");
        account(sizeof(Value));
        Value& v = m_arena.emplace_back();
        v.kind = kind;
        return &v;
    }
    // None, True, False: one value each (immutable, so shared).
    Value* constant(int which)
    {
        if (!m_constants[which]) {
            m_constants[which] = make(which == 0 ? Kind::None : Kind::Bool);
            m_constants[which]->b = which == 1;
        }
        return m_constants[which];
    }
    Value* makeInt(int64_t i)
    {
        Value* v = make(Kind::Int);
        v->i = i;
        return v;
    }
    Value* makeString(Kind kind, std::string s)
    {
        Value* v = make(kind);
        v->s = std::move(s);
        return v;
    }
    Value* makeLong(const std::string& bytes)
    {
        if (bytes.empty())
            return makeInt(0);
        if (bytes.size() <= 8) {
            uint64_t u = 0;
            for (size_t k = 0; k < bytes.size(); ++k)
                u |= uint64_t(uint8_t(bytes[k])) << (8 * k);
            if (bytes.size() < 8 && (uint8_t(bytes.back()) & 0x80))
                u |= ~uint64_t(0) << (8 * bytes.size()); // sign-extend
            return makeInt(int64_t(u));
        }
        return makeString(Kind::BigInt, bytes);
    }

    // --- stacks ----------------------------------------------------------------------------------
    void push(Value* v)
    {
        if (m_stack.size() >= kMaxStack)
            fail("the stack grows past " + std::to_string(kMaxStack) + " entries");
        m_stack.push_back(v);
    }
    Value* pop()
    {
        if (m_stack.size() <= floor())
            fail("pops an empty stack");
        Value* v = m_stack.back();
        m_stack.pop_back();
        return v;
    }
    Value* top()
    {
        if (m_stack.size() <= floor())
            fail("reads an empty stack");
        return m_stack.back();
    }
    size_t floor() const { return m_marks.empty() ? 0 : m_marks.back(); }
    // Everything above the last mark, which is removed.
    std::vector<Value*> popMark()
    {
        if (m_marks.empty())
            fail("no MARK to pop to");
        const size_t at = m_marks.back();
        m_marks.pop_back();
        std::vector<Value*> items(m_stack.begin() + std::ptrdiff_t(at), m_stack.end());
        m_stack.resize(at);
        return items;
    }
    Value* makeSequence(Kind kind, std::vector<Value*> items)
    {
        addItems(items.size());
        Value* v = make(kind);
        v->items = std::move(items);
        return v;
    }

    // --- dicts -----------------------------------------------------------------------------------
    // A hashable scalar key as text (Python: 1 == 1.0 == True), or "" for keys compared by identity.
    static std::string keyText(const Value* k)
    {
        switch (k->kind) {
        case Kind::None:
            return "n";
        case Kind::Bool:
            return k->b ? "i1" : "i0";
        case Kind::Int:
            return "i" + std::to_string(k->i);
        case Kind::BigInt:
            return "I" + k->s;
        case Kind::Float:
            // range first: casting a double outside int64 is undefined
            if (k->f > -9.2e18 && k->f < 9.2e18 && k->f == double(int64_t(k->f)))
                return "i" + std::to_string(int64_t(k->f));
            return "f" + std::to_string(k->f);
        case Kind::String:
            return "s" + k->s;
        case Kind::Bytes:
            return "y" + k->s;
        case Kind::Global:
            return "g" + k->s;
        default:
            return "";
        }
    }
    void setItem(Value* dict, Value* key, Value* value)
    {
        if (dict->kind != Kind::Dict)
            fail("SETITEM on " + describeKind(*dict));
        const std::string text = keyText(key);
        if (!text.empty()) {
            auto& index = m_dictIndex[dict];
            const auto [it, inserted] = index.emplace(text, dict->entries.size());
            if (!inserted) {
                dict->entries[it->second].second = value; // Python keeps the first position
                return;
            }
            addCopiedBytes(text.size() + 64); // the key's text and its node in the index
        }
        addItems(2);
        dict->entries.emplace_back(key, value);
    }

    // --- globals, REDUCE, persistent ids ----------------------------------------------------------
    Value* makeGlobal(const std::string& module, const std::string& name)
    {
        const GlobalInfo info = classifyGlobal(module, name);
        const std::string full = module + "." + name;
        if (info.role == GlobalRole::None) {
            if (module == "torch" && name.size() > 7 && name.compare(name.size() - 7, 7, "Storage") == 0)
                throw Error(m_source + ": refused: the pickle uses " + full
                    + ", a storage type the workbench does not read (float, integer and bool only)");
            refuseGlobal(full);
        }
        Value* v = makeString(Kind::Global, full);
        return v;
    }

    static int64_t intArg(const Value* v, bool* ok)
    {
        if (v->kind == Kind::Int)
            return v->i;
        if (v->kind == Kind::Bool)
            return v->b ? 1 : 0;
        *ok = false;
        return 0;
    }

    std::vector<int64_t> intTuple(const Value* v, const char* what)
    {
        if (v->kind != Kind::Tuple && v->kind != Kind::List)
            fail(std::string("tensor ") + what + " is " + describeKind(*v) + ", not a tuple");
        if (v->items.size() > kMaxDims)
            fail(std::string("tensor ") + what + " has " + std::to_string(v->items.size()) + " dimensions");
        std::vector<int64_t> out;
        for (const Value* item : v->items) {
            bool ok = true;
            out.push_back(intArg(item, &ok));
            if (!ok)
                fail(std::string("tensor ") + what + " holds " + describeKind(*item) + ", not an int");
        }
        return out;
    }

    Value* rebuildTensor(const std::string& fn, const std::vector<Value*>& args)
    {
        const bool v2 = fn == "torch._utils._rebuild_tensor_v2";
        if (args.size() < 4 || (!v2 && args.size() != 4) || (v2 && args.size() > 7))
            fail(fn + " with " + std::to_string(args.size()) + " arguments");
        if (args[0]->kind != Kind::Storage)
            fail(fn + " on " + describeKind(*args[0]) + ", not a storage");
        bool ok = true;
        const int64_t offset = intArg(args[1], &ok);
        if (!ok)
            fail(fn + " with a storage offset that is " + describeKind(*args[1]));
        Value* t = make(Kind::Tensor);
        t->tensor = std::make_unique<Value::TensorInfo>();
        t->tensor->storage = args[0];
        t->tensor->offset = offset;
        t->tensor->size = intTuple(args[2], "size");
        t->tensor->stride = intTuple(args[3], "stride");
        if (t->tensor->size.size() != t->tensor->stride.size())
            fail(fn + " with " + std::to_string(t->tensor->size.size()) + " sizes but "
                + std::to_string(t->tensor->stride.size()) + " strides");
        return t;
    }

    Value* call(Value* callable, Value* argsValue)
    {
        if (callable->kind != Kind::Global)
            fail("REDUCE calls " + describeKind(*callable) + ", not a global");
        const std::string& fn = callable->s;
        if (classifyGlobal(fn.substr(0, fn.rfind('.')), fn.substr(fn.rfind('.') + 1)).role != GlobalRole::Callable)
            throw Error(m_source + ": refused: the pickle calls " + fn
                + ", which is only accepted as a storage type or dtype; nothing was run");
        if (argsValue->kind != Kind::Tuple)
            fail("REDUCE with " + describeKind(*argsValue) + " as arguments, not a tuple");
        const std::vector<Value*>& args = argsValue->items;
        if (fn == "collections.OrderedDict") {
            Value* d = make(Kind::Dict);
            if (args.size() > 1)
                fail("OrderedDict with " + std::to_string(args.size()) + " arguments");
            if (args.size() == 1) {
                const Value* pairs = args[0];
                if (pairs->kind != Kind::List && pairs->kind != Kind::Tuple)
                    fail("OrderedDict of " + describeKind(*pairs));
                for (Value* pair : pairs->items) {
                    if ((pair->kind != Kind::Tuple && pair->kind != Kind::List) || pair->items.size() != 2)
                        fail("OrderedDict item that is not a (key, value) pair");
                    setItem(d, pair->items[0], pair->items[1]);
                }
            }
            return d;
        }
        if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor")
            return rebuildTensor(fn, args);
        if (fn == "torch._utils._rebuild_parameter" || fn == "torch._utils._rebuild_parameter_with_state") {
            if (args.size() < 3 || args.size() > 4 || args[0]->kind != Kind::Tensor)
                fail(fn + " without a tensor");
            return args[0];
        }
        if (fn == "_codecs.encode") {
            if (args.size() != 2 || args[0]->kind != Kind::String || args[1]->kind != Kind::String
                || (args[1]->s != "latin1" && args[1]->s != "latin-1"))
                fail("_codecs.encode other than (str, 'latin1')");
            std::string out;
            const std::string& in = args[0]->s;
            addCopiedBytes(in.size());
            for (size_t k = 0; k < in.size(); ++k) {
                const uint8_t c = uint8_t(in[k]);
                if (c < 0x80) {
                    out += char(c);
                } else if ((c & 0xE0) == 0xC0 && k + 1 < in.size() && c <= 0xC3) {
                    out += char(((c & 0x1F) << 6) | (uint8_t(in[k + 1]) & 0x3F));
                    ++k;
                } else {
                    fail("_codecs.encode of text outside latin-1");
                }
            }
            return makeString(Kind::Bytes, out);
        }
        // builtins.set / frozenset
        if (args.size() > 1)
            fail(fn + " with " + std::to_string(args.size()) + " arguments");
        if (args.size() == 1 && args[0]->kind != Kind::List && args[0]->kind != Kind::Tuple
            && args[0]->kind != Kind::Set)
            fail(fn + " of " + describeKind(*args[0]));
        return makeSequence(Kind::Set, args.empty() ? std::vector<Value*> {} : args[0]->items);
    }

    Value* persistentLoad(const Value* pid)
    {
        if (pid->kind != Kind::Tuple || pid->items.empty() || pid->items[0]->kind != Kind::String)
            fail("a persistent id that is " + describeKind(*pid) + ", not a ('storage', ...) tuple");
        if (pid->items[0]->s != "storage")
            fail("a persistent id of type '" + pid->items[0]->s + "', not 'storage'");
        if (pid->items.size() != 5)
            fail("a storage persistent id with " + std::to_string(pid->items.size()) + " fields, not 5");
        const Value* type = pid->items[1];
        const Value* key = pid->items[2];
        const Value* location = pid->items[3];
        const Value* numel = pid->items[4];
        if (type->kind != Kind::Global)
            fail("a storage whose type is " + describeKind(*type));
        const size_t dot = type->s.rfind('.');
        const GlobalInfo info = classifyGlobal(type->s.substr(0, dot), type->s.substr(dot + 1));
        if (info.role != GlobalRole::StorageType && info.role != GlobalRole::DType)
            fail("a storage whose type is " + type->s);
        if (key->kind != Kind::String && key->kind != Kind::Int)
            fail("a storage whose key is " + describeKind(*key));
        if (location->kind != Kind::String)
            fail("a storage whose location is " + describeKind(*location));
        if (numel->kind != Kind::Int || numel->i < 0)
            fail("a storage whose size is not a non-negative int");
        Value* v = make(Kind::Storage);
        v->storage = std::make_unique<Value::StorageInfo>();
        v->storage->dtype = info.dtype;
        v->storage->key = key->kind == Kind::String ? key->s : std::to_string(key->i);
        v->storage->location = location->s;
        v->storage->numel = numel->i;
        return v;
    }

    // --- the opcodes -----------------------------------------------------------------------------
    void memoPut(uint64_t index)
    {
        Value* v = top();
        if (m_memo.size() >= kMaxMemo && !m_memo.count(index))
            fail("stores more than " + std::to_string(kMaxMemo) + " memo entries");
        account(48); // a node of the memo
        m_memo[index] = v;
    }
    void memoGet(uint64_t index)
    {
        const auto it = m_memo.find(index);
        if (it == m_memo.end())
            fail("reads memo entry " + std::to_string(index) + ", which was never stored");
        push(it->second);
    }

    void appendTo(Value* list, const std::vector<Value*>& items)
    {
        if (list->kind == Kind::List || (list->kind == Kind::Set && m_addingToSet)) {
            addItems(items.size());
            list->items.insert(list->items.end(), items.begin(), items.end());
            return;
        }
        fail((m_addingToSet ? "ADDITEMS on " : "APPEND on ") + describeKind(*list));
    }

    void step(uint8_t op)
    {
        switch (op) {
        case 0x80: { // PROTO
            const uint64_t proto = readLE(1);
            if (proto > 5)
                fail("pickle protocol " + std::to_string(proto) + " (at most 5 exists)");
            break;
        }
        case 0x95: { // FRAME: a length hint only
            const uint64_t n = readLE(8);
            if (n > m_size - m_pos)
                fail("a frame of " + std::to_string(n) + " bytes exceeds the bytes left");
            break;
        }
        case '(': // MARK
            if (m_marks.size() >= kMaxMarks)
                fail("more than " + std::to_string(kMaxMarks) + " nested marks");
            m_marks.push_back(m_stack.size());
            break;
        case '0': // POP
            if (m_stack.size() == floor() && !m_marks.empty())
                m_marks.pop_back(); // Python's POP of a mark
            else
                pop();
            break;
        case '1': // POP_MARK
            popMark();
            break;
        case '2': // DUP
            push(top());
            break;
        case 'N':
            push(constant(0));
            break;
        case 0x88: // NEWTRUE
            push(constant(1));
            break;
        case 0x89: // NEWFALSE
            push(constant(2));
            break;
        case 'K': // BININT1
            push(makeInt(int64_t(readLE(1))));
            break;
        case 'M': // BININT2
            push(makeInt(int64_t(readLE(2))));
            break;
        case 'J': // BININT
            push(makeInt(int64_t(int32_t(uint32_t(readLE(4))))));
            break;
        case 0x8a: // LONG1
            push(makeLong(readBytes(readLE(1))));
            break;
        case 0x8b: // LONG4
            push(makeLong(readBytes(readLE(4))));
            break;
        case 'G': { // BINFLOAT: big-endian IEEE double
            const uint8_t* p = take(8);
            uint64_t u = 0;
            for (int k = 0; k < 8; ++k)
                u = (u << 8) | p[k];
            Value* v = make(Kind::Float);
            std::memcpy(&v->f, &u, 8);
            push(v);
            break;
        }
        case 'X': // BINUNICODE
            push(makeString(Kind::String, readBytes(readLE(4))));
            break;
        case 0x8c: // SHORT_BINUNICODE
            push(makeString(Kind::String, readBytes(readLE(1))));
            break;
        case 0x8d: // BINUNICODE8
            push(makeString(Kind::String, readBytes(readLE(8))));
            break;
        case 'T': // BINSTRING (Python 2 str)
            push(makeString(Kind::String, readBytes(readLE(4))));
            break;
        case 'U': // SHORT_BINSTRING
            push(makeString(Kind::String, readBytes(readLE(1))));
            break;
        case 'C': // SHORT_BINBYTES
            push(makeString(Kind::Bytes, readBytes(readLE(1))));
            break;
        case 'B': // BINBYTES
            push(makeString(Kind::Bytes, readBytes(readLE(4))));
            break;
        case 0x8e: // BINBYTES8
            push(makeString(Kind::Bytes, readBytes(readLE(8))));
            break;
        case ')':
            push(make(Kind::Tuple));
            break;
        case ']':
            push(make(Kind::List));
            break;
        case '}':
            push(make(Kind::Dict));
            break;
        case 0x8f: // EMPTY_SET
            push(make(Kind::Set));
            break;
        case 't': // TUPLE
            push(makeSequence(Kind::Tuple, popMark()));
            break;
        case 0x85: // TUPLE1
        case 0x86: // TUPLE2
        case 0x87: { // TUPLE3
            const size_t n = size_t(op - 0x84);
            if (m_stack.size() < floor() + n)
                fail("TUPLE" + std::to_string(n) + " with fewer than " + std::to_string(n) + " values");
            std::vector<Value*> items(m_stack.end() - std::ptrdiff_t(n), m_stack.end());
            m_stack.resize(m_stack.size() - n);
            push(makeSequence(Kind::Tuple, std::move(items)));
            break;
        }
        case 'l': // LIST
            push(makeSequence(Kind::List, popMark()));
            break;
        case 0x91: // FROZENSET
            push(makeSequence(Kind::Set, popMark()));
            break;
        case 'd': { // DICT
            const std::vector<Value*> items = popMark();
            if (items.size() % 2)
                fail("DICT with an odd number of values");
            Value* d = make(Kind::Dict);
            for (size_t k = 0; k < items.size(); k += 2)
                setItem(d, items[k], items[k + 1]);
            push(d);
            break;
        }
        case 'a': { // APPEND
            Value* item = pop();
            m_addingToSet = false;
            appendTo(top(), { item });
            break;
        }
        case 'e': { // APPENDS
            const std::vector<Value*> items = popMark();
            m_addingToSet = false;
            appendTo(top(), items);
            break;
        }
        case 0x90: { // ADDITEMS
            const std::vector<Value*> items = popMark();
            m_addingToSet = true;
            appendTo(top(), items);
            break;
        }
        case 's': { // SETITEM
            Value* value = pop();
            Value* key = pop();
            setItem(top(), key, value);
            break;
        }
        case 'u': { // SETITEMS
            const std::vector<Value*> items = popMark();
            if (items.size() % 2)
                fail("SETITEMS with an odd number of values");
            Value* d = top();
            for (size_t k = 0; k < items.size(); k += 2)
                setItem(d, items[k], items[k + 1]);
            break;
        }
        case 'q': // BINPUT
            memoPut(readLE(1));
            break;
        case 'r': // LONG_BINPUT
            memoPut(readLE(4));
            break;
        case 0x94: // MEMOIZE
            memoPut(m_memo.size());
            break;
        case 'h': // BINGET
            memoGet(readLE(1));
            break;
        case 'j': // LONG_BINGET
            memoGet(readLE(4));
            break;
        case 'c': { // GLOBAL
            std::string module = readLine();
            std::string name = readLine();
            push(makeGlobal(module, name));
            break;
        }
        case 0x93: { // STACK_GLOBAL
            Value* name = pop();
            Value* module = pop();
            if (module->kind != Kind::String || name->kind != Kind::String)
                fail("STACK_GLOBAL of " + describeKind(*module) + " and " + describeKind(*name));
            push(makeGlobal(module->s, name->s));
            break;
        }
        case 'R': { // REDUCE
            Value* args = pop();
            Value* callable = pop();
            push(call(callable, args));
            break;
        }
        case 0x81: { // NEWOBJ: cls.__new__(cls, *args); only the allow-listed containers
            Value* args = pop();
            Value* cls = pop();
            if (cls->kind == Kind::Global && cls->s != "collections.OrderedDict" && cls->s != "builtins.set"
                && cls->s != "builtins.frozenset" && cls->s != "__builtin__.set" && cls->s != "__builtin__.frozenset")
                throw Error(m_source + ": refused: the pickle instantiates " + cls->s
                    + ", which is not a container; nothing was run");
            Value* obj = call(cls, args);
            if (obj->kind == Kind::Dict)
                obj->entries.clear(); // __new__ does not fill the dict
            push(obj);
            break;
        }
        case 'b': { // BUILD: state on an OrderedDict (e.g. state_dict's `_metadata`) or a tensor; kept aside
            Value* state = pop();
            (void)state;
            const Value* target = top();
            if (target->kind != Kind::Dict && target->kind != Kind::Tensor)
                fail("BUILD on " + describeKind(*target));
            break;
        }
        case 'Q': { // BINPERSID
            const Value* pid = pop();
            push(persistentLoad(pid));
            break;
        }
        default: {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", op);
            const char* name = opcodeName(op);
            fail(std::string("unsupported opcode ") + hex + (name ? std::string(" (") + name + ")" : std::string()));
        }
        }
    }

    const uint8_t* m_data;
    size_t m_size;
    size_t m_pos = 0;
    size_t m_opPos = 0;
    const std::string& m_source;
    std::deque<Value>& m_arena;
    MemoryBudget& m_budget;
    uint64_t m_maxCopies;
    uint64_t m_pending = 0; // bytes accounted but not yet charged
    uint64_t m_items = 0;
    uint64_t m_copied = 0;
    std::vector<Value*> m_stack;
    std::vector<size_t> m_marks;
    std::unordered_map<uint64_t, Value*> m_memo;
    std::unordered_map<const Value*, std::unordered_map<std::string, size_t>> m_dictIndex;
    bool m_addingToSet = false;
    Value* m_constants[3] = { nullptr, nullptr, nullptr };
};

bool validUtf8(const std::string& s)
{
    size_t k = 0;
    while (k < s.size()) {
        const uint8_t c = uint8_t(s[k]);
        size_t n = 0;
        uint32_t cp = 0;
        if (c < 0x80) {
            ++k;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n >= s.size() - k)
            return false; // the sequence runs past the end
        for (size_t j = 1; j <= n; ++j) {
            const uint8_t cc = uint8_t(s[k + j]);
            if ((cc & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        const uint32_t min[] = { 0, 0x80, 0x800, 0x10000 };
        if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        k += n + 1;
    }
    return true;
}

} // namespace

std::string describeKind(const Value& value)
{
    switch (value.kind) {
    case Kind::None:
        return "None";
    case Kind::Bool:
        return "a bool";
    case Kind::Int:
    case Kind::BigInt:
        return "an int";
    case Kind::Float:
        return "a float";
    case Kind::String:
        return "a string";
    case Kind::Bytes:
        return "bytes";
    case Kind::Tuple:
        return "a tuple";
    case Kind::List:
        return "a list";
    case Kind::Set:
        return "a set";
    case Kind::Dict:
        return "a dict";
    case Kind::Global:
        return value.s;
    case Kind::Storage:
        return "a storage";
    case Kind::Tensor:
        return "a tensor";
    }
    return "a value";
}

Unpickled unpickle(const uint8_t* data, size_t size, const std::string& source, MemoryBudget& budget)
{
    Unpickled out;
    Machine machine(data, size, source, out.m_arena, budget);
    out.m_root = machine.run();
    return out;
}

Unpickled unpickle(const uint8_t* data, size_t size, const std::string& source)
{
    MemoryBudget budget(source);
    return unpickle(data, size, source, budget);
}

// --- writer --------------------------------------------------------------------------------------

PickleWriter::PickleWriter()
{
    m_out += '\x80';
    m_out += '\x02';
}

void PickleWriter::mark()
{
    m_out += '(';
}
void PickleWriter::stop()
{
    m_out += '.';
}
void PickleWriter::none()
{
    m_out += 'N';
}
void PickleWriter::boolean(bool value)
{
    m_out += value ? '\x88' : '\x89';
}
void PickleWriter::emptyTuple()
{
    m_out += ')';
}
void PickleWriter::emptyDict()
{
    m_out += '}';
}
void PickleWriter::tuple()
{
    m_out += 't';
}
void PickleWriter::reduce()
{
    m_out += 'R';
}
void PickleWriter::binpersid()
{
    m_out += 'Q';
}
void PickleWriter::setitems()
{
    m_out += 'u';
}

namespace {
void appendLE(std::string& out, uint64_t v, int n)
{
    for (int k = 0; k < n; ++k)
        out += char((v >> (8 * k)) & 0xFF);
}
} // namespace

void PickleWriter::integer(int64_t value)
{
    if (value >= 0 && value < 256) {
        m_out += 'K';
        appendLE(m_out, uint64_t(value), 1);
    } else if (value >= 0 && value < 65536) {
        m_out += 'M';
        appendLE(m_out, uint64_t(value), 2);
    } else if (value >= INT32_MIN && value <= INT32_MAX) {
        m_out += 'J';
        appendLE(m_out, uint64_t(uint32_t(int32_t(value))), 4);
    } else {
        // LONG1: minimal little-endian two's complement (as pickle's encode_long).
        std::string bytes;
        appendLE(bytes, uint64_t(value), 8);
        while (bytes.size() > 1) {
            const uint8_t last = uint8_t(bytes.back());
            const uint8_t prev = uint8_t(bytes[bytes.size() - 2]);
            if ((last == 0x00 && !(prev & 0x80)) || (last == 0xFF && (prev & 0x80)))
                bytes.pop_back();
            else
                break;
        }
        m_out += '\x8a';
        m_out += char(bytes.size());
        m_out += bytes;
    }
}

void PickleWriter::intTuple(const std::vector<int64_t>& values)
{
    if (values.empty()) {
        emptyTuple();
        return;
    }
    if (values.size() > 3)
        mark();
    for (int64_t v : values)
        integer(v);
    if (values.size() > 3)
        tuple();
    else
        m_out += char(0x84 + values.size()); // TUPLE1, TUPLE2, TUPLE3
}

void PickleWriter::string(const std::string& utf8)
{
    if (!validUtf8(utf8))
        throw Error("pickle: the name '" + utf8 + "' is not valid UTF-8");
    if (utf8.size() > UINT32_MAX)
        throw Error("pickle: a string of " + std::to_string(utf8.size()) + " bytes is too long");
    m_out += 'X';
    appendLE(m_out, utf8.size(), 4);
    m_out += utf8;
}

void PickleWriter::global(const std::string& module, const std::string& name)
{
    m_out += 'c';
    m_out += module;
    m_out += '\n';
    m_out += name;
    m_out += '\n';
}

void PickleWriter::put(uint32_t memo_index)
{
    if (memo_index < 256) {
        m_out += 'q';
        appendLE(m_out, memo_index, 1);
    } else {
        m_out += 'r';
        appendLE(m_out, memo_index, 4);
    }
}

void PickleWriter::get(uint32_t memo_index)
{
    if (memo_index < 256) {
        m_out += 'h';
        appendLE(m_out, memo_index, 1);
    } else {
        m_out += 'j';
        appendLE(m_out, memo_index, 4);
    }
}

} // namespace icl::torch_pickle
