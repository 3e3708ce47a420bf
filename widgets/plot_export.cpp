#include "widgets/plot_export.h"

#include <cmath>

#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QFile>
#include <QFontMetrics>
#include <QImage>
#include <QImageWriter>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QPixmap>
#include <QSvgGenerator>
#include <QThread>

#include <qcustomplot.h>

#include "widgets/figure_export.h"

namespace icl::widgets {

namespace {

const char* kCreator = "ICL Workbench";

QString escapeXml(const QString& s)
{
    return s.toHtmlEscaped();
}

QString captionOf(const std::map<std::string, std::string>& metadata)
{
    QString out;
    for (const auto& [key, value] : metadata) {
        if (!out.isEmpty())
            out += QStringLiteral(" · ");
        out += QString::fromStdString(key + ": " + value);
    }
    return out;
}

/// Dublin Core XMP packet for PDF: title, creator tool and the metadata as description.
QByteArray xmpPacket(const QString& title, const std::map<std::string, std::string>& metadata)
{
    const QString description = captionOf(metadata);
    QString xmp;
    xmp += "<?xpacket begin=\"\xEF\xBB\xBF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n";
    xmp += "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n";
    xmp += "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n";
    xmp += "<rdf:Description rdf:about=\"\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\" "
           "xmlns:xmp=\"http://ns.adobe.com/xap/1.0/\" xmlns:icl=\"https://icl-workbench.invalid/ns/1.0/\">\n";
    xmp += "<dc:title><rdf:Alt><rdf:li xml:lang=\"x-default\">" + escapeXml(title) + "</rdf:li></rdf:Alt></dc:title>\n";
    xmp += "<dc:description><rdf:Alt><rdf:li xml:lang=\"x-default\">" + escapeXml(description)
        + "</rdf:li></rdf:Alt></dc:description>\n";
    xmp += QStringLiteral("<xmp:CreatorTool>%1</xmp:CreatorTool>\n").arg(kCreator);
    for (const auto& [key, value] : metadata) {
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

QString wrapCaption(const QString& caption, const QFont& font, int budget)
{
    const QFontMetrics metrics(font);
    const QString separator = QStringLiteral(" · ");
    QStringList lines;
    QString line;
    for (const QString& part : caption.split(separator)) {
        const QString candidate = line.isEmpty() ? part : line + separator + part;
        if (!line.isEmpty() && metrics.horizontalAdvance(candidate) > budget) {
            lines << line;
            line = part;
        } else {
            line = candidate;
        }
    }
    if (!line.isEmpty())
        lines << line;
    return lines.join('\n');
}

bool ensureExportApplication(std::string* error)
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
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
        return fail(error, "exportFigure needs a QApplication, but a QCoreApplication is running");
    if (QThread::currentThread() != QCoreApplication::instance()->thread())
        return fail(error, "exportFigure must be called on the QApplication's thread");
    return true;
}

bool writePlotFile(QCustomPlot* plot, const std::string& path, const std::string& format, int dpi,
    const std::string& title, const std::map<std::string, std::string>& metadata, std::string* error)
{
    if (format != "png" && format != "svg" && format != "pdf")
        return fail(error, "unknown export format \"" + format + "\" (expected png, svg, pdf or csv)");
    if (format == "png" && (dpi < 10 || dpi > 2400))
        return fail(error, "dpi: expected 10..2400, got " + std::to_string(dpi));
    const int width = kExportLogicalWidth, height = kExportLogicalHeight;
    const QString file = QString::fromStdString(path);
    const QString qtitle = QString::fromStdString(title);
    const QString caption = captionOf(metadata);
    // Lay the plot out at the export size first (the legend beside or below the data, the ticks): toPixmap and
    // toPainter only draw, with the layout of the last replot at the widget's own size. Restored afterwards.
    const QRect shown = plot->viewport();
    plot->setViewport(QRect(0, 0, width, height));
    plot->replot(QCustomPlot::rpImmediateRefresh);
    struct RestoreViewport {
        QCustomPlot* plot;
        QRect rect;
        ~RestoreViewport()
        {
            plot->setViewport(rect);
            plot->replot(QCustomPlot::rpQueuedReplot);
        }
    } restore{plot, shown};

    if (format == "png") {
        const double scale = double(dpi) / kExportLogicalDpi;
        QImage image = plot->toPixmap(width, height, scale).toImage();
        if (image.isNull())
            return fail(error, "could not render the figure");
        // toPixmap rounds width·scale; make the size exact for the requested DPI.
        if (image.width() != exportPixelWidth(dpi) || image.height() != exportPixelHeight(dpi))
            image = image.scaled(
                exportPixelWidth(dpi), exportPixelHeight(dpi), Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
        const int dotsPerMeter = int(std::lround(dpi / 0.0254));
        image.setDotsPerMeterX(dotsPerMeter);
        image.setDotsPerMeterY(dotsPerMeter);
        image.setText(QStringLiteral("Title"), qtitle);
        image.setText(QStringLiteral("Software"), kCreator);
        image.setText(QStringLiteral("Description"), caption);
        for (const auto& [key, value] : metadata)
            image.setText(QString::fromStdString(key), QString::fromStdString(value));
        QImageWriter writer(file, "png");
        if (!writer.write(image))
            return fail(error, "cannot write " + path + ": " + writer.errorString().toStdString());
        return true;
    }

    if (format == "svg") {
        QSvgGenerator generator;
        generator.setFileName(file);
        generator.setSize(QSize(width, height));
        generator.setViewBox(QRect(0, 0, width, height));
        generator.setResolution(kExportLogicalDpi);
        generator.setTitle(qtitle);
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
        plot->toPainter(&painter, width, height);
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
        writer.setTitle(qtitle);
        writer.setDocumentXmpMetadata(xmpPacket(qtitle, metadata));
        // 100 device units per inch: the page is exactly the 640 × 400 logical plot, fonts sized as on screen.
        writer.setResolution(kExportLogicalDpi);
        writer.setPageLayout(QPageLayout(QPageSize(QSizeF(kExportWidthInches, kExportHeightInches), QPageSize::Inch,
                                             QString(), QPageSize::ExactMatch),
            QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
        QCPPainter painter;
        if (!painter.begin(&writer))
            return fail(error, "cannot write " + path);
        painter.setMode(QCPPainter::pmVectorized);
        painter.setMode(QCPPainter::pmNoCaching);
        painter.setWindow(0, 0, width, height);
        plot->toPainter(&painter, width, height);
        painter.end();
    }
    if (QFile(file).size() == 0)
        return fail(error, "cannot write " + path);
    return true;
}

namespace {
QString& exportDirectory()
{
    static QString dir;
    return dir;
}
} // namespace

void setExportDirectory(const QString& dir)
{
    exportDirectory() = dir;
}

QString suggestedExportPath(const QString& base)
{
    const QString file = base + QStringLiteral(".png");
    if (exportDirectory().isEmpty() || QFileInfo(base).isAbsolute())
        return file;
    return QDir(exportDirectory()).filePath(file);
}

bool askExportTarget(QWidget* parent, const QString& title, const QString& base, ExportTarget* target)
{
    const QString pngFilter = QObject::tr("PNG image (*.png)");
    const QString svgFilter = QObject::tr("SVG vector image (*.svg)");
    const QString pdfFilter = QObject::tr("PDF document (*.pdf)");
    const QString csvFilter = QObject::tr("CSV data (*.csv)");
    QString selected = pngFilter;
    QString path = QFileDialog::getSaveFileName(parent, title, suggestedExportPath(base),
        QStringList { pngFilter, svgFilter, pdfFilter, csvFilter }.join(";;"), &selected);
    if (path.isEmpty())
        return false;
    QString format = QFileInfo(path).suffix().toLower();
    if (format != "png" && format != "svg" && format != "pdf" && format != "csv") {
        format = selected == svgFilter ? "svg" : selected == pdfFilter ? "pdf" : selected == csvFilter ? "csv" : "png";
        path += "." + format;
    }
    int dpi = 300;
    if (format == "png") {
        bool ok = false;
        dpi = QInputDialog::getInt(parent, QObject::tr("Export PNG"), QObject::tr("Resolution (dots per inch):"), 300,
            50, 1200, 50, &ok);
        if (!ok)
            return false;
    }
    target->path = path.toStdString();
    target->format = format.toStdString();
    target->dpi = dpi;
    return true;
}

} // namespace icl::widgets
