#include "gateway/auth/api_keys.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <boost/url/grammar/hexdig_chars.hpp>

#include <algorithm>
#include <cstring>
#include <set>

namespace gateway {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.' || c == ':' || c == '@';
}

std::uint64_t prefix_of(const api_key_set::digest& d) {
  std::uint64_t p = 0;
  std::memcpy(&p, d.data(), sizeof p);
  return p;
}

}  // namespace

api_key_set::digest api_key_set::sha256(std::string_view text) {
  digest d{};
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), d.data(), &size, EVP_sha256(), nullptr);
  return d;
}

std::shared_ptr<const api_key_set> api_key_set::parse(std::string_view text, std::string& error) {
  auto set = std::make_shared<api_key_set>();
  std::set<std::string, std::less<>> names;
  std::size_t number = 0;
  while (!text.empty()) {
    ++number;
    const auto end = text.find('\n');
    auto line = trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.empty() || line.front() == '#') continue;
    const auto where = "line " + std::to_string(number) + ": ";
    const auto space = line.find_first_of(" \t");
    const auto name = line.substr(0, space);
    const auto hex = space == std::string_view::npos ? std::string_view() : trim(line.substr(space));
    if (name.empty() || name.size() > 128 || !std::all_of(name.begin(), name.end(), name_char)) {
      error = where + "a key's name is 1 to 128 of A-Z a-z 0-9 - _ . : @";
      return nullptr;
    }
    entry e;
    e.name = std::string(name);
    bool valid = hex.size() == 64;
    for (std::size_t i = 0; valid && i < 32; ++i) {
      const int hi = boost::urls::grammar::hexdig_value(hex[2 * i]);
      const int lo = boost::urls::grammar::hexdig_value(hex[2 * i + 1]);
      valid = hi >= 0 && lo >= 0;
      e.hash[i] = static_cast<unsigned char>(hi * 16 + lo);
    }
    if (!valid) {
      error = where + "after the name comes the key's SHA-256 in 64 hex digits (sha256sum), not the key";
      return nullptr;
    }
    if (!names.insert(e.name).second) {
      error = where + "the name '" + e.name + "' is listed twice";
      return nullptr;
    }
    const auto [first, last] = set->by_prefix_.equal_range(prefix_of(e.hash));
    for (auto it = first; it != last; ++it) {
      if (set->entries_[it->second].hash == e.hash) {
        error = where + "the same key as '" + set->entries_[it->second].name + "'";
        return nullptr;
      }
    }
    set->by_prefix_.emplace(prefix_of(e.hash), set->entries_.size());
    set->entries_.push_back(std::move(e));
  }
  return set;
}

const std::string* api_key_set::find(std::string_view presented) const {
  if (presented.empty()) return nullptr;
  const auto hash = sha256(presented);
  const auto [first, last] = by_prefix_.equal_range(prefix_of(hash));
  for (auto it = first; it != last; ++it) {
    const auto& e = entries_[it->second];
    if (CRYPTO_memcmp(e.hash.data(), hash.data(), hash.size()) == 0) return &e.name;
  }
  return nullptr;
}

}  // namespace gateway
