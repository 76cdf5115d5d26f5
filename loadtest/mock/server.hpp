#pragma once
// The mock's listener and worker threads. Each worker runs its own io_context; one acceptor (on worker 0)
// hands accepted sockets round-robin to the workers, and each connection runs as one coroutine with a
// small stack on its worker. Construction binds and listens (throws boost::system::system_error on
// failure); start() runs the threads; stop() closes the listener, stops the workers and joins them.

#include "loadtest/mock/path_registry.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>

#include <memory>
#include <thread>
#include <vector>

namespace mock {

class server {
 public:
  server(const boost::asio::ip::tcp::endpoint& listen, unsigned threads, path_registry& registry);
  server(const server&) = delete;
  server& operator=(const server&) = delete;
  ~server();

  boost::asio::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }

  void start();
  void stop();

 private:
  struct worker {
    boost::asio::io_context context{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{context.get_executor()};
    std::thread thread;
  };

  void accept_loop(const boost::asio::yield_context& yield);
  void spawn_session(boost::asio::ip::tcp::socket socket);

  path_registry& registry_;
  std::vector<std::unique_ptr<worker>> workers_;
  boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace mock
