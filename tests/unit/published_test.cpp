// core/published.hpp: a value replaced by one thread and read on others is seen at once and in one order
// by every reader, and an old value lives as long as a reader holds it.

#include "gateway/core/published.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

using gateway::published;

TEST_CASE("published: a reader takes a new value on its next read and releases the old one there",
          "[published]") {
  published<int> value(std::make_shared<const int>(1));
  published<int>::reader reader(value);
  const auto first = reader.get();
  REQUIRE(*first == 1);
  std::weak_ptr<const int> old = first;
  const auto previous = value.publish(std::make_shared<const int>(2));
  CHECK(*previous == 1);
  CHECK(*value.load() == 2);
  CHECK(*reader.get() == 2);  // at once, with no hand-off to the reader's thread
  CHECK(!old.expired());      // `first` and `previous` still hold it
  reader.release();
  CHECK(*reader.get() == 2);
}

TEST_CASE("published: a reader on another thread sees a value published before it started reading",
          "[published]") {
  published<int> value(std::make_shared<const int>(0));
  published<int>::reader reader(value);
  REQUIRE(*reader.get() == 0);  // it holds the first value
  std::atomic<int> seen{-1};
  value.publish(std::make_shared<const int>(7));
  std::thread other([&] { seen = *reader.get(); });
  other.join();
  CHECK(seen == 7);
}

TEST_CASE("published: readers on several threads never see the values out of order", "[published]") {
  constexpr int last = 20000;
  published<int> value(std::make_shared<const int>(0));
  std::atomic<int> latest_seen{0};  // the highest value any reader has returned
  std::atomic<int> out_of_order{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      published<int>::reader reader(value);
      while (!done.load()) {
        // Whatever another reader has already returned, this read (which starts after it) must not be
        // older than that.
        const int floor = latest_seen.load();
        const int now = *reader.get();
        if (now < floor) out_of_order.fetch_add(1);
        int highest = latest_seen.load();
        while (now > highest && !latest_seen.compare_exchange_weak(highest, now)) {
        }
      }
      if (*reader.get() != last) out_of_order.fetch_add(1);
    });
  }
  for (int v = 1; v <= last; ++v) value.publish(std::make_shared<const int>(v));
  done = true;
  for (auto& t : readers) t.join();
  CHECK(out_of_order == 0);
}
