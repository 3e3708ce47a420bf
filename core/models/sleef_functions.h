#pragma once
// SLEEF's 1-ulp tanh and exp, 8 and 16 floats wide: what LibTorch 1.13's Vectorized<float>::tanh() and exp() call in
// its AVX2 and AVX-512 kernels (the two widths are different approximations, so a kernel that repeats LibTorch's must
// use the width LibTorch's kernels use, atenFloatVectorWidth()). sleef.h declares them only where the whole file is
// compiled for AVX / AVX-512, and the files that use them (core/models/gelu.cpp, causal_attention.cpp) are compiled
// for the baseline x86-64 with only their kernels enabling the wider instructions, so they are declared here.
// Include only where ICL_HAVE_SLEEF is defined (core/CMakeLists.txt); linked from libsleef. Core-internal.

#include <immintrin.h>

extern "C" {
__m256 Sleef_tanhf8_u10(__m256);
__m512 Sleef_tanhf16_u10(__m512);
__m256 Sleef_expf8_u10(__m256);
__m512 Sleef_expf16_u10(__m512);
}
