#pragma once
// An environment variable set (or unset) for one scope, for tests of what the environment selects. ctest runs
// every test as its own process, so a change is seen only by that test and the processes it starts.
// Depends on the standard library only. Not thread-safe (setenv): use on the test's own thread.

#include <cstdlib>
#include <optional>
#include <string>

namespace icl::test {

/// Sets `name` to `value` (or, with nullopt, unsets it) and restores the previous state on exit.
class ScopedEnv {
public:
    ScopedEnv(const char* name, std::optional<std::string> value)
        : m_name(name)
    {
        if (const char* old = std::getenv(name))
            m_old = old;
        if (value)
            ::setenv(name, value->c_str(), 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv()
    {
        if (m_old)
            ::setenv(m_name, m_old->c_str(), 1);
        else
            ::unsetenv(m_name);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

} // namespace icl::test
