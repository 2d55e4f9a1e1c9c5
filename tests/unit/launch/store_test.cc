// weft's rendezvous store: a server and its clients as threads of this process, on ports the
// kernel picks (port 0), so that tests never collide.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "lib/base/error.hpp"
#include "lib/bootstrap/frame.hpp"
#include "lib/bootstrap/handshake.hpp"
#include "lib/bootstrap/store.hpp"

using namespace weft;

namespace {

constexpr int64_t kGenerousMs = 30000;

std::vector<uint8_t> bytesOf(std::string_view text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

std::vector<uint8_t> get(uint16_t port, const Secret& secret, int rank, std::string_view key,
                         int64_t ms = kGenerousMs, const char* host = "localhost") {
  return storeGet(host, port, secret, rank, key, Deadline::afterMs(ms), nullptr);
}

}  // namespace

TEST_CASE("the store hands a value to every client that knows the secret") {
  const Secret secret = storeSecret("tell no one");
  auto server = StoreServer::start(0, secret, Deadline::afterMs(kGenerousMs));
  server->set("weft/unique_id/0", bytesOf("the id"));
  std::vector<std::future<std::vector<uint8_t>>> clients;
  for (int rank = 1; rank <= 6; ++rank)
    clients.push_back(std::async(std::launch::async, [&, rank] {
      // Both address families reach the store (it listens on all of them).
      return get(server->port(), secret, rank, "weft/unique_id/0", kGenerousMs,
                 rank % 2 ? "127.0.0.1" : "localhost");
    }));
  for (auto& c : clients) CHECK(c.get() == bytesOf("the id"));
  // The server counts a reply once its send has returned, which can be after the client has
  // read it: wait for the count (bounded) rather than race it.
  const Deadline deadline = Deadline::afterMs(kGenerousMs);
  while (server->served("weft/unique_id/0") < 6 && !deadline.expired())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(server->served("weft/unique_id/0") == 6);
}

TEST_CASE("a request for a key not yet set waits until it is set") {
  const Secret secret = storeSecret("s");
  auto server = StoreServer::start(0, secret, Deadline::afterMs(kGenerousMs));
  auto client = std::async(std::launch::async, [&] { return get(server->port(), secret, 1, "k"); });
  CHECK(client.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
  server->set("k", bytesOf("later"));
  CHECK(client.get() == bytesOf("later"));
}

TEST_CASE("a client waits for a store that is not listening yet") {
  const Secret secret = storeSecret("s");
  // Find a free port, release it, and start the store there a little later.
  uint16_t port = 0;
  {
    auto probe = StoreServer::start(0, secret, Deadline::afterMs(kGenerousMs));
    port = probe->port();
  }
  auto client = std::async(std::launch::async, [&] { return get(port, secret, 1, "k"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto server = StoreServer::start(port, secret, Deadline::afterMs(kGenerousMs));
  server->set("k", bytesOf("v"));
  CHECK(client.get() == bytesOf("v"));
}

TEST_CASE("a client with the wrong secret is refused quickly, and the others still get the "
          "value") {
  const Secret secret = storeSecret("right");
  auto server = StoreServer::start(0, secret, Deadline::afterMs(kGenerousMs));
  server->set("k", bytesOf("v"));
  const auto start = std::chrono::steady_clock::now();
  try {
    get(server->port(), storeSecret("wrong"), 1, "k");
    FAIL("the wrong secret got the value");
  } catch (const Error& e) {
    CHECK(e.result() == weftRemoteError);
    CHECK_THAT(e.what(), Catch::Contains("WEFT_SECRET"));
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  CHECK(get(server->port(), secret, 2, "k") == bytesOf("v"));
  // Counted once the reply's send has returned, which can be after the client read it (as above).
  const Deadline deadline = Deadline::afterMs(kGenerousMs);
  while (server->served("k") < 1 && !deadline.expired())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(server->served("k") == 1);
}

TEST_CASE("nobody listening is a timeout naming the store") {
  uint16_t port = 0;
  {
    auto probe = StoreServer::start(0, storeSecret("s"), Deadline::afterMs(kGenerousMs));
    port = probe->port();
  }
  try {
    get(port, storeSecret("s"), 3, "k", 500);
    FAIL("no timeout");
  } catch (const Error& e) {
    CHECK(e.result() == weftTimeout);
    CHECK_THAT(e.what(), Catch::Contains("rank 3") && Catch::Contains(std::to_string(port)));
  }
}

TEST_CASE("a store that closes with a client waiting sends it to ask again") {
  const Secret secret = storeSecret("s");
  auto first = StoreServer::start(0, secret, Deadline::afterMs(kGenerousMs));
  const uint16_t port = first->port();
  // The client asks the first store for a key it will never have...
  auto client = std::async(std::launch::async, [&] { return get(port, secret, 1, "second"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // ... which closes; the next store on the same port has it.
  first.reset();
  auto second = StoreServer::start(port, secret, Deadline::afterMs(kGenerousMs));
  second->set("second", bytesOf("2"));
  CHECK(client.get() == bytesOf("2"));
}

TEST_CASE("strangers and garbage do not disturb the store") {
  const Secret secret = storeSecret("s");
  auto server = StoreServer::start(0, secret, Deadline::afterMs(kGenerousMs));
  server->set("k", bytesOf("v"));
  const SocketAddress at = SocketAddress::parse("127.0.0.1", server->port());
  Socket silent = connectTo(at, Deadline::afterMs(kGenerousMs), nullptr);
  Socket garbage = connectTo(at, Deadline::afterMs(kGenerousMs), nullptr);
  const std::vector<uint8_t> junk(100, 'X');
  garbage.sendAll(junk, Deadline::afterMs(kGenerousMs), nullptr, "garbage");
  // A rank of the bootstrap (the right secret, the wrong claim) is not a store client either.
  Socket impostor = connectTo(at, Deadline::afterMs(kGenerousMs), nullptr);
  CHECK_THROWS_AS(authenticateToAcceptor(impostor, secret, encodeClaim(Claim{}),
                                         Deadline::afterMs(kGenerousMs), nullptr),
                  Error);
  CHECK(get(server->port(), secret, 1, "k") == bytesOf("v"));
}

TEST_CASE("the secret file's contents are the secret, loose permissions are warned about") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("weft-secret-test-" + std::to_string(::getpid()));
  {
    std::ofstream out(path);
    out << "correct horse\n";
  }
  std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::owner_write);
  std::string warning;
  CHECK(readSecretFile(path, warning) == "correct horse");
  CHECK(warning.empty());
  std::filesystem::permissions(path, std::filesystem::perms::others_read,
                               std::filesystem::perm_options::add);
  CHECK(readSecretFile(path, warning) == "correct horse");
  CHECK_THAT(warning, Catch::Contains("0600"));
  std::filesystem::remove(path);
  CHECK_THROWS_AS(readSecretFile(path, warning), Error);
  CHECK(storeSecret("a") != storeSecret("b"));
  CHECK(storeSecret("a") == storeSecret("a"));
}

TEST_CASE("a port in use is an error that says what to do") {
  auto first = StoreServer::start(0, storeSecret("s"), Deadline::afterMs(kGenerousMs));
  try {
    StoreServer::start(first->port(), storeSecret("s"), Deadline::afterMs(kGenerousMs));
    FAIL("two stores on one port");
  } catch (const Error& e) {
    CHECK(e.result() == weftSystemError);
    CHECK_THAT(e.what(), Catch::Contains("WEFT_STORE_PORT"));
  }
}
