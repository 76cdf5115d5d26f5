#pragma once
// The client request's fields for the header policy (client_headers), read from a Beast message. Include
// only where Beast is included already (the connection's code).

#include "gateway/server/call_headers.hpp"

#include <boost/range/iterator_range.hpp>

#include <string>
#include <string_view>

namespace gateway {

template <class Message>
class beast_headers final : public client_headers {
 public:
  explicit beast_headers(const Message& message) : message_(message) {}
  bool append(std::string_view name, std::string& out, std::string_view separator) const override {
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
