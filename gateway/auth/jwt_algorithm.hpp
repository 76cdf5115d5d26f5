#pragma once
// The signature algorithms a JSON Web Token may be verified with (RFC 7518 section 3, RFC 8037): the
// asymmetric ones only. HMAC ("HS256" and the rest) and "none" have no value here, so that no
// configuration or token can select them. Pure functions.

#include <optional>
#include <string_view>

namespace gateway {

enum class jwt_algorithm : unsigned char { rs256, rs384, rs512, ps256, es256, es384, eddsa };

inline constexpr jwt_algorithm all_jwt_algorithms[] = {
    jwt_algorithm::rs256, jwt_algorithm::rs384, jwt_algorithm::rs512, jwt_algorithm::ps256,
    jwt_algorithm::es256, jwt_algorithm::es384, jwt_algorithm::eddsa};

// The algorithm of a JWS "alg" name, exactly as RFC 7518 writes it ("RS256" .. "EdDSA", case-sensitive);
// nullopt for "none", the HMAC names and anything else.
std::optional<jwt_algorithm> parse_jwt_algorithm(std::string_view name);

// The JWS name: "RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA".
std::string_view to_string(jwt_algorithm algorithm);

}  // namespace gateway
