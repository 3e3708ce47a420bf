#include "widgets/figure_export.h"

#include <cmath>

#include <QApplication>
#include <QBuffer>
#include <QFile>
#include <QImage>
#include <QImageWriter>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QPixmap>
#include <QSvgGenerator>
#include <QThread>

#include <qcustomplot.h>

#include "core/error.h"
#include "core/types/figure_csv.h"
#include "widgets/plot_view.h"

namespace icl::widgets {

namespace {

/// Logical size of the exported plot: 100 logical pixels per inch, scaled to the DPI on output.
constexpr int kLogicalDpi = 100;
const int kLogicalWidth = int(std::lround(kExportWidthInches * kLogicalDpi));
const int kLogicalHeight = int(std::lround(kExportHeightInches * kLogicalDpi));

const char* kCreator = "ICL Workbench";

/// Makes sure a QApplication exists (creating one for headless callers) on this thread.
bool ensureApplication(std::string* error)
{
    if (!QCoreApplication::instance()) {
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
        static int argc = 1;
        static char name[] = "icl-export";
        static char* argv[] = { name, nullptr };
        static QApplication* app = new QApplication(argc, argv); // lives until the process exits
        (void)app;
    }
    if (!qobject_cast<QApplication*>(QCoreApplication::instance())) {
        if (error)
            *error = "exportFigure needs a QApplication, but a QCoreApplication is running";
        return false;
    }
    if (QThread::currentThread() != QCoreApplication::instance()->thread()) {
        if (error)
            *error = "exportFigure must be called on the QApplication's thread";
        return false;
    }
    return true;
}

QString escapeXml(const QString& s)
{
    return s.toHtmlEscaped();
}

/// Dublin Core XMP packet for PDF: title, creator tool and the metadata as description.
QByteArray xmpPacket(const icl::Figure& figure)
{
    QString description = QString::fromStdString(figure.caption());
    QString xmp;
    xmp += "<?xpacket begin=\"\xEF\xBB\xBF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n";
    xmp += "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n";
    xmp += "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n";
    xmp += "<rdf:Description rdf:about=\"\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\" "
           "xmlns:xmp=\"http://ns.adobe.com/xap/1.0/\" xmlns:icl=\"https://icl-workbench.invalid/ns/1.0/\">\n";
    xmp += "<dc:title><rdf:Alt><rdf:li xml:lang=\"x-default\">" + escapeXml(QString::fromStdString(figure.title))
        + "</rdf:li></rdf:Alt></dc:title>\n";
    xmp += "<dc:description><rdf:Alt><rdf:li xml:lang=\"x-default\">" + escapeXml(description)
        + "</rdf:li></rdf:Alt></dc:description>\n";
    xmp += QStringLiteral("<xmp:CreatorTool>%1</xmp:CreatorTool>\n").arg(kCreator);
    for (const auto& [key, value] : figure.metadata) {
        QString tag = QString::fromStdString(key);
        for (QChar& c : tag)
            if (!c.isLetterOrNumber() && c != '_')
                c = '_';
        if (tag.isEmpty() || tag.front().isDigit())
            tag.prepend('k');
        xmp += "<icl:" + tag + ">" + escapeXml(QString::fromStdString(value)) + "</icl:" + tag + ">\n";
    }
    xmp += "</rdf:Description>\n</rdf:RDF>\n</x:xmpmeta>\n<?xpacket end=\"w\"?>";
    return xmp.toUtf8();
}

bool fail(std::string* error, const std::string& message)
{
    if (error)
        *error = message;
    return false;
}

} // namespace

int exportPixelWidth(int dpi)
{
    return int(std::lround(kExportWidthInches * dpi));
}
int exportPixelHeight(int dpi)
{
    return int(std::lround(kExportHeightInches * dpi));
}

bool exportFigure(
    const icl::Figure& figure, const std::string& path, const std::string& format, int dpi, std::string* error)
{
    if (format == "csv") {
        try {
            icl::writeFigureCsv(figure, path);
        } catch (const icl::Error& e) {
            return fail(error, e.what());
        }
        return true;
    }
    if (format != "png" && format != "svg" && format != "pdf")
        return fail(error, "unknown export format \"" + format + "\" (expected png, svg, pdf or csv)");
    if (format == "png" && (dpi < 10 || dpi > 2400))
        return fail(error, "dpi: expected 10..2400, got " + std::to_string(dpi));
    if (!ensureApplication(error))
        return false;

    PlotView view;
    view.setToolBarVisible(false);
    view.setFigure(figure);
    view.resize(kLogicalWidth, kLogicalHeight);
    QCustomPlot* plot = view.plot();
    plot->resize(kLogicalWidth, kLogicalHeight);

    const QString file = QString::fromStdString(path);
    const QString title = QString::fromStdString(figure.title);
    const QString caption = QString::fromStdString(figure.caption());

    if (format == "png") {
        const double scale = double(dpi) / kLogicalDpi;
        QImage image = plot->toPixmap(kLogicalWidth, kLogicalHeight, scale).toImage();
        if (image.isNull())
            return fail(error, "could not render the figure");
        // toPixmap rounds width·scale; make the size exact for the requested DPI.
        if (image.width() != exportPixelWidth(dpi) || image.height() != exportPixelHeight(dpi))
            image = image.scaled(
                exportPixelWidth(dpi), exportPixelHeight(dpi), Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
        const int dotsPerMeter = int(std::lround(dpi / 0.0254));
        image.setDotsPerMeterX(dotsPerMeter);
        image.setDotsPerMeterY(dotsPerMeter);
        image.setText(QStringLiteral("Title"), title);
        image.setText(QStringLiteral("Software"), kCreator);
        image.setText(QStringLiteral("Description"), caption);
        for (const auto& [key, value] : figure.metadata)
            image.setText(QString::fromStdString(key), QString::fromStdString(value));
        QImageWriter writer(file, "png");
        if (!writer.write(image))
            return fail(error, "cannot write " + path + ": " + writer.errorString().toStdString());
        return true;
    }

    if (format == "svg") {
        QSvgGenerator generator;
        generator.setFileName(file);
        generator.setSize(QSize(kLogicalWidth, kLogicalHeight));
        generator.setViewBox(QRect(0, 0, kLogicalWidth, kLogicalHeight));
        generator.setResolution(kLogicalDpi);
        generator.setTitle(title.isEmpty() ? QString::fromStdString(figure.name) : title);
        QString description = caption;
        if (!description.isEmpty())
            description += QStringLiteral(" · ");
        description += QStringLiteral("created with %1").arg(kCreator);
        generator.setDescription(description);
        QCPPainter painter;
        if (!painter.begin(&generator))
            return fail(error, "cannot write " + path);
        painter.setMode(QCPPainter::pmVectorized);
        painter.setMode(QCPPainter::pmNoCaching);
        plot->toPainter(&painter, kLogicalWidth, kLogicalHeight);
        painter.end();
        if (!QFile::exists(file) || QFile(file).size() == 0)
            return fail(error, "cannot write " + path);
        return true;
    }

    // PDF: one page of exactly the figure size, vector graphics.
    QFile probe(file);
    if (!probe.open(QIODevice::WriteOnly))
        return fail(error, "cannot write " + path + ": " + probe.errorString().toStdString());
    probe.close();
    {
        QPdfWriter writer(file);
        writer.setCreator(kCreator);
        writer.setTitle(title);
        writer.setDocumentXmpMetadata(xmpPacket(figure));
        // 100 device units per inch: the page is exactly the 640 × 400 logical plot, fonts sized as on screen.
        writer.setResolution(kLogicalDpi);
        writer.setPageLayout(QPageLayout(QPageSize(QSizeF(kExportWidthInches, kExportHeightInches), QPageSize::Inch,
                                             QString(), QPageSize::ExactMatch),
            QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
        QCPPainter painter;
        if (!painter.begin(&writer))
            return fail(error, "cannot write " + path);
        painter.setMode(QCPPainter::pmVectorized);
        painter.setMode(QCPPainter::pmNoCaching);
        painter.setWindow(0, 0, kLogicalWidth, kLogicalHeight);
        plot->toPainter(&painter, kLogicalWidth, kLogicalHeight);
        painter.end();
    }
    if (QFile(file).size() == 0)
        return fail(error, "cannot write " + path);
    return true;
}

} // namespace icl::widgets
