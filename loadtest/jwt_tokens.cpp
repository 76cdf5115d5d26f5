// jwt-tokens: a key made for the run, its JWKS file and N tokens signed with it, one per line, for the
// benchmark's jwt scenario (loadtest/bench.sh). Signs the way tests/support/jwt_signer.hpp does (the tests'
// signer, independent of gateway/auth).
//
//   jwt-tokens --alg RS256|ES256 --count N --jwks FILE --tokens FILE [--issuer ISS] [--audience AUD]
//              [--cache-slots 1024]
//
// Every token has kid "bench-1", its own sub ("user-1".."user-N"), the issuer and audience given and an
// exp in 2100. The tokens are ordered so that the first ones fall into distinct slots of the gateway's
// verified-token cache (direct-mapped: std::hash of the token modulo its 1024 slots, as
// gateway/auth/verified_tokens.cpp does): a run that sends only the first K <= --cache-slots tokens finds
// every one cached once seen, whatever the hash does to K random tokens. Exits 2 on bad arguments, 1 when
// OpenSSL fails.

#include "tests/support/jwt_signer.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr long long exp_2100 = 4'102'444'800;  // 2100-01-01T00:00:00Z

struct options {
  std::string alg;
  std::size_t count = 0;
  std::string jwks;
  std::string tokens;
  std::string issuer = "https://idp.bench";
  std::string audience = "bench";
  std::size_t cache_slots = 1024;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "jwt-tokens: " << why
            << "\nusage: jwt-tokens --alg RS256|ES256 --count N --jwks FILE --tokens FILE [--issuer ISS] "
               "[--audience AUD] [--cache-slots N]\n";
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (i + 1 >= argc) usage(name + " needs a value");
    const std::string value = argv[++i];
    try {
      if (name == "--alg")
        o.alg = value;
      else if (name == "--count")
        o.count = std::stoul(value);
      else if (name == "--jwks")
        o.jwks = value;
      else if (name == "--tokens")
        o.tokens = value;
      else if (name == "--issuer")
        o.issuer = value;
      else if (name == "--audience")
        o.audience = value;
      else if (name == "--cache-slots")
        o.cache_slots = std::stoul(value);
      else
        usage("unknown option " + name);
    } catch (const std::logic_error&) {
      usage("bad number for " + name + ": " + value);
    }
  }
  if (o.alg != "RS256" && o.alg != "ES256") usage("--alg must be RS256 or ES256");
  if (o.count == 0 || o.jwks.empty() || o.tokens.empty()) usage("--count, --jwks and --tokens are required");
  if (o.cache_slots == 0) usage("--cache-slots must be at least 1");
  return o;
}

// Tokens [from, to) of `out`, signed by `key`.
void sign_range(EVP_PKEY* key, const options& o, std::vector<std::string>& out, std::size_t from,
                std::size_t to) {
  const std::string header = R"({"alg":")" + o.alg + R"(","typ":"JWT","kid":"bench-1"})";
  for (std::size_t i = from; i < to; ++i) {
    const std::string payload = R"({"iss":")" + o.issuer + R"(","aud":")" + o.audience + R"(","sub":"user-)" +
                                std::to_string(i + 1) + R"(","exp":)" + std::to_string(exp_2100) + "}";
    out[i] = jwt_test::token(key, o.alg, header, payload);
  }
}

// Stable: first the tokens that take a slot no earlier token took, then the rest in their order.
void distinct_slots_first(std::vector<std::string>& tokens, std::size_t slots) {
  std::vector<bool> taken(slots, false);
  std::stable_partition(tokens.begin(), tokens.end(), [&](const std::string& t) {
    const auto slot = std::hash<std::string_view>{}(t) % slots;
    if (taken[slot]) return false;
    taken[slot] = true;
    return true;
  });
}

}  // namespace

int main(int argc, char** argv) {
  const auto o = parse(argc, argv);
  try {
    const auto key = o.alg == "RS256" ? jwt_test::make_rsa(2048) : jwt_test::make_ec("P-256");
    jwt_test::require(key != nullptr, "key generation");

    // RSA signatures take about a millisecond each: the signing is spread over the CPUs.
    std::vector<std::string> tokens(o.count);
    const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> failures(workers);
    for (std::size_t w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] {
        try {
          sign_range(key.get(), o, tokens, o.count * w / workers, o.count * (w + 1) / workers);
        } catch (...) {
          failures[w] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& f : failures)
      if (f) std::rethrow_exception(f);
    distinct_slots_first(tokens, o.cache_slots);

    std::ofstream jwks(o.jwks);
    jwks << R"({"keys":[)" << jwt_test::jwk(key.get(), "bench-1", R"(,"alg":")" + o.alg + R"(","use":"sig")")
         << "]}\n";
    std::ofstream out(o.tokens);
    for (const auto& t : tokens) out << t << '\n';
    if (!jwks.flush() || !out.flush()) {
      std::cerr << "jwt-tokens: cannot write " << o.jwks << " or " << o.tokens << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "jwt-tokens: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
