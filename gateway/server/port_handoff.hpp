#pragma once
// Handing a shared port (SO_REUSEPORT) to the process that restarts this one without resetting a
// connection. When a listener closes, Linux resets every connection still in its accept queue; one whose
// handshake ends between the last accept and the close is lost, however fast that close follows (unless
// net.ipv4.tcp_migrate_req is set). So, a moment before its close, a listener that shares its port stops
// taking new handshakes: a socket filter drops the SYNs that reach it, and their clients send them again
// after their retransmission timeout (1 s on Linux), by then to the listener that stays. Handshakes already
// begun complete and are accepted as before; when the close comes, none is still arriving.
//
// Only when another listener shares the port: a gateway that is the port's only listener keeps taking
// connections to the end of its drain, as the drain promises. Called at the drain only, never per request.

namespace gateway::port_handoff {

// Whether another listening socket in this network namespace (another process, after a restart) has the
// same local address and port as `listen_fd`, so that new connections can go to it. Reads the kernel's
// socket table (/proc/net/tcp or tcp6); false when it cannot tell.
bool shared(int listen_fd);

// Drops, from now on, every SYN that reaches `listen_fd` (a socket filter; an established connection
// accepted from it later is unaffected, it inherits a filter that drops nothing it can receive). Returns
// false, and changes nothing, when the filter cannot be attached.
bool refuse_new_handshakes(int listen_fd);

// The drain's step: refuse_new_handshakes() when shared(); true when it did.
bool hand_off(int listen_fd);

}  // namespace gateway::port_handoff
