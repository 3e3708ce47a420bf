#pragma once
// Element-wise equality of two series in which NaN equals NaN (a training loss before the first step is NaN, and
// a stored result keeps it), for tests that compare a result with an independent computation or its stored copy.

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace icl::test {

/// Equal sizes and every element equal (bitwise for finite values), NaN equal to NaN.
inline ::testing::AssertionResult sameValues(const std::vector<double>& got, const std::vector<double>& want)
{
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
    for (size_t i = 0; i < got.size(); ++i)
        if (!(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))))
            return ::testing::AssertionFailure() << "at " << i << ": " << got[i] << " != " << want[i];
    return ::testing::AssertionSuccess();
}

} // namespace icl::test
