#pragma once
// The committed foreign-checkpoint fixtures (tests/data/foreign, written by real PyTorch with make_fixtures.py) for the
// GUI tests, their import as icl-cli import does it, and an independent SHA-256 of a file (Qt's, not the core's
// OpenSSL one).

#include <string>
#include <vector>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QString>

#include "core/training/weights_import.h"

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

/// Imports the fixture `name` into the new experiment file `out` (icl::importWeights on one thread, `sets` as the
/// `--set` overrides the fixture needs): the path of `out`. Throws icl::Error when the import fails.
inline std::string importedFixture(const char* name, const QString& out, const std::vector<std::string>& sets = {})
{
    icl::ImportRequest request;
    request.source = foreignFixture(name).toStdString();
    request.sets = sets;
    request.out_path = out.toStdString();
    request.threads = 1;
    icl::importWeights(request);
    return request.out_path;
}
