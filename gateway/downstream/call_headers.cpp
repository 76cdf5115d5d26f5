#include "gateway/downstream/call_headers.hpp"

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/http_text.hpp"
#include "gateway/codec/owned_fields.hpp"

#include <algorithm>

namespace gateway {

namespace {

bool removes(const header_policy& p, std::string_view name) {
  return std::any_of(p.remove.begin(), p.remove.end(),
                     [&](const std::string& n) { return iequals(n, name); });
}

bool removes_forwarded(const header_policy& p) {
  return std::any_of(std::begin(forwarded_style_fields), std::end(forwarded_style_fields),
                     [&](std::string_view n) { return removes(p, n); });
}

void add_field(std::string& out, std::string_view name, std::string_view value) {
  out.append("\r\n").append(name).append(": ").append(value);
}

// A client value fit to pass on: not empty, no control characters.
bool passable(std::string_view value) {
  return !value.empty() && char_class::all_of(value, char_class::field_text);
}

// The client's fields named `name`, joined, when fit to pass on (else empty).
std::string client_value(const client_headers& client, std::string_view name) {
  std::string value;
  const bool cookie = iequals(name, "cookie");  // several Cookie fields join with "; " (RFC 6265 5.4)
  if (!client.append(name, value, cookie ? "; " : ", ") || !passable(value)) value.clear();
  return value;
}

// A Forwarded parameter value: a token as it is, anything else quoted (RFC 7239 4).
void append_forwarded_value(std::string& out, std::string_view value) {
  if (!value.empty() && char_class::all_of(value, char_class::tchar)) {
    out += value;
    return;
  }
  out += '"';
  for (const char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

}  // namespace

void call_headers::render_forwarded(forwarded_style style, const client_headers& client,
                                    const client_origin& origin) {
  forwarded_.clear();
  if (style == forwarded_style::none || origin.address.empty()) return;
  forwarded_.reserve(forwarded_reserve);  // the common fields in one allocation, not one per field
  const auto host = client_value(client, "host");
  if (style == forwarded_style::x_forwarded) {
    std::string chain = origin.trusted ? client_value(client, "x-forwarded-for") : std::string();
    if (!chain.empty()) chain += ", ";
    chain += origin.address;
    add_field(forwarded_, "X-Forwarded-For", chain);
    const auto proto = origin.trusted ? client_value(client, "x-forwarded-proto") : std::string();
    add_field(forwarded_, "X-Forwarded-Proto",
              !proto.empty() ? std::string_view(proto)
              : origin.https ? "https"
                             : "http");
    const auto forwarded_host = origin.trusted ? client_value(client, "x-forwarded-host") : std::string();
    if (!forwarded_host.empty() || !host.empty())
      add_field(forwarded_, "X-Forwarded-Host", forwarded_host.empty() ? host : forwarded_host);
    return;
  }
  std::string value = origin.trusted ? client_value(client, "forwarded") : std::string();
  if (!value.empty()) value += ", ";
  const bool v6 = origin.address.find(':') != std::string_view::npos;
  value += "for=";
  append_forwarded_value(value, v6 ? "[" + std::string(origin.address) + "]" : std::string(origin.address));
  if (!host.empty()) {
    value += ";host=";
    append_forwarded_value(value, host);
  }
  value += origin.https ? ";proto=https" : ";proto=http";
  add_field(forwarded_, "Forwarded", value);
}

void call_headers::append_forwarded(std::string& out, const header_policy& policy) const {
  if (!removes_forwarded(policy)) {
    out += forwarded_;
    return;
  }
  // Only the fields not removed, taken apart again: "\r\nName: value" each.
  std::string_view rest = forwarded_;
  while (!rest.empty()) {
    const auto next = rest.find("\r\n", 2);
    const auto field = rest.substr(0, next);
    const auto name = field.substr(2, field.find(':') - 2);
    if (!removes(policy, name)) out += field;
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next);
  }
}

const call_header_fields* call_headers::render(const aggregate_route& route, forwarded_style style,
                                               const client_headers& client, const client_origin& origin,
                                               std::string_view identity) {
  render_forwarded(style, client, origin);
  const auto n = route.calls.size();
  if (!route.has_header_policy && forwarded_.empty() && identity.empty()) return nullptr;
  fields_.assign(n, call_header_fields{});
  if (!identity.empty() && !route.has_header_policy) forwarded_ += identity;
  if (!route.has_header_policy) {  // every call carries the forwarded fields alone (and the identity)
    for (auto& f : fields_) f.headers = forwarded_;
    return fields_.data();
  }
  own_.assign(n, std::string());
  for (std::size_t i = 0; i < n; ++i) {
    const auto& policy = route.calls[i].effective_headers;
    if (policy.empty() && identity.empty()) {
      fields_[i].headers = forwarded_;
      continue;
    }
    auto& out = own_[i];
    for (const auto& name : policy.forward) {
      if (auto value = client_value(client, name); !value.empty()) add_field(out, name, value);
    }
    for (const auto& f : policy.set) add_field(out, f.name, f.value);
    append_forwarded(out, policy);
    out += identity;
    fields_[i].headers = out;
  }
  return fields_.data();
}

}  // namespace gateway
