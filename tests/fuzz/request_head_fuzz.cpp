// libFuzzer target: the path of a client request up to the fan-out. Beast's request parser with the
// limits and options the session sets, then what the gateway does with each parsed request: the check of
// its transfer codings, the edge's admission of its fields and target (admit_head), the route lookup on
// the routes of config/gateway.yaml, the split of the target, the query parameters and the downstream
// targets expanded from them, and the JSON strings that carry request text into error bodies and log
// lines. (make_request_id and error_body live in request_handler.cpp next to the fan-out, whose sources
// and libraries they would bring along.)
// Input: byte 0 picks the sizes of the pieces the rest arrives in; the rest is what a client sends on one
// connection (several pipelined requests are handled in turn, as the session does).
// Invariants: nothing crashes or leaks; a body accepted with a transfer coding was framed by Beast as
// chunked; the lookup is consistent with the route table; a request that passes the parameter checks
// yields downstream targets without spaces or control characters; any bytes written as a JSON string
// give valid JSON that reads back as the same text when it was valid UTF-8.

#include "gateway/codec/json_object.hpp"
#include "gateway/codec/json_text.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/config/param_pattern.hpp"
#include "gateway/server/request_framing.hpp"
#include "gateway/server/router.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <boost/assert.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#ifndef GATEWAY_FUZZ_CONFIG
#error "GATEWAY_FUZZ_CONFIG must name the configuration whose routes are fuzzed"
#endif

namespace {

namespace http = boost::beast::http;
using boost::system::error_code;

constexpr int max_requests = 8;  // per input: enough for pipelining, bounded for speed

const gateway::gateway_config* config = nullptr;  // loaded once, never freed

std::string_view header(const http::request<http::string_body>& req, std::string_view name) {
  const auto it = req.find(name);
  return it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
}

// Request text written as a JSON string (error messages, access log lines) gives valid JSON, which reads
// back as the same text when that text was valid UTF-8.
void check_json_string(std::string_view text) {
  std::string object = "{\"v\":";
  gateway::append_json_string(object, text);
  object += '}';
  gateway::json_object_text parsed;
  FUZZ_CHECK(gateway::parse_json_object(std::move(object), parsed));
  FUZZ_CHECK(parsed.members.size() == 1);
  if (fuzz::valid_utf8(text))
    FUZZ_CHECK(nlohmann::json::parse(parsed.value(parsed.members[0])).get<std::string>() == text);
}

// What the request handler does before the fan-out, with the checks of each step.
void handle(std::string_view method, std::string_view target) {
  const auto path = gateway::target_path(target);
  const auto query = gateway::target_query(target);
  const auto question = target.find('?');
  FUZZ_CHECK(question == std::string_view::npos ? query.empty() : query == target.substr(question + 1));
  if (target.starts_with('/')) {  // origin form: the path is what precedes the query
    FUZZ_CHECK(path == target.substr(0, question));
  } else if (path.data() >= target.data() && path.data() < target.data() + target.size()) {
    // Another form (absolute: "http://host/path?query"): the path never comes from the query. Known: when
    // the authority is followed directly by the query, the path is taken from inside the query
    // (crashes/request_head-absolute-path-from-query).
    const auto at = static_cast<std::size_t>(path.data() - target.data());
    const auto scheme_end = target.find("://");
    const auto authority_end =
        scheme_end == std::string_view::npos ? scheme_end : target.find_first_of("/?", scheme_end + 3);
    const bool path_from_query_known =
        authority_end != std::string_view::npos && target[authority_end] == '?';
    FUZZ_CHECK(question == std::string_view::npos || question >= at || path_from_query_known);
  }

  const auto& routes = config->routes;
  const auto found = gateway::router(routes).find(method, target);
  bool path_known = false;
  for (const auto& r : routes) path_known = path_known || r.path == path;
  FUZZ_CHECK(found.status == 200 || found.status == 404 || found.status == 405);
  FUZZ_CHECK((found.status == 404) == !path_known);
  FUZZ_CHECK(found.status != 405 || !found.allow.empty());
  if (found.status != 200) return;
  FUZZ_CHECK(found.index < routes.size());
  const auto& route = routes[found.index];
  FUZZ_CHECK(route.path == path && (route.method == method || (method == "HEAD" && route.method == "GET")));

  const auto* aggregate = route.aggregate();  // config/gateway.yaml has no pass-through routes
  FUZZ_CHECK(aggregate != nullptr);
  const auto& params = aggregate->params;
  gateway::param_values values;
  const auto problem = gateway::extract_params(route.pattern, params, query, {}, values);
  FUZZ_CHECK(values.size() == params.size());
  if (!problem.empty()) {
    check_json_string(problem);
    return;
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    FUZZ_CHECK(!p.required || !values[i].empty());
    FUZZ_CHECK(values[i].empty() || !p.matcher || p.matcher->matches(values[i]));
  }
  for (const auto& call : aggregate->calls) {
    std::string downstream_target;
    call.path.expand(downstream_target, [&](const std::string& name) -> std::string_view {
      for (std::size_t p = 0; p < params.size(); ++p) {
        if (params[p].name == name) return values[p];
      }
      return {};
    });
    for (const char c : downstream_target) {
      FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f);
    }
  }
}

// Presents `pending` in a buffer of exactly its size, so that ASan reports any read past it.
std::size_t put_exact(http::request_parser<http::string_body>& parser, const std::string& pending,
                      error_code& ec) {
  const auto copy = std::make_unique<char[]>(pending.size());
  std::memcpy(copy.get(), pending.data(), pending.size());
  return parser.put(boost::asio::const_buffer(copy.get(), pending.size()), ec);
}

}  // namespace

// Boost.Beast 1.81 asserts `n >= 5` in parse_chunk_header when the final chunk of a body arrives in
// pieces (crashes/request_head-beast-chunk-assert: a valid chunked request sent a byte at a time). The
// assertion is too strict, the code after it handles the case (boostorg/beast pull request 2861), and
// builds with NDEBUG never check it. Every other assertion aborts.
namespace boost {

void assertion_failed(char const* expr, char const* function, char const* file, long line) {
  if (std::string_view(expr) == "n >= 5" &&
      std::string_view(function).find("parse_chunk_header") != std::string_view::npos)
    return;
  std::fprintf(stderr, "%s:%ld: %s: assertion failed: %s\n", file, line, function, expr);
  std::abort();
}

void assertion_failed_msg(char const* expr, char const* msg, char const* function, char const* file,
                          long line) {
  std::fprintf(stderr, "%s:%ld: %s: assertion failed: %s (%s)\n", file, line, function, expr, msg);
  std::abort();
}

}  // namespace boost

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static auto loaded = gateway::load_config_file(GATEWAY_FUZZ_CONFIG);
  if (!loaded.config) {
    for (const auto& e : loaded.errors)
      std::fprintf(stderr, "%s\n", gateway::format_config_error(GATEWAY_FUZZ_CONFIG, e).c_str());
    std::abort();
  }
  config = &*loaded.config;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input in(data, size);
  fuzz::piece_sizes sizes(in.byte());
  const auto stream = in.rest();
  const auto& limits = config->limits;
  const auto buffer_limit = limits.max_header_bytes + limits.max_body_bytes + 4096;

  std::string pending;  // received and not yet consumed, as in the connection's read buffer
  std::size_t at = 0;
  for (int request = 0; request < max_requests; ++request) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
    parser.body_limit(limits.max_body_bytes);
    parser.eager(true);
    error_code ec;
    for (;;) {
      if (!pending.empty()) {
        const auto used = put_exact(parser, pending, ec);
        FUZZ_CHECK(used <= pending.size());
        pending.erase(0, used);
        if (parser.is_done() || (ec && ec != http::error::need_more)) break;
      }
      if (at == stream.size()) {  // the client closed the connection
        if (parser.got_some()) parser.put_eof(ec);
        if (!ec && !parser.is_done()) ec = http::error::partial_message;
        break;
      }
      const auto step = sizes.next();
      const auto n = step == 0 ? stream.size() - at : std::min(step, stream.size() - at);
      pending.append(stream.substr(at, n));
      at += n;
      if (pending.size() > buffer_limit) {
        ec = http::error::buffer_overflow;
        break;
      }
    }
    if (!parser.is_done()) return 0;  // the session answers 400, 413 or 431 (or nothing) and closes
    const auto& req = parser.get();
    FUZZ_CHECK(req.body().size() <= limits.max_body_bytes);
    // Framing Beast leaves to the gateway: a request it lets through must have had its body framed by
    // Beast as chunked when it names a coding; one it refuses closes the connection.
    const auto framing = gateway::transfer_coding_status(req);
    FUZZ_CHECK(framing == 0 || framing == 400 || framing == 501);
    FUZZ_CHECK(framing != 0 || req.count(http::field::transfer_encoding) == 0 || parser.chunked());
    if (framing != 0) return 0;  // answered 400 or 501, and the connection closes
    // The edge's admission (fields, the target made canonical): a refusal is a 400 and a close.
    if (const auto why = gateway::admit_head(parser.get()); !why.empty()) {
      check_json_string(why);
      return 0;
    }
    const std::string_view target(req.target().data(), req.target().size());
    FUZZ_CHECK(target == "*" || target.starts_with('/'));
    handle(std::string_view(req.method_string().data(), req.method_string().size()), target);
    check_json_string(target);
    check_json_string(header(req, "X-Request-Id"));
    check_json_string(req.body());
    if (!req.keep_alive()) return 0;
  }
  return 0;
}
