#pragma once
// The committed foreign-checkpoint fixtures (tests/data/foreign, written by real PyTorch with make_fixtures.py) for the
// GUI tests, and an independent SHA-256 of a file (Qt's, not the core's OpenSSL one).

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QString>

/// Absolute path of tests/data/foreign/<name>.
inline QString foreignFixture(const char* name)
{
    return QDir::cleanPath(QStringLiteral(ICL_TEST_DATA_DIR "/foreign/") + QString::fromLatin1(name));
}

/// Lower-case hex SHA-256 of the file's bytes; empty when it cannot be read.
inline QString sha256Of(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(&f);
    return QString::fromLatin1(hash.result().toHex());
}
