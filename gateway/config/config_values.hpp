#pragma once
// Checks and parsers of single configuration values, apart from YAML: listener and downstream addresses,
// names, route paths, ${ENV} references. Pure functions (substitute_env also reads the environment), safe
// on any thread; each reports a problem as a message (or false), never throws. The section readers
// (config_sections.hpp) call them and place the message at the value.

#include "gateway/codec/safe_name.hpp"
#include "gateway/config/config.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gateway {

// "HOST:PORT" or "[V6]:PORT" split into the host and the port's digits; nothing when it has no such shape.
std::optional<std::pair<std::string, std::string>> split_host_port(std::string_view text);

// The HTTP status code written in `text` (digits only) when it is within lowest..highest.
std::optional<unsigned> parse_status_code(std::string_view text, unsigned lowest, unsigned highest);

// The names of the kinds of failure_rule, as `circuit_breaker.failures` writes them.
inline constexpr std::array<std::pair<std::string_view, std::uint8_t>, 6> failure_kind_names{{
    {"connect", failure_rule::connect},
    {"reset", failure_rule::reset},
    {"timeout", failure_rule::timeout},
    {"invalid_answer", failure_rule::invalid_answer},
    {"5xx", failure_rule::status_5xx},
    {"4xx", failure_rule::status_4xx},
}};

// The port written in `digits`, or an error message when it is outside lowest..65535.
std::string parse_port(const std::string& digits, unsigned lowest, std::uint16_t& port);

// A listener's "HOST:PORT": the host must be an IP address (it is bound, not resolved), port 0 is
// ephemeral. Returns an error message or "".
std::string parse_listen(const std::string& text, const std::string& example, listen_address& out);

// Whether two listeners cannot both bind: one port (not 0: each gets its own) and the same address, or a
// wildcard address that covers the other (the IPv6 wildcard is dual-stack: it covers IPv4 addresses too);
// an IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address it maps.
bool listeners_overlap(const listen_address& a, const listen_address& b);

// "http://host:port[/base]" or "https://..." (port 80 or 443 by default) -> settings fields (tls.enabled
// for https); returns an error message or "". A url with credentials (user:password@host) is refused
// with a message that does not repeat them.
std::string parse_downstream_url(downstream_settings& d);

// Whether a header's or an environment variable's name says its value is a credential (it holds auth, key,
// token, secret, cookie, password, passwd, credential or session, in any case): such values are never
// shown in /config.
bool credential_name(std::string_view name);

// `text` with each ${NAME} replaced by the environment variable's value, and each ${NAME:-default} by it
// or, when NAME is unset or empty, by `default` (no '}' in it). `used`: some reference was replaced;
// `secret` (when given): one named a variable whose name says it holds a credential (credential_name). False
// with `problem` for a malformed reference or an unset variable without a default.
bool substitute_env(const std::string& text, std::string& out, bool& used, std::string& problem,
                    bool* secret = nullptr);

}  // namespace gateway
