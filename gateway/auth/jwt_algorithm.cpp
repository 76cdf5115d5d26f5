#include "gateway/auth/jwt_algorithm.hpp"

namespace gateway {
namespace {

constexpr std::string_view names[] = {"RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"};
static_assert(std::size(names) == std::size(all_jwt_algorithms));

}  // namespace

std::optional<jwt_algorithm> parse_jwt_algorithm(std::string_view name) {
  for (const auto a : all_jwt_algorithms) {
    if (names[static_cast<std::size_t>(a)] == name) return a;
  }
  return std::nullopt;
}

std::string_view to_string(jwt_algorithm algorithm) {
  return names[static_cast<std::size_t>(algorithm)];
}

}  // namespace gateway
