// The page protocols of app/gui/analysis_page.h: compute only when shown and stale, never for a run the page does
// not apply to, drop superseded results, cancel to a stale page; run on request: never on its own, a new file stops
// the running request.

#include "app/gui/analysis_page.h"
#include "app/gui/request_run.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <QLabel>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/support/gui_helpers.h"

namespace {
using icl::test::waitIdle;

constexpr int kTimeoutMs = 20000;

/// A page whose computation returns the checkpoint step it was asked for, once `open` is set; it reports
/// progress (and so notices a stop) while it waits.
class StepPage : public icl::gui::AnalysisPage {
public:
    StepPage()
        : AnalysisPage(QStringLiteral("step"))
    {
    }

    bool applies = true;
    std::atomic<bool> open { true };
    std::vector<qint64> requested; ///< m_step at each compute()
    std::vector<qint64> shown;     ///< results that reached the GUI thread

    using AnalysisPage::requestCompute;

protected:
    bool bind(const icl::RunSummary&, QString* why) override
    {
        if (!applies)
            *why = QStringLiteral("not for this run");
        return applies;
    }
    void compute() override
    {
        const Ticket t = newTicket();
        const qint64 step = m_step;
        requested.push_back(step);
        const Progress progress = progressReporter(t, QStringLiteral("step"));
        submit<qint64>(
            1, QStringLiteral("step"), t,
            [this, step, progress] {
                while (!open) {
                    if (!progress(0, 1))
                        throw icl::Error("cancelled");
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
                return step;
            },
            [this](const qint64& s) { shown.push_back(s); });
    }
};

/// A page that runs only on request: records what the protocol tells it; its Run is a RequestRun.
class OnRequestPage : public icl::gui::AnalysisPage {
public:
    OnRequestPage()
        : AnalysisPage(QStringLiteral("onRequest"), nullptr, Protocol::RunOnRequest)
        , run(new icl::gui::RequestRun(this, QStringLiteral("onRequest"), this, QStringLiteral("Run"), QString(),
              QStringLiteral("Work"), QStringLiteral("steps"), [] {}))
    {
    }

    icl::gui::RequestRun* run;
    int binds = 0;
    int computes = 0;
    std::vector<std::pair<qint64, bool>> checkpoints; ///< (m_step, changed) at each checkpointChanged

protected:
    bool bind(const icl::RunSummary&, QString*) override
    {
        ++binds;
        return true;
    }
    void checkpointChanged(bool changed) override { checkpoints.emplace_back(m_step, changed); }
    void compute() override { ++computes; }
};

icl::RunSummary run()
{
    icl::RunSummary s;
    s.path = "run.h5"; // never opened: the page's computation is its own
    return s;
}

TEST(AnalysisPage, ComputesOnlyWhenShownAndStale)
{
    StepPage page;
    page.showExperiment(run(), 10);
    EXPECT_TRUE(page.requested.empty()) << "a page that is not shown does not compute";
    page.setActive(true);
    ASSERT_TRUE(waitIdle(page));
    EXPECT_EQ(page.requested, std::vector<qint64>({ 10 }));
    EXPECT_EQ(page.shown, std::vector<qint64>({ 10 }));

    page.setActive(false);
    page.setActive(true);
    page.selectCheckpoint(10);
    ASSERT_TRUE(waitIdle(page));
    EXPECT_EQ(page.requested.size(), 1u) << "nothing changed: the shown result is current";

    page.setActive(false);
    page.selectCheckpoint(20);
    EXPECT_EQ(page.requested.size(), 1u) << "hidden: the new checkpoint waits";
    page.setActive(true);
    ASSERT_TRUE(waitIdle(page));
    EXPECT_EQ(page.shown, std::vector<qint64>({ 10, 20 }));

    page.requestCompute(); // a setting changed
    ASSERT_TRUE(waitIdle(page));
    EXPECT_EQ(page.shown, std::vector<qint64>({ 10, 20, 20 }));
}

/// A page that draws the run's training curves: records how many checkpoints each redraw saw.
class FollowingPage : public StepPage {
public:
    FollowingPage()
    {
        followTrainingWith([this] { redraws.push_back(m_summary.checkpoints.size()); });
    }
    std::vector<size_t> redraws;
};

icl::RunSummary withCheckpoints(icl::RunSummary s, std::initializer_list<int64_t> steps)
{
    for (int64_t step : steps) {
        s.checkpoints.emplace_back();
        s.checkpoints.back().step = step;
    }
    return s;
}

TEST(AnalysisPage, TrainingCurvesRedrawOnlyOnAPageThatFollowsTraining)
{
    FollowingPage following;
    following.setActive(true);
    following.showExperiment(run(), 10);
    ASSERT_TRUE(waitIdle(following));
    following.updateTrainingCurves(withCheckpoints(run(), { 10, 20 }));
    EXPECT_EQ(following.redraws, std::vector<size_t>({ 2 })) << "the bound run's new rows are redrawn";
    EXPECT_EQ(following.requested, std::vector<qint64>({ 10 })) << "a redraw is not a new computation";

    icl::RunSummary other = withCheckpoints(run(), { 5, 30 });
    other.path = "other.h5";
    following.updateTrainingCurves(other); // another run trains: the page shows it at its last checkpoint
    ASSERT_TRUE(waitIdle(following));
    EXPECT_EQ(following.redraws.size(), 1u);
    EXPECT_EQ(following.requested, std::vector<qint64>({ 10, 30 }));

    StepPage still;
    still.setActive(true);
    still.showExperiment(run(), 10);
    ASSERT_TRUE(waitIdle(still));
    still.updateTrainingCurves(other);
    ASSERT_TRUE(waitIdle(still));
    EXPECT_EQ(still.requested, std::vector<qint64>({ 10 })) << "a page that does not follow training ignores it";
}

TEST(AnalysisPage, NeverComputesForARunItDoesNotApplyTo)
{
    StepPage page;
    page.applies = false;
    page.setActive(true);
    page.showExperiment(run(), 10);
    page.selectCheckpoint(20);
    page.requestCompute();
    EXPECT_TRUE(page.requested.empty());
    EXPECT_FALSE(page.isBusy());
}

TEST(AnalysisPage, ASupersededResultIsDroppedAndOnlyTheLatestShown)
{
    StepPage page;
    QSignalSpy started(&page, &StepPage::busyStarted);
    QSignalSpy finished(&page, &StepPage::busyFinished);
    page.open = false;
    page.setActive(true);
    page.showExperiment(run(), 10);
    ASSERT_TRUE(page.isBusy());
    page.selectCheckpoint(20); // the running request (step 10) is stopped, its result dropped
    page.selectCheckpoint(30); // the queued one (step 20) is replaced before it runs
    page.open = true;
    ASSERT_TRUE(waitIdle(page));
    EXPECT_EQ(page.requested, std::vector<qint64>({ 10, 20, 30 }));
    EXPECT_EQ(page.shown, std::vector<qint64>({ 30 }));
    EXPECT_TRUE(page.statusLabel()->text().isEmpty()) << "a superseded request reports nothing: "
                                                      << page.statusLabel()->text().toStdString();
    EXPECT_GE(started.count(), 1);
    EXPECT_EQ(finished.count(), started.count());
}

TEST(AnalysisPage, CancelStopsTheRequestAndLeavesThePageStale)
{
    StepPage page;
    page.open = false;
    page.setActive(true);
    page.showExperiment(run(), 10);
    ASSERT_TRUE(page.isBusy());
    page.cancel();
    ASSERT_TRUE(waitIdle(page));
    EXPECT_TRUE(page.shown.empty());
    EXPECT_TRUE(page.statusLabel()->text().startsWith(QStringLiteral("Cancelled")))
        << page.statusLabel()->text().toStdString();

    page.open = true;
    page.setActive(true); // still stale: showing the page computes again
    ASSERT_TRUE(waitIdle(page));
    EXPECT_EQ(page.shown, std::vector<qint64>({ 10 }));
}

/// A page laid out as a message over its content, as the pages that apply to some runs only.
class MessagePage : public StepPage {
public:
    MessagePage() { m_content = createContent(QStringLiteral("Open a run.")).widget; }
    QWidget* content() const { return m_content; }

protected:
    bool bind(const icl::RunSummary& summary, QString* why) override
    {
        if (!StepPage::bind(summary, why)) {
            showMessage(*why);
            return false;
        }
        showContent();
        return true;
    }

private:
    QWidget* m_content = nullptr;
};

TEST(AnalysisPage, ARunItDoesNotApplyToShowsTheMessageInsteadOfTheContent)
{
    MessagePage page;
    page.resize(400, 300);
    page.show();
    ASSERT_NE(page.messageLabel(), nullptr);
    EXPECT_EQ(page.messageLabel()->objectName(), QStringLiteral("stepMessage"));
    EXPECT_EQ(page.objectName(), QStringLiteral("stepPage"));
    EXPECT_EQ(page.statusLabel()->objectName(), QStringLiteral("stepStatus"));
    EXPECT_TRUE(page.messageLabel()->isVisible()) << "before a run: the message";
    EXPECT_FALSE(page.content()->isVisible());

    page.applies = false;
    page.showExperiment(run(), 10);
    EXPECT_EQ(page.messageLabel()->text(), QStringLiteral("not for this run"));
    EXPECT_TRUE(page.messageLabel()->isVisible());
    EXPECT_FALSE(page.content()->isVisible());

    page.applies = true;
    page.showExperiment(run(), 10);
    EXPECT_FALSE(page.messageLabel()->isVisible());
    EXPECT_TRUE(page.content()->isVisible());
}

} // namespace

TEST(AnalysisPage, ARunOnRequestPageNeverComputesOnItsOwnAndANewFileStopsItsRequest)
{
    OnRequestPage page;
    EXPECT_EQ(page.protocol(), icl::gui::AnalysisPage::Protocol::RunOnRequest);
    page.setActive(true);
    page.showExperiment(run(), 10);
    EXPECT_EQ(page.binds, 1);
    EXPECT_EQ(page.checkpointStep(), 10);
    page.selectCheckpoint(20);
    page.selectCheckpoint(20);
    page.setActive(false);
    page.setActive(true);
    EXPECT_EQ(page.computes, 0) << "nothing runs until Run is pressed";
    EXPECT_EQ(page.checkpoints,
        (std::vector<std::pair<qint64, bool>> { { 10, false }, { 20, true }, { 20, false } }));

    const std::shared_ptr<icl::gui::RunState> state = page.run->start(5); // a request is running
    ASSERT_FALSE(state->stop);
    page.showExperiment(run(), 30);
    EXPECT_TRUE(state->stop) << "a new file stops the running request";
    EXPECT_EQ(page.binds, 2);
    EXPECT_EQ(page.checkpoints.back(), (std::pair<qint64, bool> { 30, false }));
    EXPECT_EQ(page.computes, 0);
}

TEST(JobTracker, ANewRequestStopsAndSupersedesThePreviousOneAndANewFileDropsAll)
{
    QObject context;
    icl::gui::AnalysisRunner runner;
    icl::gui::JobTracker jobs(&context, &runner);
    const icl::gui::JobTracker::Ticket first = jobs.newTicket();
    EXPECT_TRUE(jobs.isCurrent(first));
    EXPECT_FALSE(*first.stop);
    const icl::gui::JobTracker::Ticket second = jobs.newTicket();
    EXPECT_TRUE(*first.stop) << "the superseded request is told to stop";
    EXPECT_FALSE(jobs.isCurrent(first));
    EXPECT_TRUE(jobs.isCurrent(second));
    EXPECT_FALSE(*second.stop);
    jobs.dropAll();
    EXPECT_FALSE(jobs.isCurrent(second)) << "a new file drops every result so far";
    jobs.stopLatest();
    EXPECT_TRUE(*second.stop);

    // A result reaches the GUI thread only while its request is current.
    std::vector<int> shown;
    const icl::gui::JobTracker::Ticket third = jobs.newTicket();
    jobs.submit<int>(1, QStringLiteral("a"), third, [] { return 3; }, [&](const int& v) { shown.push_back(v); }, {});
    const icl::gui::JobTracker::Ticket fourth = jobs.newTicket();
    jobs.submit<int>(2, QStringLiteral("b"), fourth, [] { return 4; }, [&](const int& v) { shown.push_back(v); }, {});
    ASSERT_TRUE(waitIdle(runner));
    EXPECT_EQ(shown, std::vector<int>({ 4 }));
}
