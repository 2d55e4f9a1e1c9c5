// Reduction kernels: the arithmetic of every datatype x op. The executor calls them on chunks.
// Reduced-precision types (half, bfloat16, fp8) are computed in float and rounded back to
// nearest even after every operation. Integer arithmetic wraps (two's complement).
#pragma once

#include <cstddef>

#include "include/weft.h"

namespace weft {

// The element-wise binary operations. Avg and pre-multiplied sum are built from Sum plus scale()
// and divide() by the collective layer. Floating Max/Min behave as NCCL's fmaxf/fminf: a NaN
// operand loses to a number, two NaNs give NaN; of two equal operands (+0 and -0 included) the
// result is a.
enum class ReduceKind { Sum, Prod, Max, Min };

// dst[i] = a[i] (op) b[i] for i < count. dst may be the same pointer as a or b; other overlap
// is not allowed.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
// nullptr for an invalid datatype.
ReduceFn reduceKernel(weftDataType_t datatype, ReduceKind kind) noexcept;

// dst[i] = (...((srcs[0][i] (op) srcs[1][i]) (op) srcs[2][i]) ...) (op) srcs[nsrcs - 1][i]: the
// same bits as chaining the ReduceFn left to right (reduced-precision types rounded after every
// operation), in fewer passes over dst: each pass applies up to three operations, element by
// element, so dst is written once per three sources instead of once per source. nsrcs >= 1 (1
// copies); dst may be one of the sources (any one: the order of the sources is the order of
// the operations, so a caller that keeps rank order can reduce into its own input), and no
// other overlap is allowed.
using ReduceManyFn = void (*)(void* dst, const void* const* srcs, int nsrcs, size_t count);
// nullptr for an invalid datatype.
ReduceManyFn reduceManyKernel(weftDataType_t datatype, ReduceKind kind) noexcept;

// Which instructions the kernel reduceKernel picks for `datatype` uses beyond the
// compiler-vectorised loops: "avx512-fp16" (half, fp8 E5M2), "avx512-bf16" (bfloat16), "f16c"
// (half), or "generic". What the CPU has, as limited by WEFT_REDUCE_HALF_ISA.
const char* reduceKernelIsa(weftDataType_t datatype) noexcept;

// dst[i] = src[i] * scalar, where scalar points to one value of `datatype` (dst may equal src).
// scale() and divide() write nothing for an invalid datatype.
void scale(void* dst, const void* src, size_t count, weftDataType_t datatype,
           const void* scalar) noexcept;

// dst[i] = src[i] / divisor (dst may equal src). Integers: the quotient truncated toward zero
// (as C++ `/`) and wrapped to the type, so MIN / -1 is MIN and an unsigned element divided by a
// negative divisor is the negated quotient of the magnitudes; divisor must not be 0. Floating
// types: division in float (double for float64) rounded to the type.
void divide(void* dst, const void* src, size_t count, weftDataType_t datatype,
            int divisor) noexcept;

// Writes the value 1/n in `datatype`, correctly rounded (used for floating-point Avg, which weft
// computes as NCCL does: every input pre-multiplied by 1/n, then summed). `out` has room for one
// element. Integer types have no 1/n (their Avg is Sum then divide()): the element is set to 0.
void reciprocal(void* out, weftDataType_t datatype, int n) noexcept;

}  // namespace weft
