// A string that is equal for two processes exactly when they can share memory: the kernel's boot
// id (one per running kernel, unlike host names, which containers and clusters repeat) plus the
// IPC namespace (containers on one kernel may not see each other's shared memory).
#pragma once

#include <string>
#include <string_view>

namespace weft {

// This process's identity, computed once: WEFT_HOST_ID when set (logged at INFO), else from
// /proc. When /proc does not say, a random identity is used so that the process is treated as
// alone on its host (never wrongly sharing memory); that is logged at WARN.
const std::string& hostIdentity();

// Pure: the identity WEFT_HOST_ID=`value` gives (never equal to one read from the kernel).
std::string hostIdentityOverride(std::string_view value);

// Pure: the identity made of a boot id (/proc/sys/kernel/random/boot_id, newline allowed) and an
// IPC namespace link text (readlink /proc/self/ns/ipc, "ipc:[4026531839]").
std::string hostIdentityFrom(std::string_view bootId, std::string_view ipcNamespace);

}  // namespace weft
