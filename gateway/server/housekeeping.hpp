#pragma once
// A thread that tells when the configuration file may have changed, and ticks about twice a second for
// the server's housekeeping (closing downstreams no configuration uses any more). It watches the file's
// directory with inotify, not the file: an editor that writes a new file and renames it over the old one,
// and a Kubernetes ConfigMap volume, which swaps the `..data` symlink, both replace the file rather than
// write it. Events are taken together for 100 ms (an editor's burst of writes is one change) before
// `changed` runs; whether the text really changed is for it to find out. Runs `changed` and `tick` on its
// own thread, never both at once.

#include <functional>
#include <string>
#include <thread>

namespace gateway {

class housekeeping {
 public:
  // With `watch` false (server.watch_config) the file is not watched; `tick` runs either way. Throws
  // std::runtime_error when inotify cannot be had.
  housekeeping(const std::string& path, bool watch, std::function<void()> changed,
               std::function<void()> tick);
  ~housekeeping();  // stops and joins
  housekeeping(const housekeeping&) = delete;
  housekeeping& operator=(const housekeeping&) = delete;

 private:
  void run();

  std::string name_;  // the file's name in its directory
  std::function<void()> changed_;
  std::function<void()> tick_;
  int inotify_ = -1;
  int stop_ = -1;  // an eventfd the destructor writes to
  std::thread thread_;
};

}  // namespace gateway
