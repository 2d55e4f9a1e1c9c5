// The tuner picks, per call, the configuration the cost model prices cheapest. Checked against a
// plain search written here: every allowed algorithm, every chunk size the tuner documents
// (16 KiB x 2^k up to 16 MiB) and one or two channels, each priced by the simulator.
#include "lib/tuner/tuner.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "algorithms/cost/simulator.hpp"

using namespace weft;

namespace {

constexpr weftDataType_t kFloat = weftFloat32;

MachineModel modelFor(const TunerSettings& settings, int p, int perHost) {
  MachineModel m;
  m.nranks = p;
  m.ranksPerHost = std::min(perHost, p);
  m.intra = settings.machine.ucx;
  m.inter = settings.machine.net;
  m.reduceGBps = settings.machine.reduceGBps;
  m.copyGBps = settings.machine.copyGBps;
  return m;
}

// The model's hosts as the cost model places ranks: rank q on host q / ranksPerHost.
std::vector<int> blockHosts(const MachineModel& m) {
  std::vector<int> hosts;
  if (m.ranksPerHost < m.nranks)
    for (int q = 0; q < m.nranks; ++q) hosts.push_back(q / m.ranksPerHost);
  return hosts;
}

// What the tuner may pick without WEFT_ALGO: everything serving c, except the hierarchical
// schedule on one host.
bool candidate(const Algorithm& a, Collective c, const MachineModel& m) {
  return a.serves(c) && (a.id != AlgorithmId::Hierarchical || m.ranksPerHost < m.nranks);
}

double priced(const Algorithm& a, Collective c, int p, uint64_t bytes, uint64_t chunk, int channels,
              const MachineModel& m) {
  const std::vector<int> hosts = blockHosts(m);
  CollectiveShape s;
  s.hostOfRank = hosts;
  s.collective = c;
  s.nranks = p;
  s.count = bytes / 4;
  s.elemSize = 4;
  s.chunkBytes = chunk;
  s.channels = channels;
  return simulate(a, s, m).seconds;
}

// The cheapest configuration of `a`, searched plainly.
double bestOf(const Algorithm& a, Collective c, int p, uint64_t bytes, const MachineModel& m) {
  double best = std::numeric_limits<double>::infinity();
  const bool chunked = a.usesChunks(c);
  for (uint64_t chunk = uint64_t{16} << 10; chunk <= uint64_t{16} << 20; chunk *= 2) {
    for (int ch = 1; ch <= (chunked && supportsChannels(c) ? 2 : 1); ++ch)
      best = std::min(best, priced(a, c, p, bytes, chunk, ch, m));
    if (!chunked) break;
  }
  return best;
}

}  // namespace

TEST_CASE("the tuner's choice is the simulated minimum and never slower than a forced one") {
  const TunerSettings settings;  // built-in machine parameters, every algorithm allowed
  for (Collective c : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce,
                       Collective::AllGather, Collective::ReduceScatter, Collective::AlltoAll})
    for (int p : {2, 3, 5, 8, 13, 16, 32})
      for (int perHost : {1, 4})
        for (uint64_t bytes :
             {uint64_t{64}, uint64_t{16} << 10, uint64_t{1} << 20, uint64_t{8} << 20}) {
          Tuner tuner(p, perHost, settings);
          const MachineModel m = modelFor(settings, p, perHost);
          const TunerChoice choice = tuner.choose(c, bytes, kFloat, {}, false, "ucx");
          REQUIRE(choice.algorithm != nullptr);
          const double chosen =
              priced(*choice.algorithm, c, p, bytes, choice.chunkBytes, choice.channels, m);
          INFO(collectiveName(c) << " p=" << p << " perHost=" << perHost << " bytes=" << bytes
                                 << " chose " << choice.algorithm->name << " chunk "
                                 << choice.chunkBytes << " x" << choice.channels);
          CHECK(choice.predictedSeconds == Approx(chosen).epsilon(1e-9));
          double minimum = std::numeric_limits<double>::infinity();
          for (const Algorithm& a : algorithmRegistry()) {
            if (!candidate(a, c, m)) continue;
            const double best = bestOf(a, c, p, bytes, m);
            minimum = std::min(minimum, best);
            // Forced with the default chunk and one channel, as WEFT_ALGO alone would run it.
            const double forced = priced(a, c, p, bytes, kDefaultChunkBytes, 1, m);
            INFO("forced " << a.name << ": " << forced << " s, chosen " << chosen << " s");
            CHECK(chosen <= forced * (1 + 1e-9));
          }
          CHECK(chosen == Approx(minimum).epsilon(1e-9));
        }
}

TEST_CASE("decisions are cached per collective, size bucket and datatype") {
  Tuner tuner(8, 2, TunerSettings{});
  const TunerChoice a = tuner.choose(Collective::AllReduce, 4096, kFloat, {}, false, "ucx");
  const TunerChoice b = tuner.choose(Collective::AllReduce, 8191, kFloat, {}, false, "ucx");
  CHECK(a.algorithm == b.algorithm);
  CHECK(a.predictedSeconds == b.predictedSeconds);
  CHECK(sizeBucket(4096) == 12);
  CHECK(sizeBucket(8191) == 12);
  CHECK(sizeBucket(8192) == 13);
  CHECK(sizeBucket(0) == 0);
  CHECK(sizeBucket(1) == 0);
}

TEST_CASE("WEFT_ALGO's selection limits the tuner, and a forced algorithm wins over native") {
  TunerSettings settings;
  settings.selection = parseAlgoSelection("allreduce:tree");
  Tuner tuner(8, 8, settings);
  for (uint64_t bytes : {uint64_t{8}, uint64_t{1} << 24}) {
    const TunerChoice c = tuner.choose(Collective::AllReduce, bytes, kFloat, {}, true, "shm");
    REQUIRE(c.algorithm != nullptr);  // the native path is ruled out: the schedule runs
    CHECK(std::string(c.algorithm->name) == "tree");
  }
  // Without WEFT_ALGO, native wins where it is available.
  Tuner plain(8, 8, TunerSettings{});
  CHECK(plain.choose(Collective::AllReduce, 8, kFloat, {}, true, "shm").algorithm == nullptr);
  // Nothing allowed but native on a communicator that cannot use it: an error, not a fallback.
  TunerSettings nativeOnly;
  nativeOnly.selection = parseAlgoSelection("allreduce:native");
  Tuner multiHost(8, 4, nativeOnly);
  CHECK_THROWS_WITH(multiHost.choose(Collective::AllReduce, 8, kFloat, {}, false, "ucx"),
                    Catch::Contains("WEFT_ALGO"));
}

TEST_CASE("hierarchical allreduce is a candidate on several hosts only, WEFT_ALGO can force it") {
  const TunerSettings settings;
  Tuner oneHost(4, 4, settings);
  for (uint64_t bytes : {uint64_t{8}, uint64_t{1} << 20, uint64_t{64} << 20})
    CHECK(oneHost.choose(Collective::AllReduce, bytes, kFloat, {}, false, "ucx").algorithm->id !=
          AlgorithmId::Hierarchical);
  const auto priced = [](const Tuner& t) {
    std::vector<std::string> out;
    for (const Candidate& c : t.price(Collective::AllReduce, 1 << 20, kFloat, "ucx"))
      out.push_back(c.algorithm->name);
    return out;
  };
  Tuner twoHosts(4, 2, settings);
  CHECK_THAT(priced(twoHosts), Catch::VectorContains(std::string("hierarchical")));
  CHECK_THAT(priced(oneHost), !Catch::VectorContains(std::string("hierarchical")));
  TunerSettings forced;
  forced.selection = parseAlgoSelection("allreduce:hierarchical");
  Tuner forcedOneHost(4, 4, forced);
  CHECK(forcedOneHost.choose(Collective::AllReduce, 8, kFloat, {}, false, "ucx").algorithm->id ==
        AlgorithmId::Hierarchical);
}

TEST_CASE("an algorithm forced by WEFT_ALGO runs with the chunk and channels the model picks") {
  // The 2 x 2 test bed's model (perf/multihost_allreduce): the tuner picks hierarchical at
  // 64 MiB with a chunk far from the default; forcing hierarchical must configure it alike.
  TunerSettings settings;
  settings.machine.net = {5, 0.125, 40};
  const uint64_t bytes = uint64_t{64} << 20;
  Tuner free(4, 2, settings);
  const TunerChoice picked = free.choose(Collective::AllReduce, bytes, kFloat, {}, false, "ucx");
  REQUIRE(picked.algorithm != nullptr);
  REQUIRE(picked.algorithm->id == AlgorithmId::Hierarchical);
  REQUIRE(picked.chunkBytes != kDefaultChunkBytes);
  settings.selection = parseAlgoSelection("allreduce:hierarchical");
  Tuner forced(4, 2, settings);
  const TunerChoice c = forced.choose(Collective::AllReduce, bytes, kFloat, {}, false, "ucx");
  CHECK(c.algorithm == picked.algorithm);
  CHECK(c.chunkBytes == picked.chunkBytes);
  CHECK(c.channels == picked.channels);
  // WEFT_CHUNK_BYTES still fixes the chunk.
  settings.chunkBytes = 65536;
  Tuner fixed(4, 2, settings);
  CHECK(fixed.choose(Collective::AllReduce, bytes, kFloat, {}, false, "ucx").chunkBytes == 65536);
}

TEST_CASE("across hosts, per-message costs make the tuner pick a logarithmic allreduce at 8 B and "
          "chunks past 16 KiB at 64 MiB") {
  {
    // 4 hosts x 2 ranks, built-in parameters. Every step of the ring has a rank sending to
    // another host, so its 2(p-1) steps cost at least (a + o) of the network each; recursive
    // doubling needs lg p steps of at most that (plus 8 bytes on the wire and a tiny reduction).
    const TunerSettings settings;
    const LinkParams& net = settings.machine.net;
    REQUIRE(net.messageUs > 0);
    const int p = 8;
    Tuner tuner(p, 2, settings);
    const TunerChoice choice = tuner.choose(Collective::AllReduce, 8, kFloat, {}, false, "ucx");
    REQUIRE(choice.algorithm != nullptr);
    const double step = (net.latencyUs + net.messageUs) * 1e-6;
    const double ringFloor = 2 * (p - 1) * step;
    const double logarithmic = std::log2(p) * step;
    INFO("chose " << choice.algorithm->name << ": " << choice.predictedSeconds << " s");
    CHECK(std::string(choice.algorithm->name) != "ring");
    CHECK(choice.predictedSeconds <= logarithmic * 1.05);
    CHECK(choice.predictedSeconds < ringFloor);
  }
  {
    // The 2 x 2 test bed (perf/multihost_allreduce): 1 Gbit/s links, here with 400 us of CPU
    // per message across hosts (10x what tcp costs there), more than a 16 KiB chunk's 131 us on
    // the wire. 64 MiB: every host must send 2(H-1)/H x n = n bytes over its link, so no
    // schedule beats n / b; 16 KiB chunks would put thousands of messages' CPU time, longer
    // than the transfer itself, on every rank's critical path.
    TunerSettings settings;
    settings.machine.net = {5, 0.125, 400};
    const int p = 4;
    const uint64_t bytes = uint64_t{64} << 20;
    Tuner tuner(p, 2, settings);
    const TunerChoice choice =
        tuner.choose(Collective::AllReduce, bytes, kFloat, {}, false, "ucx");
    REQUIRE(choice.algorithm != nullptr);
    const double linkFloor = static_cast<double>(bytes) / 0.125e9;
    const MachineModel m = modelFor(settings, p, 2);
    const double forcedHierarchical =
        priced(*findAlgorithm(Collective::AllReduce, "hierarchical"), Collective::AllReduce, p,
               bytes, kDefaultChunkBytes, 1, m);
    INFO("chose " << choice.algorithm->name << " chunk " << choice.chunkBytes << " x"
                  << choice.channels << ": " << choice.predictedSeconds << " s; floor "
                  << linkFloor << " s");
    CHECK(choice.chunkBytes > (uint64_t{16} << 10));
    CHECK(choice.predictedSeconds <= forcedHierarchical * (1 + 1e-9));
    CHECK(choice.predictedSeconds >= linkFloor);
    CHECK(choice.predictedSeconds <= linkFloor * 1.05);
  }
}

TEST_CASE("more ranks than host.cores slow every CPU cost of the host by ranks / cores") {
  MachineParams params;
  params.shm = {1.0, 8.0, 0.5};
  params.net = {5.0, 12.5, 4.0};
  params.reduceGBps = 6;
  params.copyGBps = 10;
  params.cores = 2;
  CHECK(oversubscription(params, 2) == 1);
  CHECK(oversubscription(params, 1) == 1);
  CHECK(oversubscription(params, 6) == 3);
  const MachineModel even = machineFor(params, 4, 2, "shm", kFloat);
  CHECK(even.intra.bandwidthGBps == 8.0);
  CHECK(even.reduceGBps == 6);
  const MachineModel crowded = machineFor(params, 12, 6, "shm", kFloat);
  CHECK(crowded.intra.latencyUs == 3.0);
  CHECK(crowded.intra.bandwidthGBps == Approx(8.0 / 3));
  CHECK(crowded.intra.messageUs == 1.5);
  CHECK(crowded.inter.bandwidthGBps == 12.5);  // the wire is not slowed
  CHECK(crowded.inter.latencyUs == 5.0);
  CHECK(crowded.inter.messageUs == 12.0);
  CHECK(crowded.reduceGBps == 2);
  CHECK(crowded.copyGBps == Approx(10.0 / 3));
  params.cores = 0;  // unknown: a core per rank
  CHECK(machineFor(params, 12, 6, "shm", kFloat).intra.bandwidthGBps == 8.0);
}

TEST_CASE("waking a rank costs host.switch_us more per message when ranks outnumber cores") {
  MachineParams params;
  params.shm = {1.0, 8.0, 0.5};
  params.cores = 2;
  params.switchUs = 3.5;
  CHECK(machineFor(params, 2, 2, "shm", kFloat).intra.latencyUs == 1.0);
  CHECK(machineFor(params, 4, 4, "shm", kFloat).intra.latencyUs == 2.0 + 3.5);
  // A message from another host waits for its receiver to be scheduled as well.
  params.net = {5.0, 12.5, 4.0};
  CHECK(machineFor(params, 8, 2, "ucx", kFloat).inter.latencyUs == 5.0);
  CHECK(machineFor(params, 8, 4, "ucx", kFloat).inter.latencyUs == 5.0 + 3.5);
  // Hosts that share cores (4 namespaced hosts on 2 cores): half a core each, 2 ranks on it.
  params.cores = 0.5;
  CHECK(oversubscription(params, 2) == 4);
  const MachineModel bed = machineFor(params, 8, 2, "ucx", kFloat);
  CHECK(bed.inter.latencyUs == 5.0 + 3.5);
  CHECK(bed.inter.messageUs == 16.0);
  // weft's shared memory copies on the receiver's CPU; UCX's is priced as a link.
  CHECK(machineFor(params, 4, 4, "shm", kFloat).intraCopiedByReceiver);
  CHECK_FALSE(machineFor(params, 4, 4, "ucx", kFloat).intraCopiedByReceiver);
}

TEST_CASE("size-dependent rates are read at the host's footprint in calibration's units") {
  MachineParams params;
  CHECK(footprintBytes(Collective::AllReduce, 1000, 8, 4, params) == 1000);  // cores unknown
  CHECK(footprintBytes(Collective::AllGather, 1000, 8, 4, params) == 8000);  // whole output
  params.cores = 2;
  // 4 ranks of a 2-core host touch twice what calibration's 2 ranks did.
  CHECK(footprintBytes(Collective::AllReduce, 1000, 8, 4, params) == 2000);
  CHECK(footprintBytes(Collective::AllReduce, 1000, 8, 1, params) == 500);
}
