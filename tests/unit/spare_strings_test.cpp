// The per-thread spare string buffers: a given buffer serves the next take(), short and huge ones are not
// kept, and no more than max_kept wait.

#include "gateway/core/spare_strings.hpp"

#include <catch2/catch.hpp>

#include <thread>
#include <vector>

using namespace gateway;

TEST_CASE("spare strings: a buffer given back serves the next take, emptied") {
  std::thread([] {  // a thread of its own: nothing kept from other tests
    std::string s = spare_strings::take(200);
    CHECK(s.empty());
    CHECK(s.capacity() >= 200);
    s.assign(150, 'x');
    const char* buffer = s.data();
    spare_strings::give(std::move(s));
    const std::string again = spare_strings::take(100);
    CHECK(again.empty());
    CHECK(again.data() == buffer);
    const std::string more = spare_strings::take(100);  // nothing kept now: a new buffer
    CHECK(more.data() != buffer);
    CHECK(more.capacity() >= 100);
  })
      .join();
}

TEST_CASE("spare strings: short, huge and surplus buffers are not kept") {
  std::thread([] {
    std::string huge(spare_strings::max_bytes + 1, 'x');
    spare_strings::give(std::move(huge));
    std::string shorter = "short";
    spare_strings::give(std::move(shorter));
    CHECK(spare_strings::take(0).capacity() <= std::string().capacity());  // nothing was kept

    std::vector<std::string> many;
    for (std::size_t i = 0; i < spare_strings::max_kept + 10; ++i) many.push_back(spare_strings::take(1000));
    for (auto& s : many) spare_strings::give(std::move(s));
    std::size_t kept = 0;  // a kept buffer has room for 1000; a new one for 10 holds no more than 15
    for (std::size_t i = 0; i < spare_strings::max_kept + 10; ++i) {
      kept += spare_strings::take(10).capacity() >= 1000 ? 1 : 0;
    }
    CHECK(kept == spare_strings::max_kept);
  }).join();
}
