// icl-workbench: the ICL Workbench GUI.
//
//   icl-workbench [RUN.h5 [MORE.h5 ...] | SWEEP_DIR | WEIGHTS | RUN_FOLDER] [--preset NAME] [--scale quick|paper]
//                 [--train] [--out RUN.h5] [--page NAME] [--tab NAME]
//                 [--checkpoint STEP] [--run] [--size WxH] [--screenshot OUT.png] [--quit]
//
// A weights file (PyTorch .pt, .safetensors, .npz, … recognised from its bytes) or a run folder in Garg et al.'s
// layout (model_<step>.pt or state.pt) opens File ▸ Import checkpoint…'s dialog on it, as a drop does.
//
// Scripted use (documentation, tests): `icl-workbench RUN.h5 --page train --screenshot OUT.png --quit`
// opens the file on that page (the names are MainWindow's page table; --help lists them), waits until the page's
// jobs are done, saves a screenshot of the window and exits (0 on success). Works with QT_QPA_PLATFORM=offscreen.
// `--page pasting --run` first runs a pasting with the page's default options (the output file must not exist yet);
// `--page patching --run` runs activation patching with the page's default options. `--page attention` waits for the
// first inspection of the sampled prompt; `--page icl-iwl --tab sequence` for the sequence viewer's first draw.
// `--size 1920x1080` sets the window's size (the screenshot's, in device-independent pixels) instead of the
// remembered one (1280 × 800 on a first start and in scripted runs); scripts/screenshots.sh uses it.

#include "app/runtime_env.h"

#include <cstdio>
#include <string>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QIcon>
#include <QLabel>
#include <QPixmap>
#include <QRegularExpression>
#include <QSize>
#include <QTimer>

#include "app/gui/analysis_page.h"
#include "app/gui/attention_page.h"
#include "app/gui/gd_alignment_page.h"
#include "app/gui/icl_iwl_page.h"
#include "app/gui/main_window.h"
#include "app/gui/pasting_page.h"
#include "app/gui/patching_page.h"
#include "app/gui/shown_text.h"
#include "app/gui/train_page.h"
#include "core/io/config.h"

#ifndef ICL_APP_VERSION_STRING
#define ICL_APP_VERSION_STRING "dev"
#endif

namespace {
/// "a, b or c".
QString listOr(const QStringList& names)
{
    if (names.size() < 2)
        return names.join(QString());
    return names.mid(0, names.size() - 1).join(QStringLiteral(", ")) + QStringLiteral(" or ") + names.back();
}

// --size's bounds: the window's smallest useful size and an 8K screen.
constexpr int kMinWidth = 640, kMinHeight = 480, kMaxWidth = 7680, kMaxHeight = 4320;

/// "1920x1080" (or "1920X1080") → a size within the bounds above; an invalid size otherwise.
QSize parseWindowSize(const QString& text)
{
    static const QRegularExpression pattern(QStringLiteral("^([0-9]{1,5})[xX]([0-9]{1,5})$"));
    const QRegularExpressionMatch match = pattern.match(text.trimmed());
    if (!match.hasMatch())
        return {};
    const QSize size(match.captured(1).toInt(), match.captured(2).toInt());
    if (size.width() < kMinWidth || size.width() > kMaxWidth || size.height() < kMinHeight
        || size.height() > kMaxHeight)
        return {};
    return size;
}
} // namespace

int main(int argc, char** argv)
{
    using icl::gui::MainWindow;
    icl::app::ensureRuntimeEnvironment(argv);
    // Without a display, help/version and scripted screenshots still work: render off-screen.
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
        && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--help" || a == "-h" || a == "--version" || a == "-v" || a == "--screenshot" || a == "--quit")
                qputenv("QT_QPA_PLATFORM", "offscreen");
        }
    }
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("ICL Workbench"));
    QApplication::setApplicationName(QStringLiteral("icl-workbench"));
    QApplication::setApplicationDisplayName(QStringLiteral("ICL Workbench"));
    QApplication::setApplicationVersion(QStringLiteral(ICL_APP_VERSION_STRING));
    // The installed desktop entry and icon (resources/desktop, resources/icons); the compiled-in SVG otherwise.
    QGuiApplication::setDesktopFileName(QStringLiteral("org.iclworkbench.icl_workbench"));
    QApplication::setWindowIcon(
        QIcon::fromTheme(QStringLiteral("icl-workbench"), QIcon(QStringLiteral(":/icons/icl-workbench.svg"))));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("In-context learning workbench: train, inspect and plot."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("RUN.h5"),
        QStringLiteral("Experiment file to open (several: the first is opened, the others are listed in File > Open "
                       "recent); a sweep directory aggregated by icl-cli aggregate (or its "
                       "table.csv), shown on the ICL vs IWL page's Sweep tab; or a checkpoint to import (a PyTorch "
                       ".pt, .safetensors or .npz file, or a run folder with model_<step>.pt / state.pt), opened in "
                       "the import dialog."),
        "[RUN.h5 [MORE.h5 ...]|SWEEP_DIR|CHECKPOINT]");
    const QCommandLineOption presetOpt(
        QStringLiteral("preset"), QStringLiteral("Preset to train."), QStringLiteral("NAME"));
    const QCommandLineOption scaleOpt(QStringLiteral("scale"), QStringLiteral("Preset scale: quick or paper."),
        QStringLiteral("SCALE"), QStringLiteral("quick"));
    const QCommandLineOption trainOpt(QStringLiteral("train"),
        QStringLiteral("Start training right away (default output: runs/<preset>-<date>.h5)."));
    const QCommandLineOption outOpt(
        QStringLiteral("out"), QStringLiteral("Experiment file that training writes."), QStringLiteral("RUN.h5"));
    const QCommandLineOption pageOpt(QStringLiteral("page"),
        QStringLiteral("Page to show: %1.").arg(listOr(MainWindow::pageNames())), QStringLiteral("NAME"));
    const QCommandLineOption tabOpt(QStringLiteral("tab"),
        QStringLiteral("Tab of the gd-alignment page (%1), of the attention page (%2) or of the icl-iwl page (%3).")
            .arg(icl::gui::GdAlignmentPage::tabNames().join(QStringLiteral(", ")),
                icl::gui::AttentionPage::tabNames().join(QStringLiteral(", ")),
                icl::gui::IclIwlPage::tabNames().join(QStringLiteral(", "))),
        QStringLiteral("NAME"));
    const QCommandLineOption checkpointOpt(QStringLiteral("checkpoint"),
        QStringLiteral("Select the saved checkpoint nearest to STEP."), QStringLiteral("STEP"));
    const QCommandLineOption runOpt(QStringLiteral("run"),
        QStringLiteral("With --page pasting or patching: start a pasting or an activation patching with the page's "
                       "default options (waited for before the screenshot)."));
    const QCommandLineOption sizeOpt(QStringLiteral("size"),
        QStringLiteral("Window size in pixels, WIDTHxHEIGHT (e.g. 1920x1080; %1x%2 to %3x%4) instead of the "
                       "remembered size (1280x800 on a first start and with --screenshot or --quit).")
            .arg(kMinWidth)
            .arg(kMinHeight)
            .arg(kMaxWidth)
            .arg(kMaxHeight),
        QStringLiteral("WxH"));
    const QCommandLineOption screenshotOpt(QStringLiteral("screenshot"),
        QStringLiteral("When the page's jobs are done, save a screenshot of the "
                       "window."),
        QStringLiteral("OUT.png"));
    const QCommandLineOption quitOpt(
        QStringLiteral("quit"), QStringLiteral("Quit when the page's jobs are done (after the screenshot)."));
    const QCommandLineOption timingOpt(QStringLiteral("timing"),
        QStringLiteral("With --screenshot or --quit: print on stderr how long the page took from opening the file to "
                       "its first result (its jobs done), in ms; pages that show a first look before it (ICL curve, "
                       "Probes, Patching, GD alignment, ICL vs IWL, Algorithm map) also print when it appeared."));
    parser.addOptions({ presetOpt, scaleOpt, trainOpt, outOpt, pageOpt, tabOpt, checkpointOpt, runOpt, sizeOpt,
        screenshotOpt, quitOpt, timingOpt });
    parser.process(app);

    auto fail = [](const QString& message) { // escaped: the message may quote a path or a file's name
        std::fprintf(stderr, "icl-workbench: %s\n", qUtf8Printable(icl::gui::shownText(message)));
        return 2;
    };
    // Several experiment files (a file manager's "Open with" on a selection): the first is opened, the others go to
    // File ▸ Open recent, as a drop of several files does.
    const QStringList positional = parser.positionalArguments().mid(0, 1);
    const QStringList moreFiles = parser.positionalArguments().mid(1);
    for (const QString& file : moreFiles)
        if (!QFileInfo(file).isFile())
            return fail(QStringLiteral("%1: no such experiment file").arg(file));
    const QString scale = parser.value(scaleOpt);
    if (scale != QLatin1String("quick") && scale != QLatin1String("paper"))
        return fail(QStringLiteral("--scale: expected quick or paper, got \"%1\"").arg(scale));
    // A weights file (recognised from its bytes) or a Garg et al. run folder goes to the import dialog, as a drop
    // does; another directory (or a .csv table) is a sweep for the ICL vs IWL page's Sweep tab; anything else is
    // opened as an experiment file.
    using PathKind = MainWindow::PathKind;
    const PathKind pathKind = positional.isEmpty() ? PathKind::Experiment : MainWindow::pathKind(positional.front());
    const bool sweepArg = !positional.isEmpty() && pathKind == PathKind::Sweep;
    const MainWindow::PageEntry* page = nullptr;
    if (sweepArg && !parser.isSet(pageOpt))
        page = MainWindow::pageEntry<icl::gui::IclIwlPage>();
    if (parser.isSet(pageOpt)) {
        page = MainWindow::pageFromName(parser.value(pageOpt));
        if (!page)
            return fail(QStringLiteral("--page: expected %1, got \"%2\"")
                            .arg(listOr(MainWindow::pageNames()), parser.value(pageOpt)));
    }
    auto pageIs = [page](const QMetaObject& type) { return page && page->type == &type; };
    const bool attentionTab = pageIs(icl::gui::AttentionPage::staticMetaObject);
    const bool iclIwlTab = pageIs(icl::gui::IclIwlPage::staticMetaObject);
    const bool pastingPage = pageIs(icl::gui::PastingPage::staticMetaObject);
    const bool patchingPage = pageIs(icl::gui::PatchingPage::staticMetaObject);
    const QStringList tabNames = attentionTab ? icl::gui::AttentionPage::tabNames()
        : iclIwlTab                           ? icl::gui::IclIwlPage::tabNames()
                                              : icl::gui::GdAlignmentPage::tabNames();
    if (parser.isSet(tabOpt) && !tabNames.contains(parser.value(tabOpt)))
        return fail(QStringLiteral("--tab: expected one of %1, got \"%2\"")
                        .arg(tabNames.join(QStringLiteral(", ")), parser.value(tabOpt)));
    if (parser.isSet(runOpt) && !pastingPage && !patchingPage)
        return fail(QStringLiteral("--run: only the pasting and patching pages have a run to start (add --page pasting "
                                   "or --page patching)"));
    qint64 checkpoint = -1;
    if (parser.isSet(checkpointOpt)) {
        bool ok = false;
        checkpoint = parser.value(checkpointOpt).toLongLong(&ok);
        if (!ok || checkpoint < 0)
            return fail(
                QStringLiteral("--checkpoint: expected a step >= 0, got \"%1\"").arg(parser.value(checkpointOpt)));
    }
    QSize windowSize;
    if (parser.isSet(sizeOpt)) {
        windowSize = parseWindowSize(parser.value(sizeOpt));
        if (!windowSize.isValid())
            return fail(QStringLiteral("--size: expected WIDTHxHEIGHT from %1x%2 to %3x%4, got \"%5\"")
                            .arg(kMinWidth)
                            .arg(kMinHeight)
                            .arg(kMaxWidth)
                            .arg(kMaxHeight)
                            .arg(parser.value(sizeOpt)));
    }
    if (parser.isSet(presetOpt)) {
        bool known = false;
        QStringList names;
        for (const icl::PresetInfo& p : icl::listPresets()) {
            known |= QString::fromStdString(p.name) == parser.value(presetOpt);
            names << QString::fromStdString(p.name);
        }
        if (!known)
            return fail(QStringLiteral("--preset: unknown preset \"%1\" (available: %2)")
                            .arg(parser.value(presetOpt), names.join(QStringLiteral(", "))));
    }
    const bool train = parser.isSet(trainOpt);
    const bool quit = parser.isSet(quitOpt);
    const QString screenshot = parser.value(screenshotOpt);
    const bool scripted = quit || !screenshot.isEmpty();

    MainWindow window;
    window.setScripted(scripted);
    if (windowSize.isValid()) {
        // Below the pages' smallest layout the window would come out larger than asked (and the screenshot too).
        const QSize smallest = window.minimumSizeHint().expandedTo(window.minimumSize());
        if (windowSize.width() < smallest.width() || windowSize.height() < smallest.height())
            return fail(QStringLiteral("--size: %1x%2 is smaller than the window's smallest size, %3x%4")
                            .arg(windowSize.width())
                            .arg(windowSize.height())
                            .arg(smallest.width())
                            .arg(smallest.height()));
        window.setWindowState(Qt::WindowNoState); // a remembered maximised window would ignore the size
        window.resize(windowSize);
    }
    window.show();
    QElapsedTimer sinceOpen;
    sinceOpen.start();
    if (parser.isSet(timingOpt)) {
        // Pages that show a first look (fewer prompts, or the first rows) before their full result.
        auto firstLook = [&sinceOpen](const char* page) {
            std::fprintf(stderr, "icl-workbench: page %s: first look %lld ms after opening the file\n", page,
                static_cast<long long>(sinceOpen.elapsed()));
        };
        for (size_t row = 0; row < window.pages().size(); ++row)
            if (auto* analysis = qobject_cast<icl::gui::AnalysisPage*>(window.pages()[row]))
                QObject::connect(analysis, &icl::gui::AnalysisPage::firstLookShown, &window,
                    [firstLook, name = MainWindow::pageTable()[row].names[0]] { firstLook(name); });
    }

    int exitCode = 0;
    for (qsizetype i = moreFiles.size() - 1; i >= 0; --i)
        window.addRecentFile(QFileInfo(moreFiles[i]).absoluteFilePath());
    // An experiment opens on every page; an import source opens the import dialog; a sweep the Sweep tab (--page and
    // --tab, applied below, still choose what is shown).
    if (!positional.isEmpty() && !window.openPath(positional.front())) {
        if (sweepArg)
            std::fprintf(stderr, "icl-workbench: %s\n",
                qUtf8Printable(window.page<icl::gui::IclIwlPage>()->sweepView()->statusLabel()->text()));
        exitCode = 1;
    }
    if (parser.isSet(presetOpt) || train) {
        const QString preset
            = parser.isSet(presetOpt) ? parser.value(presetOpt) : QString::fromLatin1(icl::kDefaultPreset);
        window.page<icl::gui::TrainPage>()->setPreset(preset, scale);
    }
    if (parser.isSet(outOpt))
        window.page<icl::gui::TrainPage>()->setOutputPath(parser.value(outOpt));
    else if (train)
        window.page<icl::gui::TrainPage>()->setOutputPath(icl::gui::TrainPage::defaultOutputPath(
            parser.isSet(presetOpt) ? parser.value(presetOpt) : QString::fromLatin1(icl::kDefaultPreset)));
    if (parser.isSet(tabOpt) && attentionTab)
        window.page<icl::gui::AttentionPage>()->showTab(parser.value(tabOpt));
    else if (parser.isSet(tabOpt) && iclIwlTab)
        window.page<icl::gui::IclIwlPage>()->showTab(parser.value(tabOpt));
    else if (parser.isSet(tabOpt))
        window.page<icl::gui::GdAlignmentPage>()->showTab(parser.value(tabOpt));
    if (page)
        window.showPage(*page);
    else if (train || parser.isSet(presetOpt))
        window.showPage<icl::gui::TrainPage>();
    if (checkpoint >= 0 && window.selectCheckpoint(checkpoint) < 0 && !positional.isEmpty()
        && pathKind != PathKind::ImportSource)
        std::fprintf(stderr, "icl-workbench: --checkpoint %lld: the experiment has no checkpoints\n",
            static_cast<long long>(checkpoint));

    if (parser.isSet(runOpt) && patchingPage) {
        icl::gui::PatchingPage* patching = window.page<icl::gui::PatchingPage>();
        if (!patching->startPatching()) {
            std::fprintf(stderr, "icl-workbench: --run: no experiment with a checkpoint to patch\n");
            exitCode = 1;
        }
    } else if (parser.isSet(runOpt)) {
        icl::gui::PastingPage* pasting = window.page<icl::gui::PastingPage>();
        // Scripted runs never overwrite silently; interactive ones ask.
        if (!pasting->startPasting(!scripted, false)) {
            std::fprintf(stderr, "icl-workbench: --run: %s\n",
                qUtf8Printable(pasting->statusLabel()->text().isEmpty() ? pasting->messageLabel()->text()
                                                                        : pasting->statusLabel()->text()));
            exitCode = 1;
        }
    }

    if (train) {
        // Scripted runs never overwrite silently; interactive ones ask.
        if (!window.page<icl::gui::TrainPage>()->startTraining(!scripted, false))
            exitCode = 1;
        if (scripted) {
            QObject::connect(window.page<icl::gui::TrainPage>(), &icl::gui::TrainPage::trainingFinished, &window,
                [&exitCode](bool ok, const QString&) {
                    if (!ok)
                        exitCode = 1;
                });
        }
    }

    if (!scripted)
        return app.exec();

    const bool runPasting = parser.isSet(runOpt) && pastingPage && exitCode == 0;
    const bool runPatching = parser.isSet(runOpt) && patchingPage && exitCode == 0;
    window.whenIdle([&] {
        if (runPatching && !window.page<icl::gui::PatchingPage>()->result()) {
            std::fprintf(stderr, "icl-workbench: --run: %s\n",
                qUtf8Printable(window.page<icl::gui::PatchingPage>()->statusLabel()->text()));
            exitCode = 1;
        }
        if (runPasting && !window.page<icl::gui::PastingPage>()->result()) {
            std::fprintf(stderr, "icl-workbench: --run: %s\n",
                qUtf8Printable(window.page<icl::gui::PastingPage>()->statusLabel()->text()));
            exitCode = 1;
        }
        // Let layouts settle and queued replots run, then draw every plot now.
        QCoreApplication::processEvents();
        window.flushPlots();
        QCoreApplication::processEvents();
        if (parser.isSet(timingOpt))
            std::fprintf(stderr, "icl-workbench: page %s: first result %lld ms after opening the file\n",
                qUtf8Printable(parser.isSet(pageOpt) ? parser.value(pageOpt) : QStringLiteral("experiments")),
                static_cast<long long>(sinceOpen.elapsed()));
        if (!screenshot.isEmpty()) {
            const QString dir = QFileInfo(screenshot).absolutePath();
            QDir().mkpath(dir);
            if (!window.grab().save(screenshot)) {
                std::fprintf(stderr, "icl-workbench: cannot write screenshot %s\n", qUtf8Printable(screenshot));
                exitCode = 1;
            }
        }
        if (quit)
            QCoreApplication::exit(exitCode);
    });
    const int rc = app.exec();
    return quit ? exitCode : rc;
}
