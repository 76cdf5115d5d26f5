#pragma once
// Where and how the rate limiter reaches Redis: the server's address, credentials, database, TLS and the
// time limits of the links (gateway/limit/redis_link.hpp). A plain struct with defaults plus one pure
// parse function for the server's URL; the caller fills the fields a URL cannot say (timeouts, TLS trust).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gateway {

struct redis_settings {
  std::string host;
  std::uint16_t port = 6379;
  bool tls = false;      // rediss://
  std::string username;  // empty: AUTH with the password only (the "default" user)
  std::string password;  // empty: no AUTH
  int database = 0;      // SELECT when not 0
  // A command not answered within `timeout` (or the caller's earlier deadline) fails as a timeout.
  std::chrono::milliseconds timeout{50};
  // Resolving, the TCP connect and the TLS handshake together.
  std::chrono::milliseconds connect_timeout{1000};
  // A link whose oldest command has waited `timeout + hung_after` for its reply is taken for hung:
  // closed and connected anew.
  std::chrono::milliseconds hung_after{1000};
  std::size_t connections_per_thread = 1;
  // Commands sent or queued on one link and not answered yet; beyond it a command is refused at once.
  std::size_t max_outstanding = 4096;
  // TLS: trust anchors (empty: the system's store), whether the server's certificate is verified, and
  // the name it must hold (also sent as SNI; empty: `host`).
  std::string ca_file;
  bool verify = true;
  std::string server_name;
};

// Parses redis://[user[:password]@]host[:port][/db] and rediss://... (TLS) into settings with the other
// fields at their defaults. The user and password are percent-decoded; an IPv6 host is written in
// brackets. Refused, with `error` set and nullopt returned: another scheme, an empty host, a port that is
// not 1..65535, a database that is not a whole number 0..2^31-1, a user without a password, a path
// with more than the database, a query or a fragment.
std::optional<redis_settings> parse_redis_url(std::string_view url, std::string& error);

}  // namespace gateway
