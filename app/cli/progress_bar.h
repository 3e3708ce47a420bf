#pragma once
// A one-line progress bar on stderr, drawn only when stderr is a terminal. Not thread-safe: use
// from the thread that does the work.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace icl::cli {

class ProgressBar {
public:
    explicit ProgressBar(std::string label);
    ~ProgressBar();
    /// Redraws at most every 100 ms (and always at done == total). `detail` is shown after the ETA.
    void update(int64_t done, int64_t total, const std::string& detail = {});
    /// A core progress callback (done, total) that updates this bar and never cancels.
    std::function<bool(int64_t done, int64_t total)> callback();
    /// Clears the line.
    void finish();
    bool enabled() const { return m_enabled; }

private:
    std::string m_label;
    bool m_enabled;
    bool m_drawn = false;
    std::chrono::steady_clock::time_point m_start, m_last;
    int64_t m_first_done = -1;
};

} // namespace icl::cli
