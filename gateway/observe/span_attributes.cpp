#include "gateway/observe/span_attributes.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <utility>

namespace gateway::span_attributes {

namespace {
constexpr std::string_view redacted = "REDACTED";
}

std::string redacted_url(std::string_view url) {
  auto parsed = boost::urls::parse_uri_reference(url);
  if (!parsed) return std::string(url.substr(0, url.find_first_of("?#")));
  boost::urls::url u(*parsed);
  if (u.has_userinfo()) u.set_encoded_userinfo("REDACTED:REDACTED");
  if (u.has_query()) {
    std::string query;
    bool first = true;
    for (const auto param : u.encoded_params()) {
      if (!std::exchange(first, false)) query += '&';
      query.append(param.key.data(), param.key.size());
      if (param.has_value) {
        query += '=';
        query += redacted;
      }
    }
    u.set_encoded_query(query);
  }
  return std::string(u.buffer());
}

}  // namespace gateway::span_attributes
