// How late an Asio timer fires on this machine: 200 waits of 15 ms on an otherwise idle io_context, the
// lateness in microseconds at the median, 90th and 99th percentile and the maximum.
// usage: probe-timer
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

int main() {
  using namespace std::chrono;
  boost::asio::io_context io;
  boost::asio::steady_timer timer(io);
  std::vector<double> late;
  steady_clock::time_point armed;
  std::function<void()> arm = [&] {
    armed = steady_clock::now();
    timer.expires_after(milliseconds(15));
    timer.async_wait([&](const boost::system::error_code&) {
      late.push_back(duration<double, std::micro>(steady_clock::now() - armed).count() - 15000);
      if (late.size() < 200) arm();
    });
  };
  arm();
  io.run();
  std::sort(late.begin(), late.end());
  std::printf("timer lateness us: p50 %.0f p90 %.0f p99 %.0f max %.0f\n", late[100], late[180], late[198],
              late[199]);
  return 0;
}
