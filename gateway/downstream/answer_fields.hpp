#pragma once
// The fields of the calls' answers that reach the client's answer on an aggregate route (the route's and
// its calls' response_headers), combined from what each call kept (call_result::headers). Pure.
//
// - Forwarded fields: from each call that answered ok (not degraded, not stale), in call order and, within
//   a call, in the order received; each written with the name as configured; a field with the same name
//   and value as one already written is left out; different values stay separate fields.
// - Set-Cookie: each field whose cookie name is in the call's set_cookie list, as a field of its own
//   (cookies are never joined with commas); exact repeats left out.
// - Cache-Control (route's cache_control): the strictest reading of every call, strictest_cache_control().

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

// What an answer may keep for the client: each value at most max_kept_value bytes, all the lines (names
// and CRLFs included) at most max_kept.
inline constexpr std::size_t max_kept_value = 4 * 1024;
inline constexpr std::size_t max_kept = 16 * 1024;

// Appends "name: value\r\n" to `kept` (one answer's kept fields) when `policy` names the field
// (Cache-Control with cache_control, Set-Cookie by its cookie name, any other by `forward`) and the value is
// text (no CR, LF, NUL or other control: it is written into the client's answer as it is) within the caps;
// else leaves it out. Called by the response parser for each field of a head, only with a policy.
void keep_answer_field(const response_header_policy& policy, std::string_view name, std::string_view value,
                       std::string& kept);

// A Cache-Control value as the combination reads it (RFC 9111 5.2.2). A directive given twice keeps its
// smaller number; a number that is not digits is as if absent; one beyond 2^31 is 2^31 (RFC 9111 1.2.2).
// no-cache and private with field names (no-cache="Set-Cookie") count as the whole directive.
struct cache_directives {
  bool no_store = false;
  bool no_cache = false;
  bool is_private = false;
  bool must_revalidate = false;
  std::optional<std::uint32_t> max_age;
  std::optional<std::uint32_t> s_maxage;
};
cache_directives parse_cache_directives(std::string_view value);

// One call's part in the combined Cache-Control.
struct cache_part {
  bool answered = false;                       // ok; false: degraded (fallback or stale), or failed
  std::optional<cache_directives> directives;  // its Cache-Control; nullopt: the answer had none
  std::uint32_t age = 0;  // served from the gateway's cache: seconds since it was received
};

// The combined Cache-Control value:
// - `no-store` when a call was degraded, or one said no-store, or one answered without explicit freshness
//   (no Cache-Control, or neither max-age nor s-maxage nor no-cache: RFC 9111 4.2 leaves such an answer to
//   heuristics, which cannot vouch for the merged answer);
// - else `no-cache` when one said no-cache (preceded by `private` when one said private);
// - else `max-age=` the least max-age (a call with s-maxage only counts with it), preceded by `private`
//   when one said private, else followed by `s-maxage=` the least shared freshness when one gave s-maxage;
//   `must-revalidate` when one said it. An answer from the gateway's cache counts its lifetimes less its age.
std::string strictest_cache_control(const std::vector<cache_part>& parts);

// The cookie name of a Set-Cookie value (before its '=', without surrounding whitespace); empty when the
// value has no '='.
std::string_view cookie_name(std::string_view set_cookie_value);

// `fields` ("Name: value\r\n" lines) without its Set-Cookie lines: what a shared cache keeps, since a
// cookie is meant for one client.
std::string without_set_cookie(std::string_view fields);

// The lines ("Name: value\r\n") the client's answer gets from `results` (aligned with route.calls); empty
// when the route passes none.
std::string answer_fields(const aggregate_route& route, const std::vector<call_result>& results);

}  // namespace gateway
