// Reduction kernels: the arithmetic of every datatype x op. The executor calls them on chunks.
// Reduced-precision types (half, bfloat16, fp8) are computed in float and rounded back to
// nearest even after every operation. Integer arithmetic wraps (two's complement).
#pragma once

#include <cstddef>

#include "include/weft.h"

namespace weft {

// The element-wise binary operations. Avg and pre-multiplied sum are built from Sum plus scale()
// and divide() by the collective layer.
enum class ReduceKind { Sum, Prod, Max, Min };

// dst[i] = a[i] (op) b[i] for i < count. dst may be the same pointer as a or b; other overlap
// is not allowed.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
// nullptr for an invalid datatype.
ReduceFn reduceKernel(weftDataType_t datatype, ReduceKind kind) noexcept;

// dst[i] = src[i] * scalar, where scalar points to one value of `datatype` (dst may equal src).
void scale(void* dst, const void* src, size_t count, weftDataType_t datatype,
           const void* scalar) noexcept;

// dst[i] = src[i] / divisor (dst may equal src). Integers: C++ division (truncates toward zero);
// floating types: division in float (double for float64) rounded to the type.
void divide(void* dst, const void* src, size_t count, weftDataType_t datatype,
            int divisor) noexcept;

// Writes the value 1/n in `datatype` (used for floating-point Avg, which weft computes as NCCL
// does: every input pre-multiplied by 1/n, then summed). `out` has room for one element.
void reciprocal(void* out, weftDataType_t datatype, int n) noexcept;

}  // namespace weft
