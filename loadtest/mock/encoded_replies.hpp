#pragma once
// The bodies of the modes that answer in a content coding (compressed, zipbomb, badgzip, brotli), with
// the Content-Encoding each is labelled with. Pure functions, no I/O.

#include "loadtest/mock/behaviour.hpp"

#include <string>
#include <string_view>

namespace mock {

struct encoded_reply {
  std::string_view coding;  // the Content-Encoding value; empty: none
  std::string body;
};

// What mode `how` (one of the four above) sends for the ok body `plain` to a request with
// `accept_encoding` (empty when absent): `compressed` honours it (the gateway's own negotiation), the
// others ignore it, as a broken or hostile server would.
encoded_reply encode_reply(mode how, std::string_view plain, std::string_view accept_encoding);

// The zip bomb: a gzip stream of about 16 KiB that inflates to a 16 MiB JSON object; built once.
const std::string& zip_bomb();

}  // namespace mock
