// Sanitizer builds run Boost.Context on its ucontext backend (BOOST_USE_UCONTEXT), which ASan understands.
// Debian's libboost_context is built for fcontext and lacks the ucontext backend's thread-local record,
// so it is defined here, as Boost.Context's src/fiber.cpp does.
#include <boost/context/fiber.hpp>

namespace boost::context::detail {

thread_local fiber_activation_record* fib_current_rec = nullptr;

fiber_activation_record_initializer::fiber_activation_record_initializer() noexcept {
  if (fib_current_rec == nullptr) fib_current_rec = new fiber_activation_record();
}

fiber_activation_record_initializer::~fiber_activation_record_initializer() {
  delete fib_current_rec;
  fib_current_rec = nullptr;
}

fiber_activation_record*& fiber_activation_record::current() noexcept {
  thread_local static fiber_activation_record_initializer initializer;
  return fib_current_rec;
}

}  // namespace boost::context::detail
