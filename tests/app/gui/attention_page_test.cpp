// The Attention and Patching pages on real experiment files written by icl::train with tiny configs (a
// 1-layer LSA in the pair layout and a 2-layer, 2-head GPT-2 in the interleaved layout). Expected values
// come from an independent icl::Inspector on the same file (its own samplePrompt / inspect / lens /
// patching calls), never from the pages under test.

#include "app/gui/attention_page.h"
#include "app/gui/patching_page.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QSignalSpy>
#include <QTest>
#include <QXmlStreamReader>

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include "app/gui/main_window.h"
#include "core/types/number_format.h"
#include "core/analysis/inspector.h"
#include "tests/app/gui/pdf_text.h"
#include "core/io/config.h"
#include "core/io/prompt_file.h"
#include "core/training/trainer.h"
#include "widgets/attention_grid.h"
#include "widgets/figure_export.h"
#include "widgets/attention_pattern_view.h"
#include "widgets/bar_chart_view.h"
#include "widgets/checkpoint_timeline.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"
#include "tests/support/tiny_runs.h"
#include "tests/support/qt_files.h"
#include "tests/support/gui_helpers.h"

using icl::gui::AttentionPage;
using icl::gui::MainWindow;
using icl::gui::PatchingPage;

namespace {
using namespace icl::test;

constexpr int kTimeoutMs = 120000;

class AttentionPageTest : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_lsa = icl::test::tinyRun(icl::test::TinyRun::Lsa);
        s_gpt2 = icl::test::tinyRun(icl::test::TinyRun::Gpt2);
    }

    /// Opens `path` on the Attention page and waits for the first inspection.
    static void openOnAttention(MainWindow& window, const std::string& path)
    {
        window.setScripted(true);
        window.show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
        ASSERT_TRUE(window.openExperiment(QString::fromStdString(path)));
        window.showPage<AttentionPage>();
        ASSERT_TRUE(waitIdle(window, kTimeoutMs));
        ASSERT_TRUE(window.page<AttentionPage>()->inspection().has_value())
            << window.page<AttentionPage>()->statusLabel()->text().toStdString();
    }

    /// Waits until the page has re-run the model after an edit.
    static void waitForRerun(MainWindow& window)
    {
        QCoreApplication::processEvents();
        ASSERT_TRUE(waitIdle(window, kTimeoutMs));
    }

    static std::string s_lsa;
    static std::string s_gpt2;
};

std::string AttentionPageTest::s_lsa;
std::string AttentionPageTest::s_gpt2;

/// Data lines of a CSV (no "# key: value" metadata), split into cells.
std::vector<QStringList> csvRows(const QString& path)
{
    std::vector<QStringList> rows;
    for (const QString& line : QString::fromUtf8(readAll(path)).split('\n', Qt::SkipEmptyParts))
        if (!line.startsWith('#'))
            rows.push_back(line.split(','));
    return rows;
}

/// Equal numbers, or both NaN (an unknown query label).
bool sameValue(double a, double b)
{
    return a == b || (std::isnan(a) && std::isnan(b));
}

::testing::AssertionResult samePrompt(const icl::Prompt& got, const icl::Prompt& want)
{
    if (got.x != want.x)
        return ::testing::AssertionFailure() << "x differs";
    if (got.y.size() != want.y.size() || !std::equal(got.y.begin(), got.y.end(), want.y.begin(), sameValue))
        return ::testing::AssertionFailure() << "y differs";
    return ::testing::AssertionSuccess();
}

/// The predictions table equals `want` row by row: names, exact values (Qt::UserRole) and the text shown.
::testing::AssertionResult tableShows(const QTableWidget* table, const icl::Inspection& want)
{
    if (table->rowCount() != int(want.predictions.size()))
        return ::testing::AssertionFailure() << table->rowCount() << " rows, want " << want.predictions.size();
    for (int r = 0; r < table->rowCount(); ++r) {
        const icl::PredictorValue& p = want.predictions[size_t(r)];
        if (table->item(r, 0)->data(Qt::UserRole).toString().toStdString() != p.name)
            return ::testing::AssertionFailure() << "row " << r << " is not " << p.name;
        if (table->item(r, 1)->data(Qt::UserRole).toDouble() != p.prediction)
            return ::testing::AssertionFailure() << p.name << ": " << table->item(r, 1)->data(Qt::UserRole).toDouble()
                                                 << " != " << p.prediction;
        if (table->item(r, 1)->text() != QString::number(p.prediction, 'g', 4)) // 4 significant digits on screen
            return ::testing::AssertionFailure() << p.name << " shows " << table->item(r, 1)->text().toStdString();
        if (!sameValue(table->item(r, 2)->data(Qt::UserRole).toDouble(), p.error))
            return ::testing::AssertionFailure() << p.name << " error differs";
        if (std::isnan(p.error) && table->item(r, 2)->text() != QStringLiteral("—"))
            return ::testing::AssertionFailure() << p.name << ": no error shows " << table->item(r, 2)->text().toStdString();
    }
    return ::testing::AssertionSuccess();
}

} // namespace

TEST_F(AttentionPageTest, HoverTextAndRowChartShowTheIndependentInspection)
{
    for (const std::string& path : { s_lsa, s_gpt2 }) {
        SCOPED_TRACE(path);
        MainWindow window;
        openOnAttention(window, path);
        AttentionPage* page = window.page<AttentionPage>();
        icl::Inspector reference(path);
        const icl::Prompt prompt = reference.samplePrompt(uint64_t(page->promptEditor()->seedChooser()->value()));
        ASSERT_TRUE(samePrompt(page->prompt(), prompt));
        const icl::Inspection want = reference.inspect(prompt);
        EXPECT_EQ(page->inspection()->checkpoint_step, want.checkpoint_step);
        ASSERT_EQ(page->grid()->nLayers(), want.n_layers);
        ASSERT_EQ(page->grid()->nHeads(), want.n_heads);
        EXPECT_TRUE(tableShows(page->predictionTable(), want));

        // Click the last head's thumbnail, like a user.
        const int layer = int(want.n_layers - 1), head = int(want.n_heads - 1);
        QTest::mouseClick(page->grid(), Qt::LeftButton, {}, page->grid()->thumbnailRect(layer, head).center());
        ASSERT_EQ(page->selectedLayer(), layer);
        ASSERT_EQ(page->selectedHead(), head);
        const icl::Matrix& pattern = want.patterns[size_t(layer * want.n_heads + head)];
        icl::widgets::AttentionPatternView* view = page->patternView();
        view->replotNow();
        ASSERT_EQ(view->pattern().rows, pattern.rows);
        ASSERT_EQ(view->pattern().cols, pattern.cols);
        const int T = int(pattern.rows);
        for (const auto& [r, c] : { std::pair<int, int> { T - 1, 0 }, { T - 1, int(pattern.cols) - 1 }, { T / 2, 1 } }) {
            const QPoint at = view->cellCenter(r, c).toPoint();
            QTest::mouseMove(view->plot(), at);
            const QString expected = QString::fromStdString(want.token_labels[size_t(r)]) + " → "
                + QString::fromStdString(want.key_labels[size_t(c)]) + ": " + QString::number(pattern.at(r, c), 'g', 6);
            EXPECT_EQ(view->plot()->toolTip(), expected) << r << "," << c;
        }
        // Clicking a row selects that query token; the bar chart shows its row of the pattern.
        const int row = T / 2;
        QTest::mouseClick(view->plot(), Qt::LeftButton, {}, view->cellCenter(row, 0).toPoint());
        EXPECT_EQ(page->selectedQuery(), row);
        const icl::widgets::BarChart& chart = page->rowChart()->chart();
        ASSERT_EQ(chart.values.size(), size_t(pattern.cols));
        for (int c = 0; c < pattern.cols; ++c)
            EXPECT_EQ(chart.values[size_t(c)], pattern.at(row, c)) << c;
        EXPECT_EQ(chart.labels, want.key_labels);
        // The head table has one sortable row per head with the core's summaries.
        ASSERT_EQ(page->headTable()->rowCount(), int(want.heads.size()));
        page->headTable()->sortItems(2, Qt::DescendingOrder);
        double previous = INFINITY;
        for (int r = 0; r < page->headTable()->rowCount(); ++r) {
            const double entropy = page->headTable()->item(r, 2)->data(Qt::UserRole).toDouble();
            EXPECT_LE(entropy, previous);
            previous = entropy;
            const int l = page->headTable()->item(r, 0)->data(Qt::UserRole).toInt();
            const int h = page->headTable()->item(r, 0)->data(Qt::UserRole + 1).toInt();
            EXPECT_EQ(entropy, want.heads[size_t(l * want.n_heads + h)].entropy);
        }
    }
}

TEST_F(AttentionPageTest, EditsReRunTheModelExactlyLikeTheCore)
{
    MainWindow window;
    openOnAttention(window, s_gpt2);
    AttentionPage* page = window.page<AttentionPage>();
    icl::Inspector reference(s_gpt2);
    icl::Prompt p = reference.samplePrompt(uint64_t(page->promptEditor()->seedChooser()->value()));

    // Edit y_3 in the table.
    QTableWidget* table = page->promptEditor()->promptTable();
    const int yColumn = int(p.dim());
    table->item(2, yColumn)->setText(QStringLiteral("1.5"));
    waitForRerun(window);
    p.y[2] = 1.5;
    ASSERT_TRUE(samePrompt(page->prompt(), p));
    icl::Inspection want = reference.inspect(p);
    EXPECT_TRUE(tableShows(page->predictionTable(), want));
    EXPECT_NE(want.predictions[0].prediction,
              reference.inspect(reference.samplePrompt(uint64_t(page->promptEditor()->seedChooser()->value())))
                  .predictions[0]
                  .prediction)
        << "the edit changes the model's prediction";

    // Edit one x component of the query.
    table->item(int(p.nContext()), 0)->setText(QStringLiteral("-0.75"));
    waitForRerun(window);
    p.x[size_t(p.nContext())][0] = -0.75;
    ASSERT_TRUE(samePrompt(page->prompt(), p));
    EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(p)));

    // Delete example 1, move the new first example down, duplicate example 2.
    table->selectRow(0);
    page->promptEditor()->deleteButton()->click();
    waitForRerun(window);
    p.x.erase(p.x.begin());
    p.y.erase(p.y.begin());
    ASSERT_TRUE(samePrompt(page->prompt(), p));
    EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(p)));
    table->selectRow(0);
    page->promptEditor()->downButton()->click();
    waitForRerun(window);
    std::swap(p.x[0], p.x[1]);
    std::swap(p.y[0], p.y[1]);
    ASSERT_TRUE(samePrompt(page->prompt(), p));
    table->selectRow(1);
    page->promptEditor()->duplicateButton()->click();
    waitForRerun(window);
    p.x.insert(p.x.begin() + 2, p.x[1]);
    p.y.insert(p.y.begin() + 2, p.y[1]);
    ASSERT_TRUE(samePrompt(page->prompt(), p));
    EXPECT_EQ(table->rowCount(), int(p.y.size()));
    EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(p)));

    // A number that does not parse is refused and nothing re-runs.
    table->item(0, yColumn)->setText(QStringLiteral("abc"));
    EXPECT_FALSE(window.isBusy());
    ASSERT_TRUE(samePrompt(page->prompt(), p));

    // Resampling the whole prompt draws the core's prompt for the seed.
    page->promptEditor()->seedChooser()->setValue(5);
    page->promptEditor()->resamplePromptButton()->click();
    waitForRerun(window);
    const icl::Prompt five = reference.samplePrompt(5);
    ASSERT_TRUE(samePrompt(page->prompt(), five));
    EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(five)));
    EXPECT_EQ(table->rowCount(), int(five.y.size()));

    // Resample one row and relabel: the prompt keeps its task instance, the predictions follow.
    table->selectRow(3);
    page->promptEditor()->resampleRowButton()->click();
    waitForRerun(window);
    EXPECT_EQ(page->prompt().x[2], five.x[2]);
    EXPECT_NE(page->prompt().x[3], five.x[3]);
    EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(page->prompt())));
    page->promptEditor()->noiseChooser()->setValue(0.0);
    page->promptEditor()->relabelButton()->click();
    waitForRerun(window);
    const icl::Prompt relabelled = page->prompt();
    for (size_t i = 0; i < relabelled.y.size(); ++i)
        EXPECT_NEAR(relabelled.y[i], reference.trueLabel(relabelled, relabelled.x[i]), 1e-9) << "σ = 0: y = f_w(x)";
    EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(relabelled)));
}

TEST_F(AttentionPageTest, FollowsTheCheckpointTimelineAndAblation)
{
    MainWindow window;
    openOnAttention(window, s_lsa);
    AttentionPage* page = window.page<AttentionPage>();
    const qint64 first = window.timeline()->steps().front();
    ASSERT_EQ(window.selectCheckpoint(first), first);
    waitForRerun(window);
    ASSERT_EQ(page->inspection()->checkpoint_step, first);
    icl::Inspector reference(s_lsa, first);
    const icl::Inspection want = reference.inspect(page->prompt());
    EXPECT_TRUE(tableShows(page->predictionTable(), want));
    EXPECT_EQ(page->patternView()->pattern().data, want.patterns[0].data);

    // Zero-ablating the (only) head of the 1-layer LSA.
    page->promptEditor()->ablationChooser()->setCurrentIndex(1);
    waitForRerun(window);
    icl::Ablation a;
    a.kind = icl::Ablation::Kind::Zero;
    a.name = "attn.out.0";
    a.head = 0;
    EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(page->prompt(), { a })));
    EXPECT_EQ(page->metadata().at("ablation"), "zero attn.out.0 head 0");
}

TEST_F(AttentionPageTest, ExportsCarryLabelsLegendMetadataAndThePlottedData)
{
    MainWindow window;
    openOnAttention(window, s_gpt2);
    AttentionPage* page = window.page<AttentionPage>();
    icl::Inspector reference(s_gpt2);
    const icl::Prompt prompt = page->prompt();
    const icl::Inspection want = reference.inspect(prompt);
    const icl::RegressionLens lens = reference.lens(prompt);
    QTemporaryDir dir;
    std::string error;

    // Large pattern: axis titles, colour legend, token labels and caption in the SVG; the matrix in the CSV.
    icl::widgets::AttentionPatternView* view = page->patternView();
    const QString svg = dir.filePath("pattern.svg");
    ASSERT_TRUE(view->exportTo(svg.toStdString(), "svg", 300, &error)) << error;
    const QString text = svgText(svg);
    EXPECT_TRUE(containsAll(text,
        { "key token", "query token", "attention weight", "query", "experiment: gpt2.h5",
            QStringLiteral("checkpoint_step: %1").arg(want.checkpoint_step),
                QStringLiteral("seed: %1").arg(prompt.seed) }));
    const QString pdf = dir.filePath("pattern.pdf");
    ASSERT_TRUE(view->exportTo(pdf.toStdString(), "pdf", 300, &error)) << error;
    const QByteArray pdfBytes = readAll(pdf);
    EXPECT_TRUE(pdfBytes.startsWith("%PDF"));
    EXPECT_TRUE(pdfBytes.contains("<icl:experiment>gpt2.h5</icl:experiment>"));
    EXPECT_TRUE(pdfBytes.contains("<icl:prompt>N = 6, d = 4</icl:prompt>"));
    const QString pdfText = icl::test::pdfText(pdf);
    for (const char* label : { "key token", "query token", "attention weight", "Attention pattern, layer 0, head 0",
             "experiment: gpt2.h5" })
        EXPECT_TRUE(pdfText.contains(icl::test::withoutSpaces(QString::fromUtf8(label))))
            << label << " in " << pdfText.toStdString();
    const QString csv = dir.filePath("pattern.csv");
    ASSERT_TRUE(view->exportTo(csv.toStdString(), "csv", 300, &error)) << error;
    const icl::Matrix& pattern = want.patterns[0];
    const auto rows = csvRows(csv);
    ASSERT_EQ(rows.size(), size_t(pattern.rows + 1));
    for (int64_t r = 0; r < pattern.rows; ++r) {
        ASSERT_EQ(rows[size_t(r + 1)].size(), pattern.cols + 1);
        EXPECT_EQ(rows[size_t(r + 1)][0].toStdString(), want.token_labels[size_t(r)]);
        for (int64_t c = 0; c < pattern.cols; ++c)
            EXPECT_NEAR(rows[size_t(r + 1)][c + 1].toDouble(), pattern.at(r, c), 1e-8 * std::max(1.0, std::abs(pattern.at(r, c))));
    }

    // The prompt itself, exactly (an edited prompt stays reproducible): header x_1,…,x_d,y, the query last.
    const QString promptCsv = dir.filePath("prompt.csv");
    ASSERT_TRUE(page->exportPrompt(promptCsv.toStdString(), &error)) << error;
    const auto promptRows = csvRows(promptCsv);
    ASSERT_EQ(promptRows.size(), prompt.y.size() + 1);
    EXPECT_EQ(promptRows[0], (QStringList { "x_1", "x_2", "x_3", "x_4", "y" }));
    for (size_t r = 0; r < prompt.y.size(); ++r) {
        ASSERT_EQ(promptRows[r + 1].size(), prompt.dim() + 1);
        for (size_t c = 0; c < size_t(prompt.dim()); ++c)
            EXPECT_EQ(promptRows[r + 1][int(c)].toDouble(), prompt.x[r][c]);
        EXPECT_EQ(promptRows[r + 1].back().toDouble(), prompt.y[r]);
    }
    EXPECT_TRUE(readAll(promptCsv).contains(QStringLiteral("# seed: %1\n").arg(prompt.seed).toUtf8()));
    EXPECT_TRUE(readAll(promptCsv).contains("# experiment: gpt2.h5\n"));

    // Query-row bar chart.
    const QString barCsv = dir.filePath("row.csv");
    ASSERT_TRUE(page->rowChart()->exportTo(barCsv.toStdString(), "csv", 300, &error)) << error;
    const auto barRows = csvRows(barCsv);
    ASSERT_EQ(barRows.size(), size_t(pattern.cols + 1));
    for (int64_t c = 0; c < pattern.cols; ++c)
        EXPECT_NEAR(barRows[size_t(c + 1)][1].toDouble(), pattern.at(pattern.rows - 1, c), 1e-8);
    const QString barSvg = dir.filePath("row.svg");
    ASSERT_TRUE(page->rowChart()->exportTo(barSvg.toStdString(), "svg", 300, &error)) << error;
    EXPECT_TRUE(svgText(barSvg).contains("attention weight"));
    EXPECT_TRUE(svgText(barSvg).contains("key token"));

    // Regression lens: model line and reference lines in the legend, values in the CSV.
    const icl::Figure& figure = page->lensPlot()->figure();
    ASSERT_FALSE(figure.series.empty());
    EXPECT_EQ(figure.series[0].y, lens.prediction);
    EXPECT_DOUBLE_EQ(lens.prediction.back(), want.predictions[0].prediction) << "lens ends at the model's ŷ";
    // GD after k steps at x = k: the core's gd_k reference for every layer count k = 1 … L.
    const icl::Series& gd = figure.series[1];
    ASSERT_EQ(gd.x.size(), lens.prediction.size());
    EXPECT_EQ(gd.y[0], 0.0) << "the zero predictor at the embedding";
    for (const icl::PredictorValue& r : lens.references)
        for (size_t k = 1; k < gd.x.size(); ++k)
            if (r.name == "gd_" + std::to_string(k))
                EXPECT_EQ(gd.y[k], r.prediction) << r.name;
    const QString lensSvg = dir.filePath("lens.svg");
    ASSERT_TRUE(icl::widgets::exportFigure(figure, lensSvg.toStdString(), "svg", 300, &error)) << error;
    const QString lensText = svgText(lensSvg);
    EXPECT_TRUE(containsAll(
        lensText, { "model (regression lens)", "GD-k (k = layers)", "ridge", "least squares", "prediction ŷ_q" }));
    const QString lensPdf = dir.filePath("lens.pdf");
    ASSERT_TRUE(icl::widgets::exportFigure(figure, lensPdf.toStdString(), "pdf", 300, &error)) << error;
    const QString lensPdfText = icl::test::pdfText(lensPdf);
    for (const char* label : { "model (regression lens)", "GD-k (k = layers)", "ridge", "least squares", "prediction ŷ_q",
             "residual stream after" })
        EXPECT_TRUE(lensPdfText.contains(icl::test::withoutSpaces(QString::fromUtf8(label))))
            << label << " in " << lensPdfText.toStdString();
    const QString lensCsv = dir.filePath("lens.csv");
    ASSERT_TRUE(icl::widgets::exportFigure(figure, lensCsv.toStdString(), "csv", 300, &error)) << error;
    const auto lensRows = csvRows(lensCsv);
    ASSERT_GE(lensRows.size(), lens.prediction.size() + 1);
    for (size_t i = 0; i < lens.prediction.size(); ++i)
        EXPECT_NEAR(lensRows[i + 1][1].toDouble(), lens.prediction[i], 1e-8 * std::max(1.0, std::abs(lens.prediction[i])));
}

TEST_F(AttentionPageTest, PatchingHeatmapEqualsAnIndependentPatchingOfTheEditedPrompt)
{
    MainWindow window;
    openOnAttention(window, s_gpt2);
    AttentionPage* attention = window.page<AttentionPage>();
    // An edit on the Attention page reaches the Patching page's clean prompt.
    attention->promptEditor()->promptTable()->item(1, int(attention->prompt().dim()))->setText(QStringLiteral("0.875"));
    waitForRerun(window);
    const icl::Prompt clean = attention->prompt();
    ASSERT_EQ(clean.y[1], 0.875);

    window.showPage<PatchingPage>();
    PatchingPage* page = window.page<PatchingPage>();
    EXPECT_TRUE(page->sharedPromptCheck()->isChecked());
    // Before Run the empty heatmap says so in its title, not only in the side panel.
    EXPECT_EQ(page->heatmap()->matrix().rows, 0);
    EXPECT_EQ(page->heatmap()->matrix().name, "No patching result yet: press Run patching");
    icl::Inspector reference(s_gpt2);
    for (const char* corruption : { "change_label", "shuffle_pairs", "different_w" }) {
        SCOPED_TRACE(corruption);
        page->corruptionChooser()->setCurrentIndex(page->corruptionChooser()->findData(QString(corruption)));
        page->exampleChooser()->setValue(2);
        page->seedChooser()->setValue(11);
        QSignalSpy firstRows(page, &PatchingPage::firstLookShown);
        page->runButton()->click();
        ASSERT_TRUE(waitIdle(window, kTimeoutMs));
        ASSERT_TRUE(page->result().has_value()) << page->statusLabel()->text().toStdString();
        EXPECT_EQ(firstRows.count(), 1); // rows appeared one by one before the full result
        icl::PatchingOptions o;
        o.corruption = icl::corruptionFromName(corruption);
        o.example = 1;
        o.seed = 11;
        const icl::PatchingResult want = reference.patching(clean, o);
        ASSERT_TRUE(samePrompt(page->cleanPrompt(), clean));
        ASSERT_TRUE(samePrompt(page->corruptedPrompt(), reference.corrupt(clean, o)));
        const icl::Matrix& shown = page->heatmap()->matrix();
        ASSERT_EQ(shown.rows, want.effect.rows);
        ASSERT_EQ(shown.cols, want.effect.cols);
        ASSERT_EQ(shown.data.size(), want.effect.data.size());
        for (size_t i = 0; i < shown.data.size(); ++i)
            EXPECT_TRUE(shown.data[i] == want.effect.data[i] || (std::isnan(shown.data[i]) && std::isnan(want.effect.data[i])))
                << i << ": " << shown.data[i] << " vs " << want.effect.data[i];
        EXPECT_EQ(shown.row_labels.size(), size_t(shown.rows));
        EXPECT_EQ(shown.col_labels.back(), "query");
        EXPECT_TRUE(page->summaryLabel()->text().contains(QString::fromStdString(icl::formatSignificant(want.clean_prediction))));
        EXPECT_TRUE(page->summaryLabel()->text().contains(QString::fromStdString(icl::formatSignificant(want.corrupted_prediction))));
        EXPECT_EQ(page->labelTable()->rowCount(), int(clean.y.size()));
        // Hover of a cell gives its effect.
        page->heatmap()->replotNow();
        EXPECT_EQ(page->heatmap()->cellText(0, 1),
            QStringLiteral("row %1, column %2\nvalue = %3")
                .arg(QString::fromStdString(shown.row_labels[0]), QString::fromStdString(shown.col_labels[1]),
                    QString::number(want.effect.at(0, 1), 'g', 6)));
    }

    // Exports: axis titles and legend in the SVG, the effect matrix in the CSV, metadata in both.
    QTemporaryDir dir;
    std::string error;
    const QString svg = dir.filePath("patching.svg");
    ASSERT_TRUE(page->heatmap()->exportTo(svg.toStdString(), "svg", 300, &error)) << error;
    const QString text = svgText(svg);
    EXPECT_TRUE(text.contains("token position")) << text.toStdString();
    EXPECT_TRUE(text.contains("patched residual stream"));
    EXPECT_TRUE(text.contains("patching effect"));
    EXPECT_TRUE(text.contains("corruption: different_w"));
    const QString pdf = dir.filePath("patching.pdf");
    ASSERT_TRUE(page->heatmap()->exportTo(pdf.toStdString(), "pdf", 300, &error)) << error;
    const QString pdfText = icl::test::pdfText(pdf);
    for (const char* label : { "token position", "patched residual stream", "patching effect", "query" })
        EXPECT_TRUE(pdfText.contains(icl::test::withoutSpaces(QString::fromUtf8(label))))
            << label << " in " << pdfText.toStdString();
    const QString csv = dir.filePath("patching.csv");
    ASSERT_TRUE(page->heatmap()->exportTo(csv.toStdString(), "csv", 300, &error)) << error;
    const QString csvText = QString::fromUtf8(readAll(csv));
    EXPECT_TRUE(csvText.contains("# experiment: gpt2.h5"));
    EXPECT_TRUE(csvText.contains("# seed: 11"));
    const auto rows = csvRows(csv);
    const icl::Matrix& shown = page->heatmap()->matrix();
    ASSERT_EQ(rows.size(), size_t(shown.rows + 1));
    for (int64_t r = 0; r < shown.rows; ++r)
        for (int64_t c = 0; c < shown.cols; ++c)
            if (std::isfinite(shown.at(r, c)))
                EXPECT_NEAR(rows[size_t(r + 1)][c + 1].toDouble(), shown.at(r, c), 1e-8 * std::max(1.0, std::abs(shown.at(r, c))));
}

TEST_F(AttentionPageTest, PatchingWithItsOwnPromptSeed)
{
    MainWindow window;
    ASSERT_TRUE(openOnPage<PatchingPage>(window, s_lsa));
    PatchingPage* page = window.page<PatchingPage>();
    EXPECT_FALSE(page->isBusy()) << "nothing runs before Run is pressed";
    page->sharedPromptCheck()->setChecked(false);
    EXPECT_EQ(page->exampleChooser()->maximum(), 6) << "task.n_context of the run";
    page->promptSeedChooser()->setValue(4);
    page->corruptionChooser()->setCurrentIndex(page->corruptionChooser()->findData(QStringLiteral("change_label")));
    page->exampleChooser()->setValue(1);
    ASSERT_TRUE(page->startPatching());
    ASSERT_TRUE(waitIdle(window, kTimeoutMs));
    ASSERT_TRUE(page->result().has_value()) << page->statusLabel()->text().toStdString();
    icl::Inspector reference(s_lsa);
    const icl::Prompt clean = reference.samplePrompt(4);
    ASSERT_TRUE(samePrompt(page->cleanPrompt(), clean));
    icl::PatchingOptions o;
    o.corruption = icl::Corruption::ChangeLabel;
    o.example = 0;
    o.seed = uint64_t(page->seedChooser()->value());
    const icl::PatchingResult want = reference.patching(clean, o);
    EXPECT_EQ(page->heatmap()->matrix().data.size(), want.effect.data.size());
    for (size_t i = 0; i < want.effect.data.size(); ++i)
        if (std::isfinite(want.effect.data[i]))
            EXPECT_EQ(page->heatmap()->matrix().data[i], want.effect.data[i]) << i;
    EXPECT_EQ(page->metadata().at("prompt"), "seed 4, N = 6");
}

// Open… a prompt file of our own on the 1-layer LSA run (d = 3): the editor holds exactly the file's numbers, the
// predictions are those of an independent Inspector on the same Prompt (no errors while the query's label is
// unknown), the buttons that need the task vector w are off; a bad file keeps the prompt and shows its one-line
// message; Save… → Open… gives back the same prompt. On the GPT-2 run the model's largest N bounds the file.
TEST_F(AttentionPageTest, OpensAndSavesPromptFiles)
{
    MainWindow window;
    openOnAttention(window, s_lsa);
    AttentionPage* page = window.page<AttentionPage>();
    QTemporaryDir dir;
    const QString path = dir.filePath("mine.json");
    // N = 7 examples (the run was trained with N = 6) and the query; no label for the query, no w.
    const std::vector<std::vector<double>> x = { { 0.125, -1.5, 2.0 }, { 0.75, 0.25, -0.5 }, { -1.0, 1.0, 0.0625 },
        { 0.3, -0.7, 1.1 }, { 2.5, 0.5, -2.25 }, { -0.375, -0.125, 0.875 }, { 1.0, 2.0, 3.0 }, { 0.5, -0.25, 0.75 } };
    const std::vector<double> y = { 1.0, -0.5, 0.25, 2.0, -1.75, 0.625, 3.5 };
    {
        std::ofstream f(path.toStdString());
        f << "{\"x\": [[0.125, -1.5, 2], [0.75, 0.25, -0.5], [-1, 1, 0.0625], [0.3, -0.7, 1.1], [2.5, 0.5, -2.25], "
             "[-0.375, -0.125, 0.875], [1, 2, 3], [0.5, -0.25, 0.75]],\n"
             " \"y\": [1, -0.5, 0.25, 2, -1.75, 0.625, 3.5]}\n";
    }
    page->openPrompt(path);
    waitForRerun(window);
    icl::Prompt want;
    want.x = x;
    want.y = y;
    want.y.push_back(NAN);
    ASSERT_TRUE(samePrompt(page->prompt(), want)) << page->statusLabel()->text().toStdString();
    EXPECT_TRUE(page->prompt().w.empty());
    EXPECT_EQ(page->promptFile(), path);
    QTableWidget* table = page->promptEditor()->promptTable();
    ASSERT_EQ(table->rowCount(), 8);
    ASSERT_EQ(table->columnCount(), 4);
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 4; ++c) {
            if (r == 7 && c == 3) {
                EXPECT_TRUE(table->item(r, c)->text().isEmpty()) << "the unknown query label";
                continue;
            }
            EXPECT_EQ(table->item(r, c)->data(Qt::UserRole).toDouble(), c < 3 ? x[size_t(r)][size_t(c)] : y[size_t(r)])
                << r << "," << c;
        }
    icl::Inspector reference(s_lsa);
    const icl::Inspection expected = reference.inspect(want);
    EXPECT_TRUE(tableShows(page->predictionTable(), expected));
    EXPECT_EQ(page->inspection()->token_labels, expected.token_labels);
    EXPECT_EQ(page->patternView()->pattern().data, expected.patterns[0].data);
    EXPECT_TRUE(page->targetLabel()->text().contains("unknown")) << page->targetLabel()->text().toStdString();
    EXPECT_EQ(page->lens()->prediction.back(), expected.predictions[0].prediction);
    // Without w nothing can draw labels: resample row and relabel are off and say why.
    table->selectRow(2);
    EXPECT_FALSE(page->promptEditor()->resampleRowButton()->isEnabled());
    EXPECT_FALSE(page->promptEditor()->relabelButton()->isEnabled());
    EXPECT_TRUE(page->promptEditor()->resampleRowButton()->toolTip().contains("no task vector w"));
    EXPECT_TRUE(page->promptEditor()->relabelButton()->toolTip().contains("no task vector w"));
    EXPECT_TRUE(page->statusLabel()->text().contains("mine.json (N = 7, d = 3)")) << page->statusLabel()->text().toStdString();
    EXPECT_TRUE(page->promptEditor()->deleteButton()->isEnabled()) << "editing still works";

    // The Patching page corrupts the opened prompt; it needs only the model's predictions, not the query's label.
    window.showPage<PatchingPage>();
    PatchingPage* patching = window.page<PatchingPage>();
    ASSERT_TRUE(patching->sharedPromptCheck()->isChecked());
    patching->corruptionChooser()->setCurrentIndex(patching->corruptionChooser()->findData(QStringLiteral("change_label")));
    patching->exampleChooser()->setValue(3);
    patching->seedChooser()->setValue(5);
    ASSERT_TRUE(patching->startPatching());
    ASSERT_TRUE(waitIdle(window, kTimeoutMs));
    ASSERT_TRUE(patching->result().has_value()) << patching->statusLabel()->text().toStdString();
    ASSERT_TRUE(samePrompt(patching->cleanPrompt(), want));
    icl::PatchingOptions o;
    o.corruption = icl::Corruption::ChangeLabel;
    o.example = 2;
    o.seed = 5;
    const icl::PatchingResult patched = reference.patching(want, o);
    EXPECT_EQ(patching->heatmap()->matrix().data.size(), patched.effect.data.size());
    for (size_t i = 0; i < patched.effect.data.size(); ++i)
        EXPECT_TRUE(sameValue(patching->heatmap()->matrix().data[i], patched.effect.data[i])) << i;
    window.showPage<AttentionPage>();

    // Typing the query's label re-runs exactly as an edit; the errors are then measured against it.
    table->item(7, 3)->setText(QStringLiteral("0.5"));
    waitForRerun(window);
    want.y[7] = 0.5;
    ASSERT_TRUE(samePrompt(page->prompt(), want));
    EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(want)));

    // Bad files: the prompt stays, the one-line message shows in the status line.
    const QString wrongD = dir.filePath("wrong_d.csv");
    std::ofstream(wrongD.toStdString()) << "x_1,x_2,y\n1,2,3\n4,5,\n";
    const QString notNumber = dir.filePath("not_number.csv");
    std::ofstream(notNumber.toStdString()) << "# mine\nx_1,x_2,x_3,y\n1,2,3,4\n5,6,7,abc\n8,9,10,\n";
    for (const auto& [bad, message] : { std::pair { wrongD, QStringLiteral(" line 1: the header has 2 x columns (x_1,x_2,y), expected d = 3") },
             std::pair { notNumber, QStringLiteral(" line 4, column y: \"abc\" is not a number") } }) {
        SCOPED_TRACE(bad.toStdString());
        page->openPrompt(bad);
        waitForRerun(window);
        EXPECT_TRUE(samePrompt(page->prompt(), want));
        EXPECT_EQ(table->rowCount(), 8);
        EXPECT_EQ(page->promptFile(), path);
        EXPECT_TRUE(page->statusLabel()->text().contains((bad + message).toHtmlEscaped()))
            << page->statusLabel()->text().toStdString();
        EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(want)));
    }

    // Save… → Open…, as JSON and as CSV: the same prompt, bit for bit.
    for (const char* name : { "saved.json", "saved.csv" }) {
        SCOPED_TRACE(name);
        const QString saved = dir.filePath(QString::fromLatin1(name));
        std::string error;
        ASSERT_TRUE(page->exportPrompt(saved.toStdString(), &error)) << error;
        const icl::Prompt read = icl::readPromptFile(saved.toStdString());
        EXPECT_TRUE(samePrompt(read, want));
        page->setPrompt(reference.samplePrompt(9)); // something else in between
        waitForRerun(window);
        page->openPrompt(saved);
        waitForRerun(window);
        ASSERT_TRUE(samePrompt(page->prompt(), want)) << page->statusLabel()->text().toStdString();
        EXPECT_TRUE(tableShows(page->predictionTable(), reference.inspect(want)));
    }
    std::string error;
    EXPECT_FALSE(page->exportPrompt(dir.filePath("no/such/dir/p.csv").toStdString(), &error));
    EXPECT_NE(error.find("cannot write"), std::string::npos) << error;

    // GPT-2 (N = 6): its learned positions take at most 7 points.
    MainWindow gpt2;
    openOnAttention(gpt2, s_gpt2);
    AttentionPage* gpage = gpt2.page<AttentionPage>();
    const icl::Prompt before = gpage->prompt();
    const QString tooLong = dir.filePath("too_long.csv");
    {
        std::ofstream f(tooLong.toStdString());
        f << "x_1,x_2,x_3,x_4,y\n";
        for (int i = 0; i < 8; ++i)
            f << i << ",1,2,3," << (i < 7 ? "0.5" : "") << "\n";
    }
    gpage->openPrompt(tooLong);
    waitForRerun(gpt2);
    EXPECT_TRUE(samePrompt(gpage->prompt(), before));
    EXPECT_TRUE(gpage->statusLabel()->text().contains(tooLong + ": 8 points, the model takes at most 7 (N+1)"))
        << gpage->statusLabel()->text().toStdString();
}

// A hostile prompt file (issue 46): its one-line refusal shows in the status line with the control characters
// of its header escaped (\xNN) and its markup as text, and the prompt stays.
TEST_F(AttentionPageTest, AHostilePromptFileIsShownEscaped)
{
    MainWindow window;
    openOnAttention(window, s_lsa);
    waitForRerun(window);
    AttentionPage* page = window.page<AttentionPage>();
    const icl::Prompt before = page->prompt();
    QTemporaryDir dir;
    const QString bad = dir.filePath("hostile.csv");
    std::ofstream(bad.toStdString()) << "x_1,\x1b[2J\r<b>all good</b>,x_3,y\n1,2,3,4\n5,6,7,\n";
    page->openPrompt(bad);
    waitForRerun(window);
    EXPECT_TRUE(samePrompt(page->prompt(), before));
    const QString text = page->statusLabel()->text();
    EXPECT_TRUE(text.contains((bad + QStringLiteral(" line 1: header column 2 is \"\\x1b[2J\\x0d<b>all good</b>\", "
                                                     "expected \"x_2\""))
                                  .toHtmlEscaped()))
        << text.toStdString();
    EXPECT_FALSE(text.contains(QChar(0x1b))) << text.toStdString();
    EXPECT_FALSE(text.contains(QLatin1Char('\r'))) << text.toStdString();
}

TEST_F(AttentionPageTest, FitsTheDefaultWindowAndTheThumbnailsFollowTheScaleMode)
{
    MainWindow window; // scripted: the default 1280×800 window
    openOnAttention(window, s_gpt2);
    QTest::qWait(50); // pending layout requests
    AttentionPage* page = window.page<AttentionPage>();
    // The head table shows its five columns without a horizontal scrollbar.
    QTableWidget* heads = page->headTable();
    ASSERT_EQ(heads->columnCount(), 5);
    EXPECT_FALSE(heads->horizontalScrollBar()->isVisible());
    EXPECT_LE(heads->columnViewportPosition(4) + heads->columnWidth(4), heads->viewport()->width());
    // The predictor table: 4 significant digits, the exact value in the tooltip.
    QTableWidget* predictions = page->predictionTable();
    ASSERT_GT(predictions->rowCount(), 0);
    const double v = predictions->item(0, 1)->data(Qt::UserRole).toDouble();
    EXPECT_EQ(predictions->item(0, 1)->text(), QString::number(v, 'g', 4));
    EXPECT_EQ(predictions->item(0, 1)->toolTip().toDouble(), v);
    // A 21-token pattern (N = 10) in the page's pattern view at this size: every token labelled.
    icl::Matrix p;
    p.rows = p.cols = 21;
    p.data.assign(21 * 21, 0.0);
    for (int r = 0; r < 21; ++r) {
        for (int c = 0; c <= r; ++c)
            p.data[size_t(r * 21 + c)] = 1.0 / (r + 1);
        p.row_labels.push_back(r == 20 ? "query" : (r % 2 ? "y" : "x") + std::to_string(r / 2 + 1));
    }
    p.col_labels = p.row_labels;
    icl::widgets::AttentionPatternView* view = page->patternView();
    view->setPattern(p, true);
    view->replotNow();
    EXPECT_EQ(view->keyLabelStride(), 1);
    EXPECT_EQ(view->queryLabelStride(), 1);
    view->setPattern(page->inspection()->patterns[0], page->inspection()->softmax_head[0]);
    // The toolbar's Log mode: the thumbnails are re-rendered in it, as the large view.
    view->findChild<QAction*>(QStringLiteral("logScaleAction"))->trigger();
    EXPECT_EQ(page->grid()->scaleMode(), icl::widgets::AttentionScale::Log);
    const icl::Inspection& in = *page->inspection();
    for (int l = 0; l < in.n_layers; ++l)
        for (int h = 0; h < in.n_heads; ++h) {
            const size_t i = size_t(l * in.n_heads + h);
            EXPECT_EQ(page->grid()->thumbnail(l, h),
                icl::widgets::AttentionGrid::renderThumbnail(
                    in.patterns[i], in.softmax_head[i], icl::widgets::AttentionScale::Log))
                << l << "," << h;
        }
    // A re-run (a new prompt) renders the thumbnails on the worker in the mode in use.
    page->setPrompt(page->prompt());
    waitForRerun(window);
    EXPECT_EQ(page->grid()->thumbnail(0, 0),
        icl::widgets::AttentionGrid::renderThumbnail(
            page->inspection()->patterns[0], page->inspection()->softmax_head[0], icl::widgets::AttentionScale::Log));
}

TEST_F(AttentionPageTest, ThePromptEditorShowsXAndYOfEightDimensionsWithoutScrollingSideways)
{
    const std::string path = icl::test::scratchSubdir("attention-d8") + "/d8.h5";
    icl::test::trainTinyRun(path, "garg-linear-regression",
        { "task.d=8", "task.n_context=10", "training.curriculum.enabled=false", "model.n_layers=1", "model.n_heads=2",
            "model.d_model=16", "training.batch_size=16", "training.eval_every=10", "training.checkpoint_every=10",
            "eval.n_prompts=64", "eval.bootstrap=10" });
    MainWindow window; // scripted: the default 1280×800 window
    openOnAttention(window, path);
    QTest::qWait(50); // pending layout requests
    AttentionPage* page = window.page<AttentionPage>();
    QTableWidget* table = page->promptEditor()->promptTable();
    ASSERT_EQ(page->prompt().dim(), 8);
    ASSERT_EQ(table->columnCount(), 9) << "x_1 … x_8 and y";
    EXPECT_FALSE(table->horizontalScrollBar()->isVisible());
    const int last = table->columnCount() - 1;
    EXPECT_EQ(table->horizontalHeaderItem(last)->text(), QStringLiteral("y"));
    EXPECT_LE(table->columnViewportPosition(last) + table->columnWidth(last), table->viewport()->width())
        << "the y column is on screen";
    EXPECT_GE(table->columnViewportPosition(0), 0);
    // The cells keep their values and texts (the narrower painting only rounds what is drawn).
    const icl::Prompt& p = page->prompt();
    for (int r = 0; r < table->rowCount(); ++r)
        for (int c = 0; c <= last; ++c) {
            const double v = c < last ? p.x[size_t(r)][size_t(c)] : p.y[size_t(r)];
            EXPECT_EQ(table->item(r, c)->data(Qt::UserRole).toDouble(), v);
            EXPECT_EQ(table->item(r, c)->text(), QString::number(v, 'g', 4));
        }

    // The smaller prompts of the other runs fit too.
    MainWindow small;
    openOnAttention(small, s_gpt2);
    QTest::qWait(50);
    QTableWidget* four = small.page<AttentionPage>()->promptEditor()->promptTable();
    ASSERT_EQ(four->columnCount(), 5);
    EXPECT_FALSE(four->horizontalScrollBar()->isVisible());
    EXPECT_LE(four->columnViewportPosition(4) + four->columnWidth(4), four->viewport()->width());
}
