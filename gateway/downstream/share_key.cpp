#include "gateway/downstream/share_key.hpp"

#include <charconv>

namespace gateway {

namespace {

void append_number(std::string& key, std::size_t n, char end) {
  char digits[20];
  const auto stop = std::to_chars(digits, digits + sizeof digits, n).ptr;
  key.append(digits, stop);
  key += end;
}

// The length, ':', the bytes: where a part ends is known before it starts, whatever it holds.
void append_part(std::string& key, std::string_view part) {
  append_number(key, part.size(), ':');
  key.append(part);
}

void append_list(std::string& key, const std::vector<std::string>& list) {
  append_number(key, list.size(), '#');
  for (const auto& item : list) append_part(key, item);
}

// The answer fields a policy keeps, by contents.
void append_policy(std::string& key, const response_header_policy* policy) {
  if (policy == nullptr || policy->empty()) {
    key += '-';  // keeps nothing (an empty policy keeps what none keeps)
    return;
  }
  key += policy->cache_control ? 'C' : 'K';
  append_list(key, policy->forward);
  append_list(key, policy->set_cookie);
}

}  // namespace

std::string share_key(const call_request& request) {
  std::string key;
  if (const auto* query = request.sql) {
    key.reserve(24 + query->statement.size() + 24 * query->params.size());
    key += 'S';
    append_part(key, query->statement);
    append_number(key, query->params.size(), '#');
    for (const auto& name : query->params) {
      append_part(key, name);
      if (const auto value = bound_value(request, name)) {
        key += '=';
        append_part(key, *value);
      } else {
        key += '0';  // NULL
      }
    }
  } else {
    key.reserve(32 + request.method.size() + request.target.size() + request.body.size() +
                request.headers.size());
    key += 'H';
    append_part(key, request.method);
    append_part(key, request.target);
    append_part(key, request.body);
    append_part(key, request.headers);
  }
  append_policy(key, request.answer_fields);
  // A call that passes statuses reads answers another call would not: a follower gets what its leader
  // kept of a passed answer (a stored answer is always a 2xx, but a coalesced one need not be).
  if (const auto* pass = request.pass) {
    key += 'P';
    append_number(key, pass->statuses.size(), '#');
    for (const auto status : pass->statuses) append_number(key, status, ',');
    append_policy(key, &pass->fields);
  }
  return key;
}

}  // namespace gateway
