// libFuzzer target: the access log's line from what a client sends, the redaction of its target, and the
// client behind trusted proxies by X-Forwarded-For.
// Input: NUL-separated fields: the request target, the User-Agent, the request id, an X-Forwarded-For
// value, then call names (the route's calls, up to 8).
// Invariants: the JSON line is one line that nlohmann's reader (an independent implementation) reads as
// an object whose texts are the entry's (when valid UTF-8) and whose path is the target with exactly the
// secret query values replaced by REDACTED (against a reference written here); the text line is one line;
// the client found is empty or one entry of the X-Forwarded-For value, an address.

#include "gateway/codec/ip_network.hpp"
#include "gateway/observe/logging.hpp"
#include "gateway/trace/redaction.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <boost/asio/ip/address.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace {

std::string_view field(std::string_view& rest) {
  const auto nul = rest.find('\0');
  const auto part = rest.substr(0, nul);
  rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  return part;
}

// The reference redaction: split on '?' and '&', each pair on its first '='.
std::string reference_redaction(std::string_view target) {
  const auto query = target.find('?');
  if (query == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, query + 1));
  std::vector<std::string_view> pairs;
  auto rest = target.substr(query + 1);
  for (;;) {
    const auto amp = rest.find('&');
    pairs.push_back(rest.substr(0, amp));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (i != 0) out += '&';
    const auto eq = pairs[i].find('=');
    if (eq != std::string_view::npos && gateway::secret_query_name(pairs[i].substr(0, eq))) {
      out.append(pairs[i].substr(0, eq + 1)).append("REDACTED");
    } else {
      out.append(pairs[i]);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const auto target = field(rest);
  const auto user_agent = field(rest);
  const auto request_id = field(rest);
  const auto forwarded = field(rest);
  gateway::aggregate_route route;
  while (!rest.empty() && route.calls.size() < 8) route.calls.emplace_back().name = std::string(field(rest));
  std::vector<gateway::call_brief> calls;
  for (std::size_t i = 0; i < route.calls.size(); ++i)
    calls.push_back({static_cast<std::uint8_t>(i % gateway::outcome_label_count),
                     static_cast<std::uint16_t>(i * 97), static_cast<std::uint32_t>(i * 123457), i % 2 == 1,
                     static_cast<std::uint32_t>(i * 613566757)});  // some from the cache, of any age

  // The client behind trusted proxies.
  std::string error;
  const std::vector<gateway::ip_network> trusted = {*gateway::ip_network::parse("10.0.0.0/8", error)};
  const auto client = gateway::forwarded_client(forwarded, trusted);
  if (!client.empty()) {
    FUZZ_CHECK(client.data() >= forwarded.data() &&
               client.data() + client.size() <= forwarded.data() + forwarded.size());
    FUZZ_CHECK(client.find(',') == std::string_view::npos);
    boost::system::error_code ec;
    boost::asio::ip::make_address(std::string(client), ec);
    FUZZ_CHECK(!ec);
  }

  // The redaction against the reference (below the length bound, where nothing is cut).
  std::string redacted;
  gateway::append_redacted_target(redacted, target);
  const auto expected = reference_redaction(target);
  if (expected.size() <= 2048) {
    FUZZ_CHECK(redacted == expected);
  } else {
    FUZZ_CHECK(redacted.size() <= 2048 + 3 + 8 + target.size());
  }

  gateway::access_entry e;
  e.request_id = request_id;
  e.method = "GET";
  e.route = "/r/{id}";
  e.target = target;
  e.status = 200;
  e.duration_ms = static_cast<double>(size) / 7.0;
  e.client = client.empty() ? std::string_view("127.0.0.1:1") : client;
  e.user_agent = user_agent;
  e.calls = calls;
  e.calls_of = &route;
  const auto json_line = gateway::format_access_line(e, gateway::log_format::json);
  FUZZ_CHECK(json_line.find('\n') == std::string::npos);
  const auto j = nlohmann::json::parse(json_line, nullptr, false);
  FUZZ_CHECK(j.is_object());
  if (fuzz::valid_utf8(request_id)) FUZZ_CHECK(j.at("request_id") == std::string(request_id));
  if (fuzz::valid_utf8(redacted)) FUZZ_CHECK(j.at("path") == redacted);
  const auto ua = user_agent.substr(0, 256);
  if (fuzz::valid_utf8(ua)) FUZZ_CHECK(j.at("user_agent") == std::string(ua));
  FUZZ_CHECK(route.calls.empty() ? !j.contains("calls") : j.at("calls").size() == route.calls.size());
  for (std::size_t i = 0; i < route.calls.size(); ++i) {
    if (fuzz::valid_utf8(route.calls[i].name)) FUZZ_CHECK(j.at("calls")[i].at("name") == route.calls[i].name);
  }
  const auto text_line = gateway::format_access_line(e, gateway::log_format::text);
  // A target from the network has no controls (the parser refuses them); a fuzzed one may.
  if (target.find_first_of("\r\n") == std::string_view::npos &&
      request_id.find_first_of("\r\n") == std::string_view::npos &&
      e.client.find_first_of("\r\n") == std::string_view::npos) {
    bool names_plain = true;
    for (const auto& c : route.calls)
      names_plain = names_plain && c.name.find_first_of("\r\n") == std::string::npos;
    if (names_plain) FUZZ_CHECK(text_line.find('\n') == std::string::npos);
  }
  return 0;
}
