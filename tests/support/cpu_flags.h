#pragma once
// The CPU's feature flags as Linux lists them in /proc/cpuinfo: a source independent of the compiler's
// __builtin_cpu_supports, which the code under test uses. Depends on the standard library only.

#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>
#include <string>

namespace icl::test {

/// The flags of the first processor in /proc/cpuinfo ("avx2", "avx512f", …); empty where there is no such
/// file or line.
inline std::set<std::string> cpuinfoFlags()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("flags", 0) != 0)
            continue;
        std::istringstream words(line.substr(line.find(':') + 1));
        std::set<std::string> flags;
        for (std::string w; words >> w;)
            flags.insert(w);
        return flags;
    }
    return {};
}

/// True when /proc/cpuinfo lists every flag in `names`.
inline bool cpuinfoHas(std::initializer_list<const char*> names)
{
    const std::set<std::string> flags = cpuinfoFlags();
    for (const char* n : names)
        if (flags.count(n) == 0)
            return false;
    return true;
}

} // namespace icl::test
