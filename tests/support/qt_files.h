#pragma once
// Reading exported files back in the Qt test programs (widgets_tests, gui_tests): one definition each, so that the
// test files can also be compiled together (unity build, ICL_UNITY_BUILD). Qt header: no LibTorch.

#include <QByteArray>
#include <QFile>
#include <QLatin1String>
#include <QString>
#include <QXmlStreamReader>

namespace icl::test {

/// The bytes of the file at `path`; empty when it cannot be opened.
inline QByteArray readAll(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

/// The text of every <text> element of the SVG file at `path`, one per line (what a reader of the figure sees).
inline QString svgText(const QString& path)
{
    QXmlStreamReader xml(readAll(path));
    QString text;
    while (!xml.atEnd())
        if (xml.readNext() == QXmlStreamReader::StartElement && xml.name() == QLatin1String("text"))
            text += xml.readElementText(QXmlStreamReader::IncludeChildElements) + "\n";
    return text;
}

/// What a reader finds in an SVG file's bytes: whether they hold an <svg> element, its <title> and <desc>, the text of
/// its <text> elements (one per line, as svgText) and the XML error (empty when the bytes are well-formed XML).
struct SvgContent {
    bool has_svg = false;
    QString title, desc, text, error;
};
inline SvgContent svgContent(const QByteArray& bytes)
{
    QXmlStreamReader xml(bytes);
    SvgContent svg;
    while (!xml.atEnd()) {
        if (xml.readNext() != QXmlStreamReader::StartElement)
            continue;
        if (xml.name() == QLatin1String("svg"))
            svg.has_svg = true;
        else if (xml.name() == QLatin1String("title"))
            svg.title = xml.readElementText();
        else if (xml.name() == QLatin1String("desc"))
            svg.desc = xml.readElementText();
        else if (xml.name() == QLatin1String("text"))
            svg.text += xml.readElementText(QXmlStreamReader::IncludeChildElements) + "\n";
    }
    if (xml.hasError())
        svg.error = xml.errorString();
    return svg;
}

} // namespace icl::test
