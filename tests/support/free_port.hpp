#pragma once
// A port for a test server that cannot be told to take port 0 (PostgreSQL, redis-server): a random one in
// [first, last] that nothing on 127.0.0.1 is bound to right now. Another process may take it before the
// server binds it, so callers start their server in a loop of a few attempts.

#include <cstdint>
#include <string>

namespace test_support {

// True if nothing is bound to 127.0.0.1:port right now.
bool port_is_free(std::uint16_t port);

// Throws std::runtime_error naming `what` when 200 draws find none.
std::uint16_t random_free_port(int first, int last, const std::string& what);

}  // namespace test_support
