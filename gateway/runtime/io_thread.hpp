#pragma once
// Marks the gateway's I/O threads, so that code which must never run on one (a blocking driver call)
// can check where it is.

namespace gateway {

void mark_io_thread();
bool on_io_thread();

// Aborts the process with `what` in the message if called on an I/O thread: blocking there would
// stall every request on that thread, a bug that must not go unnoticed.
void require_off_io_thread(const char* what);

}  // namespace gateway
