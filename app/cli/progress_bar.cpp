#include "progress_bar.h"

#include "core/io/display_text.h"

#include <cstdio>
#include <unistd.h>

namespace icl::cli {

ProgressBar::ProgressBar(std::string label)
    : m_label(std::move(label))
    , m_enabled(::isatty(STDERR_FILENO) != 0)
    , m_start(std::chrono::steady_clock::now())
    , m_last(m_start - std::chrono::seconds(1))
{
}

ProgressBar::~ProgressBar()
{
    finish();
}

std::function<bool(int64_t, int64_t)> ProgressBar::callback()
{
    return [this](int64_t done, int64_t total) {
        update(done, total);
        return true;
    };
}

void ProgressBar::update(int64_t done, int64_t total, const std::string& detail)
{
    if (!m_enabled || total <= 0)
        return;
    const auto now = std::chrono::steady_clock::now();
    if (m_first_done < 0) {
        m_first_done = done;
        m_start = now;
    }
    if (done < total && now - m_last < std::chrono::milliseconds(100))
        return;
    m_last = now;
    const double frac = std::min(1.0, double(done) / double(total));
    const int width = 30, filled = int(frac * width);
    const double secs = std::chrono::duration<double>(now - m_start).count();
    const int64_t progressed = done - m_first_done;
    std::string eta = "--:--";
    if (progressed > 0 && done < total) {
        const int rest = int(secs / double(progressed) * double(total - done));
        char buf[32];
        std::snprintf(buf, sizeof buf, "%d:%02d", rest / 60, rest % 60);
        eta = buf;
    } else if (done >= total) {
        eta = "0:00";
    }
    std::string bar(filled, '#');
    bar += std::string(width - filled, '.');
    std::fprintf(stderr, "\r\033[K%s [%s] %lld/%lld %3d%% ETA %s %s", m_label.c_str(), bar.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total), int(frac * 100), eta.c_str(),
                 escapeForDisplay(detail).c_str()); // a detail may name a file's tensor
    std::fflush(stderr);
    m_drawn = true;
}

void ProgressBar::finish()
{
    if (m_enabled && m_drawn) {
        std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
    }
    m_drawn = false;
}

} // namespace icl::cli
