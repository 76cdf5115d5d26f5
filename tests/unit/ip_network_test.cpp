#include "gateway/codec/ip_network.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace gateway;

TEST_CASE("an address parsed once is inside the same networks as its text", "[ip_network]") {
  std::string error;
  std::vector<ip_network> networks;
  for (const char* text : {"10.0.0.0/8", "192.168.0.0/16", "10.0.0.7", "0.0.0.0/0", "2001:db8::/32", "::1",
                           "::/0", "172.16.0.0/12", "10.1.2.3/31"}) {
    auto n = ip_network::parse(text, error);
    REQUIRE(n);
    networks.push_back(*n);
  }
  for (const char* text : {"10.0.0.7", "10.1.2.2", "10.1.2.4", "11.0.0.1", "192.168.255.1", "172.31.255.255",
                           "172.32.0.0", "::ffff:10.1.2.3", "::ffff:192.168.1.1", "2001:db8:ffff::1",
                           "2001:db9::1", "::1", "::2", "8.8.8.8"}) {
    INFO(text);
    const auto address = ip_address::parse(text);
    REQUIRE(address);
    for (const auto& n : networks) {
      INFO(n.text());
      CHECK(n.contains(*address) == n.contains(std::string_view(text)));
    }
  }
}

TEST_CASE("an IPv4-mapped address counts as its IPv4 address, text that is no address does not parse",
          "[ip_network]") {
  std::string error;
  const auto net = ip_network::parse("192.168.0.0/16", error);
  REQUIRE(net);
  const auto mapped = ip_address::parse("::ffff:192.168.1.1");
  REQUIRE(mapped);
  CHECK(net->contains(*mapped));
  const auto v6 = ip_network::parse("::/0", error);
  REQUIRE(v6);
  CHECK_FALSE(v6->contains(*mapped));  // an IPv4 address in effect: outside every IPv6 network
  for (const char* bad : {"", "not an address", "10.0.0.0/8", "1.2.3.4:80", "10.0.0.256", "[::1]"}) {
    INFO(bad);
    CHECK_FALSE(ip_address::parse(bad));
    CHECK_FALSE(net->contains(std::string_view(bad)));
  }
}
