#pragma once
// The client request's fields for the header policy (client_headers), read from a Beast message. Include
// only where Beast is included already (the connection's code).

#include "gateway/codec/http_text.hpp"
#include "gateway/downstream/call_headers.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/range/iterator_range.hpp>

#include <string>
#include <string_view>

namespace gateway {

// Whether a Connection field of `fields` names `name` (those fields are hop-by-hop too, RFC 9110 7.6.1).
template <class Fields>
bool named_by_connection(const Fields& fields, std::string_view name) {
  for (const auto& field :
       boost::make_iterator_range(fields.equal_range(boost::beast::http::field::connection))) {
    std::string_view list(field.value().data(), field.value().size());
    while (!list.empty()) {
      const auto comma = list.find(',');
      if (iequals(trim_ows(list.substr(0, comma)), name)) return true;
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
  }
  return false;
}

template <class Message>
class beast_headers final : public client_headers {
 public:
  explicit beast_headers(const Message& message) : message_(message) {}
  // A field the client's Connection field names is hop-by-hop (RFC 9110 7.6.1): never passed on.
  bool append(std::string_view name, std::string& out, std::string_view separator) const override {
    if (named_by_connection(message_, name)) return false;
    bool any = false;
    for (const auto& field : boost::make_iterator_range(message_.equal_range(name))) {
      if (any) out += separator;
      out.append(field.value().data(), field.value().size());
      any = true;
    }
    return any;
  }

 private:
  const Message& message_;
};

}  // namespace gateway
