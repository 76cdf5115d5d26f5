#pragma once
// When a failed exchange is tried again, on a new connection: only an exchange on a pooled (reused)
// connection that failed before any of the answer arrived, the way a connection the downstream closed
// while it idled fails on first use (end of stream, reset, broken pipe). A new connection is never
// retried, so a call makes at most one retry; a cancelled call makes none. Pure.

#include <boost/system/error_code.hpp>

namespace gateway {

struct failed_exchange {
  boost::system::error_code ec;
  bool reused = false;          // the connection had served an exchange before
  bool answer_started = false;  // some of the answer had arrived
  bool cancelled = false;       // the call's cancel_source had fired
};

bool retry_on_new_connection(const failed_exchange& failure);

}  // namespace gateway
