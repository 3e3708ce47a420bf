#include "app/gui/job_tracker.h"

namespace icl::gui {

JobTracker::Ticket JobTracker::newTicket()
{
    stopLatest(); // the previous request is superseded
    Ticket t;
    t.generation = ++m_generation;
    t.stop = std::make_shared<std::atomic<bool>>(false);
    m_stop = t.stop;
    return t;
}

void JobTracker::stopLatest()
{
    if (m_stop)
        *m_stop = true;
}

} // namespace icl::gui
