#pragma once
// The files a valid configuration names that are opened only at start, checked on this machine for
// `gateway --check`: a sqlite downstream's `database` must be a readable file that exists (the gateway
// opens it without creating it, read_only or not). A relative path is taken from the working directory,
// as at start. The loader reads the TLS files itself; these it leaves alone, so that a configuration
// loads where its database is not (tests, another machine). Problems come back in file order, at the
// value's line and column. Reads the file system only; never throws.

#include "gateway/config/config_loader.hpp"

#include <vector>

namespace gateway {

std::vector<config_error> check_local_files(const gateway_config& cfg);

}  // namespace gateway
