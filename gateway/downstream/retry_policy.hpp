#pragma once
// When a failed exchange is tried again within its attempt, on a new connection to the same endpoint:
// only an exchange on a pooled (reused) connection that failed before any of the answer arrived, the way a
// connection the downstream closed while it idled fails on first use (end of stream, reset, broken pipe).
// That is the pool's staleness, not the downstream failing, so it costs no retry budget and no backoff; a
// new connection is never replaced, so an attempt does this at most once, and a cancelled one never.
// Retries of the call itself (another attempt, after a backoff, within a budget) are http_call's. Pure.

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
