#include "tools/weft-perf/options.hpp"

#include <catch2/catch.hpp>
#include <initializer_list>
#include <string>
#include <vector>

using namespace weft::perf;

namespace {

ParseOutcome parse(std::initializer_list<const char*> args) {
  const std::vector<const char*> v(args);
  return parseOptions(v);
}

Options ok(std::initializer_list<const char*> args) {
  const ParseOutcome out = parse(args);
  INFO(out.message);
  REQUIRE(out.kind == ParseOutcome::Kind::Run);
  return out.options;
}

std::string bad(std::initializer_list<const char*> args) {
  const ParseOutcome out = parse(args);
  REQUIRE(out.kind == ParseOutcome::Kind::Error);
  REQUIRE_FALSE(out.message.empty());
  return out.message;
}

}  // namespace

TEST_CASE("sizes take K, M and G suffixes as powers of 1024, in either case") {
  CHECK(parseBytes("0") == 0u);
  CHECK(parseBytes("8") == 8u);
  CHECK(parseBytes("1K") == 1024u);
  CHECK(parseBytes("1k") == 1024u);
  CHECK(parseBytes("64M") == 64u * 1024 * 1024);
  CHECK(parseBytes("64m") == 64u * 1024 * 1024);
  CHECK(parseBytes("2G") == 2ull * 1024 * 1024 * 1024);
  CHECK(parseBytes("3g") == 3ull * 1024 * 1024 * 1024);
  CHECK(parseBytes("18446744073709551615") == 18446744073709551615ull);
  for (const char* text : {"", "K", "1.5M", "-1", "+1", "1T", "12x", "1KB", "1 K", " 1",
                           "17179869184G", "18446744073709551616", "0x10"}) {
    INFO(text);
    CHECK_FALSE(parseBytes(text).has_value());
  }
}

TEST_CASE("defaults are nccl-tests' except -f 2") {
  const Options o = ok({"all_reduce"});
  CHECK(o.collective == Collective::AllReduce);
  CHECK(o.minBytes == 32u << 20);
  CHECK(o.maxBytes == 32u << 20);
  CHECK(o.stepFactor == 2);
  CHECK(o.stepBytes == 0);
  CHECK(o.iters == 20);
  CHECK(o.warmupIters == 1);
  CHECK(o.checkIters == 1);
  CHECK(o.datatypes == std::vector<weftDataType_t>{weftFloat32});
  CHECK(o.ops == std::vector<ReduceOp>{ReduceOp::Sum});
  CHECK(o.root == 0);
  CHECK(o.combine == TimeCombine::Average);
  CHECK_FALSE(o.blocking);
  CHECK(o.jsonPath.empty());
  CHECK(o.threads == 1);
  CHECK_FALSE(o.threadsGiven);
}

TEST_CASE("every collective is named as nccl-tests names it") {
  const std::pair<const char*, Collective> names[] = {{"all_reduce", Collective::AllReduce},
                                                      {"all_gather", Collective::AllGather},
                                                      {"reduce_scatter", Collective::ReduceScatter},
                                                      {"broadcast", Collective::Broadcast},
                                                      {"reduce", Collective::Reduce},
                                                      {"alltoall", Collective::AlltoAll},
                                                      {"gather", Collective::Gather},
                                                      {"scatter", Collective::Scatter},
                                                      {"sendrecv", Collective::SendRecv}};
  for (const auto& [name, c] : names) {
    INFO(name);
    CHECK(ok({name}).collective == c);
    CHECK(collectiveName(c) == name);
  }
  // The collective may come after the flags.
  CHECK(ok({"-b", "8", "gather"}).collective == Collective::Gather);
}

TEST_CASE("every flag, in its short, attached and long forms") {
  const Options o = ok({"broadcast", "-b", "8",  "-e", "1M", "-f",   "4",        "-n",  "7",
                        "-w",        "3",  "-c", "2",  "-d", "half", "-o",       "max", "-r",
                        "1",         "-a", "3",  "-z", "1",  "-J",   "out.json", "-t",  "4"});
  CHECK(o.collective == Collective::Broadcast);
  CHECK(o.minBytes == 8);
  CHECK(o.maxBytes == 1u << 20);
  CHECK(o.stepFactor == 4);
  CHECK(o.iters == 7);
  CHECK(o.warmupIters == 3);
  CHECK(o.checkIters == 2);
  CHECK(o.datatypes == std::vector<weftDataType_t>{weftFloat16});
  CHECK(o.ops == std::vector<ReduceOp>{ReduceOp::Max});
  CHECK(o.root == 1);
  CHECK(o.combine == TimeCombine::Max);
  CHECK(o.blocking);
  CHECK(o.jsonPath == "out.json");
  CHECK(o.threads == 4);
  CHECK(o.threadsGiven);

  const Options a = ok({"reduce", "-b1K", "-e2K", "-i512", "-n1", "-w0", "-c0", "-dint8", "-omin",
                        "-r2", "-a0", "-z0", "-Jx.json", "-t2"});
  CHECK(a.minBytes == 1024);
  CHECK(a.maxBytes == 2048);
  CHECK(a.stepBytes == 512);
  CHECK(a.iters == 1);
  CHECK(a.warmupIters == 0);
  CHECK(a.checkIters == 0);
  CHECK(a.datatypes == std::vector<weftDataType_t>{weftInt8});
  CHECK(a.ops == std::vector<ReduceOp>{ReduceOp::Min});
  CHECK(a.root == 2);
  CHECK(a.combine == TimeCombine::Rank0);
  CHECK_FALSE(a.blocking);
  CHECK(a.jsonPath == "x.json");
  CHECK(a.threads == 2);

  const Options l =
      ok({"--minbytes",     "16", "--maxbytes=32", "--stepfactor", "3",      "--iters=5",
          "--warmup_iters", "2",  "--check=0",     "--datatype",   "double", "--op=prod",
          "--root",         "0",  "--average=2",   "--blocking",   "1",      "--output_file=r.json",
          "--nthreads",     "3",  "all_gather"});
  CHECK(l.minBytes == 16);
  CHECK(l.maxBytes == 32);
  CHECK(l.stepFactor == 3);
  CHECK(l.iters == 5);
  CHECK(l.warmupIters == 2);
  CHECK(l.checkIters == 0);
  CHECK(l.datatypes == std::vector<weftDataType_t>{weftFloat64});
  CHECK(l.ops == std::vector<ReduceOp>{ReduceOp::Prod});
  CHECK(l.combine == TimeCombine::Min);
  CHECK(l.blocking);
  CHECK(l.jsonPath == "r.json");
  CHECK(l.threads == 3);
  CHECK(ok({"all_reduce", "--json", "j.json"}).jsonPath == "j.json");
  CHECK(ok({"all_reduce", "--stepbytes=1K"}).stepBytes == 1024);
}

TEST_CASE("datatype and op flags take every name, a few aliases, and all") {
  const std::pair<const char*, weftDataType_t> types[] = {
      {"int8", weftInt8},         {"uint8", weftUint8},        {"int32", weftInt32},
      {"uint32", weftUint32},     {"int64", weftInt64},        {"uint64", weftUint64},
      {"half", weftFloat16},      {"float", weftFloat32},      {"double", weftFloat64},
      {"bfloat16", weftBfloat16}, {"f8e4m3", weftFloat8e4m3},  {"f8e5m2", weftFloat8e5m2},
      {"char", weftInt8},         {"int", weftInt32},          {"fp16", weftFloat16},
      {"float32", weftFloat32},   {"FP64", weftFloat64},       {"bf16", weftBfloat16},
      {"e4m3", weftFloat8e4m3},   {"fp8_e5m2", weftFloat8e5m2}};
  for (const auto& [name, type] : types) {
    INFO(name);
    CHECK(ok({"all_reduce", "-d", name}).datatypes == std::vector<weftDataType_t>{type});
  }
  CHECK(ok({"all_reduce", "-d", "all"}).datatypes.size() == 12);
  CHECK(ok({"all_reduce", "-d", "ALL"}).datatypes.front() == weftInt8);

  const std::pair<const char*, ReduceOp> ops[] = {
      {"sum", ReduceOp::Sum},         {"prod", ReduceOp::Prod}, {"max", ReduceOp::Max},
      {"min", ReduceOp::Min},         {"avg", ReduceOp::Avg},   {"premulsum", ReduceOp::PreMulSum},
      {"mulsum", ReduceOp::PreMulSum}};
  for (const auto& [name, op] : ops) {
    INFO(name);
    CHECK(ok({"all_reduce", "-o", name}).ops == std::vector<ReduceOp>{op});
  }
  CHECK(ok({"all_reduce", "-o", "all"}).ops ==
        std::vector<ReduceOp>{ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min,
                              ReduceOp::Avg, ReduceOp::PreMulSum});
}

TEST_CASE("a lone minimum or maximum stretches the other default, a contradiction is an error") {
  const Options big = ok({"all_reduce", "-b", "64M"});
  CHECK(big.minBytes == 64u << 20);
  CHECK(big.maxBytes == 64u << 20);
  const Options small = ok({"all_reduce", "-e", "1K"});
  CHECK(small.minBytes == 1024);
  CHECK(small.maxBytes == 1024);
  CHECK(bad({"all_reduce", "-b", "2K", "-e", "1K"}).find("-b 2048 is larger than -e 1024") !=
        std::string::npos);
}

TEST_CASE("help is asked for wherever -h appears, and needs no collective") {
  CHECK(parse({"-h"}).kind == ParseOutcome::Kind::Help);
  CHECK(parse({"--help"}).kind == ParseOutcome::Kind::Help);
  CHECK(parse({"all_reduce", "-b", "8", "-h"}).kind == ParseOutcome::Kind::Help);
  CHECK(usage("weft-perf").find("Usage: weft-perf <collective> [flags]") == 0);
}

TEST_CASE("bad command lines are errors that say what was wrong") {
  CHECK(bad({}).find("missing the collective") != std::string::npos);
  CHECK(bad({"allreduce"}).find("unknown collective 'allreduce'") != std::string::npos);
  CHECK(bad({"all_reduce", "reduce"}).find("unexpected argument 'reduce'") != std::string::npos);
  CHECK(bad({"all_reduce", "-x"}).find("unknown flag -x") != std::string::npos);
  CHECK(bad({"all_reduce", "--bogus"}).find("unknown flag --bogus") != std::string::npos);
  CHECK(bad({"all_reduce", "--help=1"}).find("takes no value") != std::string::npos);
  CHECK(bad({"all_reduce", "-hx"}).find("unknown flag -hx") != std::string::npos);
  CHECK(bad({"all_reduce", "-b"}).find("-b needs a value") != std::string::npos);
  CHECK(bad({"all_reduce", "--maxbytes"}).find("--maxbytes needs a value") != std::string::npos);
  CHECK(bad({"all_reduce", "-f", "-i", "8"}).find("-f -i") != std::string::npos);
  CHECK(bad({"all_reduce", "-f", "2", "-i", "8"}).find("-f (multiply) and -i (add)") !=
        std::string::npos);
  const std::vector<std::pair<const char*, const char*>> badValues = {
      {"-b", "1.5K"},       {"-b", "x"},   {"-e", "-1"},    {"-f", "1"},    {"-f", "0"},
      {"-f", "2.5"},        {"-i", "0"},   {"-i", "k"},     {"-n", "0"},    {"-n", "x"},
      {"-w", "-1"},         {"-c", "-1"},  {"-d", "int16"}, {"-d", ""},     {"-o", "avg2"},
      {"-o", "or"},         {"-r", "-1"},  {"-r", "one"},   {"-a", "4"},    {"-a", "-1"},
      {"-z", "2"},          {"-z", "yes"}, {"-t", "0"},     {"-t", "1025"}, {"-J", ""},
      {"-n", "99999999999"}};
  for (const auto& [flag, value] : badValues) {
    INFO(flag << " " << value);
    const std::string message = bad({"all_reduce", flag, value});
    CHECK(message.find(flag) == 0);
    CHECK(message.find("expected") != std::string::npos);
  }
}

TEST_CASE("registered buffers: -R 1 asks for weftMemAlloc buffers, as nccl-tests' -R") {
  CHECK_FALSE(ok({"all_reduce"}).registered);
  CHECK(ok({"all_reduce", "-R", "1"}).registered);
  CHECK(ok({"all_reduce", "--local_register=1"}).registered);
  CHECK(parse({"all_reduce", "-R", "2"}).kind == ParseOutcome::Kind::Error);
}

TEST_CASE("weft-perf --calibrate FILE replaces the collective, and --link names its link class") {
  const Options o = ok({"--calibrate", "tune.txt"});
  CHECK(o.calibratePath == "tune.txt");
  CHECK(o.calibrateLink.empty());
  CHECK(ok({"--calibrate=t", "--link", "net"}).calibrateLink == "net");
  CHECK_THAT(bad({"all_reduce", "--calibrate", "t"}), Catch::Contains("not a collective"));
  CHECK_THAT(bad({"--link", "ucx"}), Catch::Contains("give --calibrate FILE too"));
  CHECK_THAT(bad({"--calibrate", "t", "--link", "tcp"}), Catch::Contains("shm, ucx or net"));
}
