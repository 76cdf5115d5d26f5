#pragma once
// The mock's listeners and worker threads. Each worker runs its own io_context; each listener (an endpoint
// of the mock, acceptor i on worker i % threads) hands accepted sockets round-robin to the workers, and
// each connection runs as one coroutine with a small stack on its worker, knowing its listener's index.
// Construction binds and listens (throws boost::system::system_error on failure); start() runs the
// threads, serving requests from `registry`, which must outlive stop(); stop() closes the listeners,
// stops the workers and joins them.

#include "loadtest/mock/path_registry.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>

#include <memory>
#include <thread>
#include <vector>

namespace mock {

class tls_server;

class server {
 public:
  // `backlog`: each listener's listen backlog; 0: the system's maximum.
  server(const std::vector<boost::asio::ip::tcp::endpoint>& listen, unsigned threads, unsigned backlog = 0);
  server(const server&) = delete;
  server& operator=(const server&) = delete;
  ~server();

  // The bound addresses, in the order of `listen`.
  std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const;

  // The endpoints from `first` on serve HTTPS through `tls` (which must outlive stop()); before start().
  void enable_tls(std::size_t first, tls_server& tls) {
    first_tls_ = first;
    tls_ = &tls;
  }

  void start(path_registry& registry);
  void stop();

 private:
  struct worker {
    boost::asio::io_context context{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{context.get_executor()};
    std::thread thread;
  };

  void accept_loop(std::size_t endpoint, const boost::asio::yield_context& yield);
  void spawn_session(boost::asio::ip::tcp::socket socket, std::size_t endpoint);

  path_registry* registry_ = nullptr;  // set by start()
  tls_server* tls_ = nullptr;          // set by enable_tls()
  std::size_t first_tls_ = 0;
  std::vector<std::unique_ptr<worker>> workers_;
  std::vector<boost::asio::ip::tcp::acceptor> acceptors_;
};

}  // namespace mock
