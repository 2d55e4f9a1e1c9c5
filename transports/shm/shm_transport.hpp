// weft's shared-memory point-to-point transport: tagged messages between the ranks of one
// communicator that share this host, through the mailboxes of the communicator's ShmSegment.
// Small messages travel inline (eager: the send completes at once); large ones are copied once,
// by the receiver, straight from the sender's buffer when the kernel allows it. See README.md
// for the mailbox protocol, the copy mechanisms and how dead peers are detected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transports/shm/segment.hpp"
#include "transports/transport.hpp"

namespace weft {

// How a receiver takes a large message from its sender.
enum class ShmCopy : uint8_t {
  // kDirect for a sender in this process, else kCma; if the kernel refuses CMA (EPERM, ENOSYS)
  // kMailbox for the rest of the transport's life (said once at INFO).
  kAuto,
  // process_vm_readv from the sender's buffer, for every peer (this process too); a refusal
  // fails the receive.
  kCma,
  // Through the pair's mailbox in chunks: two copies, works everywhere.
  kMailbox,
  // memcpy from the sender's buffer: every local rank must be a thread of this process.
  kDirect,
};
const char* shmCopyName(ShmCopy copy);

struct ShmTransportOptions {
  // Names the transport in log lines (communicator name or id).
  std::string label = "shm";
  // Every rank may pick its own: it only decides how this rank receives.
  ShmCopy copy = ShmCopy::kAuto;
  // Largest message this rank sends inline in the record ring (such a send completes when
  // posted). Clamped to a quarter of the record ring. A sender's choice: ranks may differ.
  size_t eagerBytes = 8192;
};

// A mailbox size per ordered pair of local ranks that suits the transport: 256 KiB, less when
// there are so many local ranks that the nlocal^2 mailboxes would pass 64 MiB (at least 32 KiB).
uint64_t defaultMailboxBytes(int nlocal);

// Creates the transport of local rank group.me. `segment` must have mailboxes (created with
// mailboxBytes >= 12 KiB by the same LocalGroup) and outlive the transport. Nothing is
// exchanged: mailboxes start zeroed, so a rank may send before its peer has created its
// transport. Peers are named by their global (communicator) ranks, group.ranks[i]; a peer not
// in the group is an internal error. Throws weftInvalidUsage for ShmCopy::kDirect when a local
// rank is another process, weftInvalidArgument when the mailboxes are too small.
std::unique_ptr<Transport> createShmTransport(ShmSegment& segment, const LocalGroup& group,
                                              const ShmTransportOptions& options);

}  // namespace weft
