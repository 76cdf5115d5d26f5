#include "gateway/downstream/answer_fields.hpp"

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/http_text.hpp"

#include <algorithm>
#include <charconv>

namespace gateway {

namespace {

constexpr std::uint32_t max_delta_seconds = 2147483648U;  // RFC 9111 1.2.2

// Calls `f(name, value)` for each "Name: value\r\n" line of `fields`.
template <class F>
void for_each_line(std::string_view fields, F&& f) {
  while (!fields.empty()) {
    const auto eol = fields.find("\r\n");
    const auto line = fields.substr(0, eol);
    fields = eol == std::string_view::npos ? std::string_view() : fields.substr(eol + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    f(line.substr(0, colon), trim_ows(line.substr(colon + 1)));
  }
}

std::optional<std::uint32_t> delta_seconds(std::string_view text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = text.substr(1, text.size() - 2);
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range || value > max_delta_seconds) return max_delta_seconds;
  return static_cast<std::uint32_t>(value);
}

void keep_least(std::optional<std::uint32_t>& to, std::optional<std::uint32_t> value) {
  if (value) to = std::min(to.value_or(*value), *value);
}

// Adds "name: value" unless a field of that name (in any case) and value is there already.
void add_line(std::vector<std::string>& lines, std::string_view name, std::string_view value) {
  const auto same = [&](const std::string& line) {
    const std::string_view l(line);
    return l.size() == name.size() + value.size() + 4 && iequals(l.substr(0, name.size()), name) &&
           l.substr(name.size() + 2, value.size()) == value;
  };
  if (std::any_of(lines.begin(), lines.end(), same)) return;
  std::string line;
  line.reserve(name.size() + value.size() + 4);
  line.append(name).append(": ").append(value).append("\r\n");
  lines.push_back(std::move(line));
}

}  // namespace

void keep_answer_field(const response_header_policy& policy, std::string_view name, std::string_view value,
                       std::string& kept) {
  bool wanted = false;
  if (iequals(name, "cache-control")) {
    wanted = policy.cache_control;
  } else if (iequals(name, "set-cookie")) {
    const auto cookie = cookie_name(value);
    wanted = !cookie.empty() &&
             std::find(policy.set_cookie.begin(), policy.set_cookie.end(), cookie) != policy.set_cookie.end();
  } else {
    wanted = std::any_of(policy.forward.begin(), policy.forward.end(),
                         [&](const std::string& n) { return iequals(n, name); });
  }
  // Beast has refused controls in a head already; checked again because the value is written as it is.
  if (!wanted || value.size() > max_kept_value || !char_class::all_of(value, char_class::field_text)) return;
  if (kept.size() + name.size() + value.size() + 4 > max_kept) return;
  kept.append(name).append(": ").append(value).append("\r\n");
}

cache_directives parse_cache_directives(std::string_view value) {
  cache_directives d;
  // Directives are split at commas outside quoted strings (a field-name list of no-cache="a, b").
  std::size_t start = 0;
  bool quoted = false;
  for (std::size_t i = 0; i <= value.size(); ++i) {
    if (i < value.size()) {
      if (value[i] == '"') quoted = !quoted;
      if (value[i] == '\\' && quoted) ++i;
      if (i >= value.size() || value[i] != ',' || quoted) continue;
    }
    const auto item = trim_ows(value.substr(start, i - start));
    start = i + 1;
    const auto eq = item.find('=');
    const auto name = trim_ows(item.substr(0, eq));
    const auto arg = eq == std::string_view::npos ? std::string_view() : trim_ows(item.substr(eq + 1));
    if (iequals(name, "no-store")) {
      d.no_store = true;
    } else if (iequals(name, "no-cache")) {
      d.no_cache = true;
    } else if (iequals(name, "private")) {
      d.is_private = true;
    } else if (iequals(name, "must-revalidate") || iequals(name, "proxy-revalidate")) {
      d.must_revalidate = true;
    } else if (iequals(name, "max-age")) {
      keep_least(d.max_age, delta_seconds(arg));
    } else if (iequals(name, "s-maxage")) {
      keep_least(d.s_maxage, delta_seconds(arg));
    }
  }
  return d;
}

std::string strictest_cache_control(const std::vector<cache_part>& parts) {
  bool no_cache = false;
  bool is_private = false;
  bool must_revalidate = false;
  bool any_shared = false;
  std::optional<std::uint32_t> max_age;
  std::optional<std::uint32_t> shared;
  for (const auto& part : parts) {
    if (!part.answered || !part.directives || part.directives->no_store) return "no-store";
    const auto& d = *part.directives;
    is_private = is_private || d.is_private;
    must_revalidate = must_revalidate || d.must_revalidate;
    if (d.no_cache) {
      no_cache = true;
      continue;
    }
    if (!d.max_age && !d.s_maxage) return "no-store";  // no explicit freshness
    auto own = d.max_age ? d.max_age : d.s_maxage;
    auto own_shared = d.s_maxage ? d.s_maxage : d.max_age;
    // Kept by the gateway for a while: what is left of each lifetime (an Age field would say the same).
    own = *own - std::min(*own, part.age);
    own_shared = *own_shared - std::min(*own_shared, part.age);
    keep_least(max_age, own);
    keep_least(shared, own_shared);
    any_shared = any_shared || d.s_maxage.has_value();
  }
  if (parts.empty()) return "no-store";
  std::string out = is_private ? "private, " : "";
  if (no_cache) return out + "no-cache";
  out += "max-age=" + std::to_string(*max_age);
  if (!is_private && any_shared && *shared != *max_age) out += ", s-maxage=" + std::to_string(*shared);
  if (must_revalidate) out += ", must-revalidate";
  return out;
}

std::string_view cookie_name(std::string_view set_cookie_value) {
  const auto eq = set_cookie_value.find('=');
  return eq == std::string_view::npos ? std::string_view() : trim_ows(set_cookie_value.substr(0, eq));
}

std::string without_set_cookie(std::string_view fields) {
  std::string out;
  for_each_line(fields, [&](std::string_view name, std::string_view value) {
    if (!iequals(name, "set-cookie")) out.append(name).append(": ").append(value).append("\r\n");
  });
  return out;
}

std::string answer_fields(const aggregate_route& route, const std::vector<call_result>& results) {
  if (!route.passes_response_headers) return {};
  std::vector<std::string> lines;
  std::vector<cache_part> parts;
  const bool cache_control = route.response_headers.cache_control;
  for (std::size_t i = 0; i < route.calls.size() && i < results.size(); ++i) {
    const auto& result = results[i];
    const auto& policy = route.calls[i].effective_response_headers;
    cache_part part;
    part.answered = result.ok();
    std::string cache_value;
    bool cache_seen = false;
    if (part.answered) {
      // The call kept only what its policy names; the names are checked again here, so that an answer
      // shared with another call (coalesced, cached) can never pass more than this call's policy allows.
      for_each_line(result.headers, [&](std::string_view name, std::string_view value) {
        if (iequals(name, "cache-control")) {
          if (cache_seen) cache_value += ", ";
          cache_value.append(value);
          cache_seen = true;
        } else if (iequals(name, "set-cookie")) {
          const auto cookie = cookie_name(value);
          if (!cookie.empty() && std::find(policy.set_cookie.begin(), policy.set_cookie.end(), cookie) !=
                                     policy.set_cookie.end())
            add_line(lines, "Set-Cookie", value);
        } else {
          const auto named = std::find_if(policy.forward.begin(), policy.forward.end(),
                                          [&](const std::string& n) { return iequals(n, name); });
          if (named != policy.forward.end()) add_line(lines, *named, value);
        }
      });
    }
    if (cache_control) {
      if (cache_seen) part.directives = parse_cache_directives(cache_value);
      if (result.from_cache) part.age = result.age;
      parts.push_back(part);
    }
  }
  std::string out;
  for (const auto& line : lines) out += line;
  if (cache_control) out.append("Cache-Control: ").append(strictest_cache_control(parts)).append("\r\n");
  return out;
}

}  // namespace gateway
