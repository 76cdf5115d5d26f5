// libFuzzer target: gateway::response_parser fed the way a downstream call feeds it.
// Input: byte 0 picks the body limit, byte 1 the header limit, byte 2 the sizes of the pieces the rest
// arrives in; the rest is what a downstream sends before it closes the connection.
// Invariants: put() never consumes more than it was given and stops early only with an error; a finished
// answer has a status of three digits and a body within the limit; every presented byte lies inside the
// exact buffer handed over (ASan); and the answer does not depend on how the bytes were cut: the same
// bytes presented at once and in pieces give the same result (Cache-Control freshness at most a day, and
// the Content-Encoding, included); and freshness_seconds() on the raw bytes is bounded too.
// Header capture is on for half the inputs (a policy naming a few fields, cookies and Cache-Control, and for
// the statuses a call passes, another naming WWW-Authenticate and Retry-After): every kept line is "Name:
// value" with a value of text within its cap, all of them within the total cap, the same however the bytes
// were cut; and the kept Cache-Control values, and the raw bytes, combine to a Cache-Control value without a
// crash.

#include "gateway/codec/char_class.hpp"
#include "gateway/config/config.hpp"
#include "gateway/downstream/answer_fields.hpp"
#include "gateway/downstream/freshness.hpp"
#include "gateway/downstream/response_parser.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <boost/beast/http/error.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace http = boost::beast::http;
using boost::system::error_code;

struct outcome {
  bool done = false;
  bool failed = false;  // an error other than need_more, or the connection ended too early
  unsigned status = 0;
  bool keep_alive = false;
  std::uint32_t fresh_for = 0;
  gateway::content_coding coding = gateway::content_coding::identity;
  std::string body;
  std::string captured;
  bool shareable = true;
  std::size_t consumed = 0;
};

const gateway::response_header_policy& capture_policy() {
  static const gateway::response_header_policy policy = [] {
    gateway::response_header_policy p;
    p.forward = {"X-Tag", "Content-Language", "Date", "Server", "Link"};
    p.set_cookie = {"sid", "a"};
    p.cache_control = true;
    return p;
  }();
  return policy;
}

// The statuses a call passes, and the fields it keeps of them (pass_status, pass_headers).
const gateway::passed_answer_policy& pass_policy() {
  static const gateway::passed_answer_policy policy = [] {
    gateway::passed_answer_policy p;
    p.statuses = {401, 403, 429, 503};
    p.fields.forward = {"WWW-Authenticate", "Retry-After", "X-Tag"};
    return p;
  }();
  return policy;
}

// The kept lines' shape and caps.
void check_captured(const std::string& captured) {
  FUZZ_CHECK(captured.size() <= gateway::max_kept);
  std::string_view rest = captured;
  std::vector<gateway::cache_part> parts;
  while (!rest.empty()) {
    const auto eol = rest.find("\r\n");
    FUZZ_CHECK(eol != std::string_view::npos);
    const auto line = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    const auto colon = line.find(": ");
    FUZZ_CHECK(colon != std::string_view::npos && colon > 0);
    const auto value = line.substr(colon + 2);
    FUZZ_CHECK(value.size() <= gateway::max_kept_value);
    FUZZ_CHECK(gateway::char_class::all_of(value, gateway::char_class::field_text));
    gateway::cache_part part;
    part.answered = true;
    part.directives = gateway::parse_cache_directives(value);
    parts.push_back(part);
  }
  const auto combined = gateway::strictest_cache_control(parts);
  FUZZ_CHECK(!combined.empty() && combined.size() < 96);
}

// Presents `pending` in a buffer of exactly its size, so that ASan reports any read past it.
std::size_t put_exact(gateway::response_parser& parser, const std::string& pending, error_code& ec) {
  const auto copy = std::make_unique<char[]>(pending.size());
  std::memcpy(copy.get(), pending.data(), pending.size());
  return parser.put(std::string_view(copy.get(), pending.size()), ec);
}

outcome parse(std::string_view wire, std::size_t body_limit, std::size_t header_limit, bool capture,
              fuzz::piece_sizes sizes) {
  gateway::response_parser parser(body_limit, header_limit);
  if (capture) parser.capture({&capture_policy(), &pass_policy()});
  outcome o;
  std::string pending;  // bytes received and not yet consumed, as in the connection's read buffer
  std::size_t at = 0;
  for (;;) {
    if (at == wire.size()) {  // the downstream closed the connection
      if (!parser.got_some()) {
        o.failed = true;
        break;
      }
      error_code ec;
      parser.put_eof(ec);
      FUZZ_CHECK(ec || parser.is_done());
      o.failed = static_cast<bool>(ec);
      break;
    }
    const auto step = sizes.next();
    const auto n = step == 0 ? wire.size() - at : std::min(step, wire.size() - at);
    pending.append(wire.substr(at, n));
    at += n;
    error_code ec;
    const auto used = put_exact(parser, pending, ec);
    FUZZ_CHECK(used <= pending.size());
    FUZZ_CHECK(ec || parser.is_done());  // without an error, put() returns only with the answer complete
    pending.erase(0, used);
    o.consumed += used;
    if (ec && ec != http::error::need_more) {
      FUZZ_CHECK(!parser.is_done());
      o.failed = true;
      break;
    }
    if (parser.is_done()) break;  // bytes behind the answer stay in the buffer, unused
  }
  o.done = parser.is_done() && !o.failed;
  if (o.done) {
    o.status = parser.status();
    o.keep_alive = parser.keep_alive();
    o.fresh_for = parser.fresh_for();
    o.coding = parser.coding();
    FUZZ_CHECK(o.fresh_for <= 24 * 3600);
    o.body = parser.body();
    o.captured = parser.captured();
    o.shareable = parser.shareable();
    check_captured(o.captured);
    FUZZ_CHECK(o.status >= 100 && o.status <= 999);
    FUZZ_CHECK(o.body.size() <= body_limit);
    FUZZ_CHECK(o.consumed <= wire.size());
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input in(data, size);
  // The configured max_response_bytes ranges from 64 bytes to 256 MiB (default 1 MiB); the call's header
  // limit is 16 KiB. Smaller limits reach the limit checks with short inputs.
  static constexpr std::size_t body_limits[] = {0, 1, 16, 64, 4096, 65536, 1 << 20, 256u << 20};
  static constexpr std::size_t header_limits[] = {0, 1, 16, 64, 256, 1024, 4096, 16384};
  const auto limits = in.byte();
  const auto body_limit = body_limits[limits & 7];
  const bool capture = (limits & 8) == 0;
  const auto header_limit = header_limits[in.byte() & 7];
  const auto split = in.byte();
  const auto wire = in.rest();

  // The Cache-Control reading on its own, with the rest as a field value: bounded, never a crash.
  if (const auto fresh = gateway::freshness_seconds(wire)) FUZZ_CHECK(*fresh <= 24 * 3600);
  gateway::cache_part raw;
  raw.answered = true;
  raw.directives = gateway::parse_cache_directives(wire);
  FUZZ_CHECK(!gateway::strictest_cache_control({raw}).empty());

  const auto whole = parse(wire, body_limit, header_limit, capture, fuzz::piece_sizes(0));
  const auto cut = parse(wire, body_limit, header_limit, capture, fuzz::piece_sizes(split));
  FUZZ_CHECK(whole.done == cut.done);
  FUZZ_CHECK(whole.failed == cut.failed);
  if (whole.done) {
    FUZZ_CHECK(whole.status == cut.status);
    FUZZ_CHECK(whole.keep_alive == cut.keep_alive);
    FUZZ_CHECK(whole.fresh_for == cut.fresh_for);
    FUZZ_CHECK(whole.coding == cut.coding);
    FUZZ_CHECK(whole.body == cut.body);
    FUZZ_CHECK(whole.captured == cut.captured);
    FUZZ_CHECK(whole.shareable == cut.shareable);
    FUZZ_CHECK(whole.consumed == cut.consumed);
  }
  return 0;
}
