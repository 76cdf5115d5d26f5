#pragma once
// Which implementation of read_readiness is built. The fast path (read_readiness_epoll.cpp) reaches into
// Asio 1.81's epoll reactor, so it is chosen only there: Boost 1.81 with Asio on its epoll reactor, unless
// the CMake option GATEWAY_PORTABLE_READINESS asks for the portable path (read_readiness_portable.cpp,
// public Asio API only). Both files are always compiled; each holds its path or nothing.

#include <boost/asio/ip/tcp.hpp>  // Asio's configuration macros
#include <boost/version.hpp>

#if !defined(GATEWAY_PORTABLE_READINESS) && BOOST_VERSION / 100 == 1081 && defined(BOOST_ASIO_HAS_EPOLL) && \
    !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define GATEWAY_READINESS_EPOLL 1
#else
#define GATEWAY_READINESS_EPOLL 0
#endif
