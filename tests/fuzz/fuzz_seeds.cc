// Writes seed inputs (valid encodings) for the fuzz targets: fuzz_seeds <corpus directory>.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lib/bootstrap/frame.hpp"
#include "lib/bootstrap/handshake.hpp"
#include "lib/bootstrap/root_protocol.hpp"
#include "lib/bootstrap/unique_id.hpp"
#include "lib/topology/discover.hpp"
#include "lib/topology/picture.hpp"
#include "transports/shm/mailbox.hpp"
#include "transports/ucx/peer_info.hpp"

using namespace weft;

namespace {

void write(const std::filesystem::path& dir, const std::string& name,
           const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path root(argv[1]);
  Hello hello;
  hello.rank = 1;
  hello.nranks = 4;
  hello.info.address = SocketAddress::parse("127.0.0.1", 4242);
  hello.info.hostId = "boot-id:ipc-ns";
  hello.info.pid = 1234;
  const std::vector<uint8_t> helloPayload = encodeHello(hello);
  write(root / "fuzz_wire", "hello", encodeFrame(FrameType::kHello, helloPayload));
  RankTable table;
  table.ranks = {hello.info, hello.info};
  write(root / "fuzz_wire", "table", encodeFrame(FrameType::kTable, encodeTable(table)));
  Claim claim;
  claim.kind = Claim::kRingLink;
  claim.rank = 3;
  write(root / "fuzz_wire", "claim", encodeFrame(FrameType::kResponse, encodeClaim(claim)));
  write(root / "fuzz_bootstrap", "hello", encodeFrame(FrameType::kHello, helloPayload));
  write(root / "fuzz_bootstrap", "response", encodeFrame(FrameType::kResponse, std::vector<uint8_t>(96, 7)));

  UniqueId id;
  id.root = SocketAddress::parse("192.0.2.1", 5000);
  weftUniqueId wire;
  id.toWire(wire);
  write(root / "fuzz_unique_id", "wire",
        std::vector<uint8_t>(wire.internal, wire.internal + WEFT_UNIQUE_ID_BYTES));
  const std::string hex = id.toHex();
  write(root / "fuzz_unique_id", "hex", std::vector<uint8_t>(hex.begin(), hex.end()));

  const std::string env = std::string("INFO") + '\0' + "INIT,NET" + '\0' + "/tmp/x.%p" + '\0' +
                          "1500" + '\0' + "^lo" + '\0' + "4096";
  write(root / "fuzz_env", "typical", std::vector<uint8_t>(env.begin(), env.end()));
  // fuzz_transport: a UCX peer record (first byte even), and a record ring (first byte odd:
  // tail, head, then the ring) holding an eager record and a large one.
  ucx::PeerInfo peer;
  peer.rank = 1;
  peer.nranks = 4;
  peer.pid = 1234;
  peer.host = ucx::localHostIdentity();
  peer.workerAddress = std::vector<uint8_t>(48, 5);
  std::vector<uint8_t> peerSeed{0};
  const std::vector<uint8_t> peerBytes = ucx::encodePeerInfo(peer);
  peerSeed.insert(peerSeed.end(), peerBytes.begin(), peerBytes.end());
  write(root / "fuzz_transport", "peer_info", peerSeed);
  shm::RecordHeader eager{64, shm::kRecordEager, 7, 16, 0, 0, 0};
  shm::RecordHeader large{64, shm::kRecordLarge, 8, 1 << 20, 0x7f0000001000, 3, 1};
  std::vector<uint8_t> ring{1, 0, 0, 0, 0, 128, 0, 0, 0};  // tail 0, head 128
  ring.resize(1 + 8 + 128);
  std::memcpy(ring.data() + 9, &eager, sizeof eager);
  std::memcpy(ring.data() + 9 + 64, &large, sizeof large);
  write(root / "fuzz_transport", "records", ring);
  // fuzz_topology: a peer's view ('V' + encoding) of a synthetic two-package host, and every
  // hwloc XML fixture ('X' + the file).
  topology::LocalView view;
  view.hostId = "boot-id:ipc-ns";
  view.cpu = 3;
  view.graph = topology::discover({"", "pack:2 numa:1 core:2 pu:1"});
  std::vector<uint8_t> viewSeed{'V'};
  const std::vector<uint8_t> viewBytes = topology::encodeView(view);
  viewSeed.insert(viewSeed.end(), viewBytes.begin(), viewBytes.end());
  write(root / "fuzz_topology", "view", viewSeed);
  const std::filesystem::path fixtures = root / ".." / ".." / "fixtures";
  for (const auto& entry : std::filesystem::directory_iterator(fixtures)) {
    if (entry.path().extension() != ".xml") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> xml{'X'};
    xml.insert(xml.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    write(root / "fuzz_topology", entry.path().stem().string(), xml);
  }
  std::printf("seeds written to %s\n", argv[1]);
  return 0;
}
