#include "gateway/server/cors.hpp"

#include "gateway/codec/http_text.hpp"

#include <algorithm>

namespace gateway {

namespace {

bool origin_allowed(const cors_settings& cors, std::string_view origin) {
  return std::any_of(cors.allow_origins.begin(), cors.allow_origins.end(),
                     [&](const std::string& o) { return o == "*" || o == origin; });
}

bool listed(const std::vector<std::string>& names, std::string_view name) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return iequals(n, name); });
}

void field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

// Allow-Origin (and -Credentials): the origin itself, or "*" when any is allowed and no credentials are.
void origin_fields(const cors_settings& cors, std::string_view origin, std::string& out) {
  const bool any = listed(cors.allow_origins, "*");
  field(out, "Access-Control-Allow-Origin", any && !cors.allow_credentials ? std::string_view("*") : origin);
  if (cors.allow_credentials) field(out, "Access-Control-Allow-Credentials", "true");
  // The answer differs by Origin unless it is "*" for all.
  if (!any || cors.allow_credentials) field(out, "Vary", "Origin");
}

}  // namespace

std::string cors_answer_fields(const cors_settings& cors, std::string_view origin) {
  std::string out;
  if (origin.empty() || !origin_allowed(cors, origin)) {
    if (!listed(cors.allow_origins, "*")) field(out, "Vary", "Origin");
    return out;
  }
  origin_fields(cors, origin, out);
  if (!cors.expose_headers.empty()) field(out, "Access-Control-Expose-Headers", joined(cors.expose_headers));
  return out;
}

preflight_answer cors_preflight(const cors_settings& cors, std::string_view route_method,
                                std::string_view origin, std::string_view method,
                                std::string_view request_headers) {
  preflight_answer a;
  a.status = 403;
  if (!origin_allowed(cors, origin)) {
    a.error = "CORS preflight refused: origin not allowed";
    return a;
  }
  const auto& methods = cors.allow_methods;
  const bool method_ok = methods.empty()
                             ? method == route_method || (method == "HEAD" && route_method == "GET")
                             : listed(methods, method);
  if (!method_ok) {
    a.error = "CORS preflight refused: method not allowed";
    return a;
  }
  for (std::string_view rest = request_headers; !rest.empty();) {
    const auto comma = rest.find(',');
    const auto name = trim_ows(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (!name.empty() && !listed(cors.allow_headers, name)) {
      a.error = "CORS preflight refused: header '" + std::string(name) + "' not allowed";
      return a;
    }
  }
  a.status = 204;
  origin_fields(cors, origin, a.fields);
  field(a.fields, "Access-Control-Allow-Methods",
        methods.empty() ? std::string(route_method) : joined(methods));
  if (!trim_ows(request_headers).empty())
    field(a.fields, "Access-Control-Allow-Headers", joined(cors.allow_headers));
  field(a.fields, "Access-Control-Max-Age",
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(cors.max_age).count()));
  return a;
}

}  // namespace gateway
