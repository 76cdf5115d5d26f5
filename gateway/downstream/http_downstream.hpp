#pragma once
// An HTTP/1.1 downstream: GET requests over keep-alive connections, one pool per I/O thread (each
// thread's pool holds at most max_connections / threads connections, so the total stays under the cap
// without a lock on the hot path). A host name is resolved in the background (host_resolver).
// A call answers ok only for a 2xx response whose body is a JSON object within max_response_bytes.

#include "gateway/config/config.hpp"
#include "gateway/downstream/downstream.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <vector>

namespace gateway {

class connection_pool;
class host_resolver;

class http_downstream final : public downstream {
 public:
  // Registers the host with `resolver`, which must be started before calls and outlive nothing: the
  // pools share the resolved address.
  http_downstream(const downstream_settings& settings, const std::vector<boost::asio::io_context*>& workers,
                  host_resolver& resolver);
  ~http_downstream() override;

  bool start(const call_request& request, call_sink& sink, std::size_t index) override;
  void close_idle(std::size_t worker) override;

  const downstream_settings& settings() const { return settings_; }
  // The request head for `request`: write_head() writes exactly head_size() bytes at `out`.
  std::size_t head_size(const call_request& request) const;
  void write_head(const call_request& request, char* out) const;

 private:
  downstream_settings settings_;
  std::string head_prefix_;  // "GET " and the base path
  std::string head_middle_;  // from the version through the Host and Accept fields to the timeout's name
  std::vector<std::unique_ptr<connection_pool>> pools_;  // indexed by worker
};

}  // namespace gateway
