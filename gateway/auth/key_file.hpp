#pragma once
// A file of keys a route's auth reads (a JWKS, an API keys file), read at load and again whenever what it
// holds changes: check() reads it (a Kubernetes Secret mount swaps a symlink, so the content is
// compared, not the file's times) and publishes what a good new content parses into. A content that
// does not read or parse keeps the last good set and is logged once. check() blocks on the file: it runs
// on the housekeeping thread, never on an I/O thread. get() is for any thread: a request holds the set it
// got until it ends, whatever a check() publishes meanwhile.

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace gateway {

template <class T>
class key_file {
 public:
  // Makes a set from a file's text, or null with `error`.
  using parser = std::function<std::shared_ptr<const T>(std::string_view text, std::string& error)>;

  key_file(std::string path, parser parse) : path_(std::move(path)), parse_(std::move(parse)) {}

  // The first read, at load: false with `error` when the file cannot be read or parsed.
  bool load(std::string& error);
  // Reads the file again; a changed, good content replaces the keys. Returns true when it did.
  bool check();

  std::shared_ptr<const T> get() const { return keys_.load(std::memory_order_acquire); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  parser parse_;
  std::atomic<std::shared_ptr<const T>> keys_;
  std::string loaded_;   // the content in use
  std::string refused_;  // the last content that failed (logged once)
};

// Reads a whole file of at most `max` bytes; false with `error` otherwise.
bool read_key_file(const std::string& path, std::size_t max, std::string& text, std::string& error);

}  // namespace gateway
