#pragma once
// Test helper: the text drawn in a PDF written by Qt's PDF engine (QPdfWriter), for checking that an
// exported figure carries its axis labels and legend. Qt draws text as glyph codes of embedded Type0
// fonts ("/F8 14 Tf … <0001> Tj") with a ToUnicode CMap per font; this decodes exactly that, nothing
// more general.

#include <map>

#include <QByteArray>
#include <QFile>
#include <QRegularExpression>
#include <QString>

namespace icl::test {

/// Every glyph drawn in the PDF at `path`, in drawing order, without whitespace (Qt may draw a space
/// as a tab or not at all, so callers compare against text with its whitespace removed too), with
/// ligatures decomposed (NFKC).
inline QString pdfText(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return QString();
    const QString pdf = QString::fromLatin1(f.readAll()); // one QChar per byte
    std::map<int, QString> dicts;
    std::map<int, QByteArray> streams;
    const QRegularExpression objectRe(QStringLiteral("(\\d+) 0 obj(.*?)endobj"), QRegularExpression::DotMatchesEverythingOption);
    for (auto it = objectRe.globalMatch(pdf); it.hasNext();) {
        const auto m = it.next();
        const int id = m.captured(1).toInt();
        const QString body = m.captured(2);
        const qsizetype s = body.indexOf(QLatin1String("stream"));
        dicts[id] = s >= 0 ? body.left(s) : body;
        if (s < 0)
            continue;
        qsizetype begin = s + 6;
        if (body.mid(begin, 2) == QLatin1String("\r\n"))
            begin += 2;
        else if (body.mid(begin, 1) == QLatin1String("\n"))
            begin += 1;
        const qsizetype end = body.lastIndexOf(QLatin1String("endstream"));
        QByteArray raw = body.mid(begin, end - begin).toLatin1();
        if (dicts[id].contains(QLatin1String("/FlateDecode"))) {
            QByteArray framed(4, '\0');
            const quint32 guess = 1u << 20; // qUncompress grows the buffer when the guess is short
            framed[0] = char(guess >> 24);
            framed[1] = char(guess >> 16);
            framed[2] = char(guess >> 8);
            framed[3] = char(guess);
            raw = qUncompress(framed + raw);
        }
        streams[id] = raw;
    }
    // Font resource name → glyph code → text.
    std::map<QString, std::map<uint, QString>> fonts;
    const QRegularExpression fontRefRe(QStringLiteral("/(F\\d+) (\\d+) 0 R"));
    const QRegularExpression toUnicodeRe(QStringLiteral("/ToUnicode (\\d+) 0 R"));
    const QRegularExpression rangeArrayRe(QStringLiteral("<([0-9A-Fa-f]+)> <([0-9A-Fa-f]+)> \\[([^\\]]*)\\]"));
    const QRegularExpression rangeRe(QStringLiteral("<([0-9A-Fa-f]+)> <([0-9A-Fa-f]+)> <([0-9A-Fa-f]+)>"));
    const QRegularExpression hexRe(QStringLiteral("<([0-9A-Fa-f]+)>"));
    auto unicode = [](const QString& hex) {
        QString out;
        for (qsizetype i = 0; i + 4 <= hex.size(); i += 4)
            out += QChar(char16_t(hex.mid(i, 4).toUInt(nullptr, 16)));
        return out;
    };
    for (const auto& [id, dict] : dicts)
        for (auto it = fontRefRe.globalMatch(dict); it.hasNext();) {
            const auto m = it.next();
            const auto font = dicts.find(m.captured(2).toInt());
            if (font == dicts.end())
                continue;
            const auto tu = toUnicodeRe.match(font->second);
            if (!tu.hasMatch())
                continue;
            const QString cmap = QString::fromLatin1(streams[tu.captured(1).toInt()]);
            std::map<uint, QString>& map = fonts[m.captured(1)];
            for (auto r = rangeArrayRe.globalMatch(cmap); r.hasNext();) {
                const auto rm = r.next();
                uint code = rm.captured(1).toUInt(nullptr, 16);
                for (auto h = hexRe.globalMatch(rm.captured(3)); h.hasNext();)
                    map[code++] = unicode(h.next().captured(1));
            }
            QString ranges = cmap.mid(cmap.indexOf(QLatin1String("beginbfrange")));
            ranges.remove(QRegularExpression(QStringLiteral("\\[[^\\]]*\\]"))); // arrays were read above
            for (auto r = rangeRe.globalMatch(ranges); r.hasNext();) {
                const auto rm = r.next();
                const uint first = rm.captured(1).toUInt(nullptr, 16), last = rm.captured(2).toUInt(nullptr, 16);
                const uint u = rm.captured(3).toUInt(nullptr, 16);
                for (uint c = first; c <= last; ++c)
                    map[c] = QString(QChar(char16_t(u + (c - first))));
            }
            const qsizetype chars = cmap.indexOf(QLatin1String("beginbfchar"));
            if (chars >= 0) {
                const QString block = cmap.mid(chars, cmap.indexOf(QLatin1String("endbfchar"), chars) - chars);
                const QRegularExpression charRe(QStringLiteral("<([0-9A-Fa-f]+)> <([0-9A-Fa-f]+)>"));
                for (auto r = charRe.globalMatch(block); r.hasNext();) {
                    const auto rm = r.next();
                    map[rm.captured(1).toUInt(nullptr, 16)] = unicode(rm.captured(2));
                }
            }
        }
    // Content streams: "/Fn size Tf" selects a font, "<codes> Tj" draws glyphs.
    QString text;
    const QRegularExpression opRe(QStringLiteral("/(F\\d+) [-\\d.]+ Tf|<([0-9A-Fa-f]+)> Tj"));
    for (const auto& [id, data] : streams) {
        const QString content = QString::fromLatin1(data);
        if (!content.contains(QLatin1String(" Tj")))
            continue;
        QString font;
        for (auto it = opRe.globalMatch(content); it.hasNext();) {
            const auto m = it.next();
            if (!m.captured(1).isEmpty()) {
                font = m.captured(1);
                continue;
            }
            const QString codes = m.captured(2);
            for (qsizetype i = 0; i + 4 <= codes.size(); i += 4)
                text += fonts[font][codes.mid(i, 4).toUInt(nullptr, 16)];
        }
    }
    QString compact;
    for (QChar c : text)
        if (!c.isSpace() && c.category() != QChar::Other_Control)
            compact += c;
    return compact.normalized(QString::NormalizationForm_KC); // ligatures "ﬀ", "ﬁ" back to letters
}

/// `s` without whitespace, to compare with pdfText.
inline QString withoutSpaces(const QString& s)
{
    QString out;
    for (QChar c : s)
        if (!c.isSpace())
            out += c;
    return out;
}

} // namespace icl::test
