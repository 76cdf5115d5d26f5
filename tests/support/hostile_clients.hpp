#pragma once
// Hostile connections that try to hold a listener's slots: each socket says nothing, sends one byte, or
// drips a request head that never ends, one byte every 200 ms. A group of them runs on its own thread
// (one poll() loop) and reopens at once every socket the server closes, until stop() or the group's end
// time, whichever comes first: the thread always ends by itself. Nothing throws; what happened is counted.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace test_support {

class hostile_clients {
 public:
  // `count` sockets to 127.0.0.1:`port`; socket i behaves as kind (first + i) % 3 (silent, one byte,
  // drip). The thread runs until `until` at the latest.
  hostile_clients(std::uint16_t port, int count, int first, std::chrono::steady_clock::time_point until);
  hostile_clients(const hostile_clients&) = delete;
  hostile_clients& operator=(const hostile_clients&) = delete;
  ~hostile_clients();  // stops, joins, closes every socket

  void stop();

  // Connections opened (connect completed) and closed by the server (end of stream or reset).
  long opened() const { return opened_.load(); }
  long closed_by_server() const { return closed_.load(); }
  // Sockets whose connect has completed and that the server has not closed, now.
  long open_now() const { return open_now_.load(); }
  // Bytes the server sent (a hostile socket gets no answer but an error page at most).
  long bytes_received() const { return received_.load(); }

 private:
  void run(std::uint16_t port, int count, int first, std::chrono::steady_clock::time_point until);

  std::atomic<bool> stop_{false};
  std::atomic<long> opened_{0};
  std::atomic<long> closed_{0};
  std::atomic<long> open_now_{0};
  std::atomic<long> received_{0};
  std::thread thread_;
};

}  // namespace test_support
