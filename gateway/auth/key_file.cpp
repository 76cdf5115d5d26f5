#include "gateway/auth/key_file.hpp"

#include "gateway/auth/api_keys.hpp"
#include "gateway/auth/jwt.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <iterator>

namespace gateway {

namespace {
constexpr std::size_t max_key_file = 4 * 1024 * 1024;
}

bool read_key_file(const std::string& path, std::size_t max, std::string& text, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open " + path;
    return false;
  }
  text.clear();
  char buffer[8192];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max) {
      error = path + " is larger than " + std::to_string(max) + " bytes";
      return false;
    }
  }
  if (in.bad()) {
    error = "cannot read " + path;
    return false;
  }
  return true;
}

template <class T>
bool key_file<T>::load(std::string& error) {
  std::string text;
  if (!read_key_file(path_, max_key_file, text, error)) return false;
  auto keys = parse_(text, error);
  if (!keys) {
    error = path_ + ": " + error;
    return false;
  }
  keys_.store(std::move(keys), std::memory_order_release);
  loaded_ = std::move(text);
  return true;
}

template <class T>
bool key_file<T>::check() {
  std::string text;
  std::string error;
  if (!read_key_file(path_, max_key_file, text, error)) {
    if (refused_ != error) spdlog::error("key file {}: {}; the keys read before stay in use", path_, error);
    refused_ = error;
    return false;
  }
  if (text == loaded_ || text == refused_) return false;
  auto keys = parse_(text, error);
  if (!keys) {
    spdlog::error("key file {} changed but is refused: {}; the keys read before stay in use", path_, error);
    refused_ = std::move(text);
    return false;
  }
  keys_.store(std::move(keys), std::memory_order_release);
  loaded_ = std::move(text);
  refused_.clear();
  spdlog::info("key file {} read again", path_);
  return true;
}

template class key_file<jwk_set>;
template class key_file<api_key_set>;

}  // namespace gateway
