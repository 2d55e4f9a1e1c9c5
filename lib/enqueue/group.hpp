// Groups (weftGroupStart/weftGroupEnd): per thread, operations are collected until the outermost
// weftGroupEnd and then launched together.
#pragma once

#include "lib/base/error.hpp"
#include "lib/enqueue/launch.hpp"

namespace weft {

void groupStart();
// Launches what the group collected. Throws weftInvalidUsage without a matching groupStart, or
// the first error of an operation in the group (then nothing is launched).
void groupEnd();
bool inGroup();
// Inside a group: collected; outside: launched now.
void submit(Submission submission);
// An operation inside the group failed its argument checks: the group will not launch.
void poisonGroup(const Error& error);

}  // namespace weft
