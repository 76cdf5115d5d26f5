#pragma once
// The header fields a request's downstream calls carry besides the gateway's own: each call's effective
// header_policy (client headers forwarded by name, fixed ones) and the forwarded ones (server.forwarded:
// X-Forwarded-For/-Proto/-Host or Forwarded), which say who the client is. What the client sent in
// those is kept (and extended with the peer) only when the peer is a trusted proxy; otherwise the peer's
// address and the client's Host replace it, so no client can pose as another address.
// Client values holding a control character (CR, LF, NUL, ...) are not passed on. Pure: the client's
// headers come through client_headers.
//
// Ownership: render() fills this object's strings; the views it returns stay valid until the next
// render() or its destruction, so it must outlive the fan-out that uses them.

#include "gateway/config/config.hpp"
#include "gateway/downstream/downstream.hpp"

#include <boost/container/small_vector.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gateway {

// A call's own header fields (call_request::headers).
struct call_header_fields {
  std::string_view headers;
};

// The client request's header fields, by name (case-insensitive).
class client_headers {
 public:
  // Appends every value of the fields named `name` to `out`, joined by `separator`; false when none.
  virtual bool append(std::string_view name, std::string& out, std::string_view separator) const = 0;

 protected:
  ~client_headers() = default;
};

// Who sent the request, as the gateway sees it.
struct client_origin {
  std::string_view address;  // the peer's IP address ("10.1.2.3", "::1"); empty when unknown
  bool trusted = false;      // the peer is in server.trusted_proxies
  bool https = false;        // it came over TLS (the listener's): the forwarded proto
};

class call_headers {
 public:
  // For each call of `route`; null when no call carries anything (no policy, forwarded: none).
  // `identity` ("\r\nName: value" each: who the caller is, server/edge_gate.hpp) goes on every call.
  const call_header_fields* render(const aggregate_route& route, forwarded_style style,
                                   const client_headers& client, const client_origin& origin,
                                   std::string_view identity = {});
  // The forwarded fields alone, for a pass-through request: rendered, then appended to `out`
  // ("\r\nName: value" each) but those `policy` removes.
  void forwarded(forwarded_style style, const client_headers& client, const client_origin& origin,
                 const header_policy& policy, std::string& out) {
    render_forwarded(style, client, origin);
    append_forwarded(out, policy);
  }
  // Whether the last rendering wrote any forwarded field (the client's own are then replaced).
  bool forwards() const { return !forwarded_.empty(); }

 private:
  void render_forwarded(forwarded_style style, const client_headers& client, const client_origin& origin);
  void append_forwarded(std::string& out, const header_policy& policy) const;

  // Room for the forwarded fields of a direct client (an address, a proto, a host of usual length).
  static constexpr std::size_t forwarded_reserve = 128;

  std::string forwarded_;         // the forwarded fields, for every call that removes none of them
  std::vector<std::string> own_;  // per call with a policy of its own: its fields, the forwarded after
  boost::container::small_vector<call_header_fields, 8> fields_;  // per call (on the request's stack)
};

}  // namespace gateway
