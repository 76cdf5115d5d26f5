#include "loadtest/mock/control.hpp"

#include "loadtest/mock/body_template.hpp"
#include "loadtest/mock/replies.hpp"

#include "gateway/codec/http_text.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace mock {
namespace {

constexpr std::array<std::string_view, 7> control_params = {"path", "mode", "delay", "latency",
                                                            "body", "port", "header"};

// The first parameter of `query` that /__control does not know, or "" when all are known.
std::string_view unknown_param(std::string_view query) {
  std::string_view unknown;
  for_each_query_param(query, [&](std::string_view name, std::string_view) {
    if (std::find(control_params.begin(), control_params.end(), name) != control_params.end()) return false;
    unknown = name.empty() ? std::string_view("=") : name;
    return true;
  });
  return unknown;
}

// A parameter's decoded value, or nullopt when absent; sets `error` for a bad percent escape.
std::optional<std::string> value_of(std::string_view query, std::string_view key, std::string& error) {
  auto v = find_query_param(query, key);
  if (!v.present) return std::nullopt;
  if (v.malformed) {
    error = "bad percent-encoding in " + std::string(key);
    return std::nullopt;
  }
  return std::move(v.value);
}

// Every `header=Name:Value` parameter, as "Name: value\r\n" lines ("" for one empty `header=`): a name
// that is a token, a value of any bytes but CR and LF (so that a test can send controls the gateway must
// refuse). Sets `error` for a bad one.
std::optional<std::string> header_lines(std::string_view query, std::string& error) {
  std::optional<std::string> lines;
  for_each_query_param(query, [&](std::string_view name, std::string_view raw) {
    if (name != "header") return false;
    std::string text;
    if (!gateway::percent_decode(raw, text, false)) {
      error = "bad percent-encoding in header";
      return true;
    }
    if (!lines) lines.emplace();
    if (text.empty()) return false;
    const auto colon = text.find(':');
    const auto field = std::string_view(text).substr(0, colon);
    const bool token = !field.empty() && std::all_of(field.begin(), field.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
    if (colon == std::string::npos || !token || text.find_first_of("\r\n") != std::string::npos) {
      error = "bad header: give Name:Value (a token, then a value without CR or LF)";
      return true;
    }
    const auto value = text.find_first_not_of(" \t", colon + 1);
    lines->append(field)
        .append(": ")
        .append(value == std::string::npos ? "" : text.substr(value))
        .append("\r\n");
    return false;
  });
  return lines;
}

}  // namespace

std::optional<control_request> parse_control(std::string_view query, control_kind kind, std::string& error) {
  const bool full = kind == control_kind::control;
  error.clear();
  if (full) {
    if (const auto unknown = unknown_param(query); !unknown.empty()) {
      error = "unknown parameter '" + std::string(unknown) + "'";
      return std::nullopt;
    }
  }
  control_request req;
  const auto path = value_of(query, "path", error);
  if (!path || !is_valid_setting_name(*path)) {
    error = "bad or missing path";
    return std::nullopt;
  }
  req.path = *path;

  // /__mode needs a mode; /__control may change only the delay or the body.
  const auto how = value_of(query, "mode", error);
  if (how) req.change.how = parse_mode(*how);
  const bool mode_ok = how ? req.change.how.has_value() : full && error.empty();
  if (!mode_ok) {
    error = "bad or missing mode";
    return std::nullopt;
  }

  auto delay = value_of(query, "delay", error);
  if (!error.empty()) return std::nullopt;
  if (full) {
    auto other = value_of(query, "latency", error);
    if (!error.empty()) return std::nullopt;
    if (delay && other) {
      error = "give delay or latency, not both";
      return std::nullopt;
    }
    if (other) delay = std::move(other);
  }
  if (delay) {
    std::string why;
    req.change.delay = parse_latency(*delay, why);
    if (!req.change.delay) {
      error = "bad delay: " + why;
      return std::nullopt;
    }
  }
  if (!full) return req;

  req.change.body = value_of(query, "body", error);
  if (!error.empty()) return std::nullopt;
  if (req.change.body && !req.change.body->empty()) {
    std::string why;
    if (!body_template::parse(*req.change.body, why)) {
      error = "body " + why;
      return std::nullopt;
    }
  }
  req.change.headers = header_lines(query, error);
  if (!error.empty()) return std::nullopt;
  const auto port = value_of(query, "port", error);
  if (!error.empty()) return std::nullopt;
  if (port) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port->data(), port->data() + port->size(), value);
    if (ec != std::errc{} || end != port->data() + port->size() || value == 0 || value > 65535) {
      error = "bad port";
      return std::nullopt;
    }
    req.port = static_cast<unsigned short>(value);
  }
  if (!req.change.how && !req.change.delay && !req.change.body && !req.change.headers) {
    error = "nothing to change: give mode, delay (or latency), body or header";
    return std::nullopt;
  }
  return req;
}

}  // namespace mock
