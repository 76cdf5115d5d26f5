#include "gateway/auth/jwt.hpp"

#include "gateway/auth/unix_seconds.hpp"
#include "gateway/codec/base64url.hpp"
#include "gateway/codec/json_path.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace gateway {
namespace {

using json = nlohmann::json;

constexpr std::string_view labels[] = {"none",        "missing",       "malformed",     "algorithm",
                                       "unknown_kid", "bad_signature", "expired",       "not_yet_valid",
                                       "issuer",      "audience",      "missing_claim", "forbidden"};
static_assert(std::size(labels) == jwt_failure_count);

constexpr int max_depth = 16;

jwt_verdict refused(jwt_failure failure, std::string description) {
  jwt_verdict verdict;
  verdict.failure = failure;
  verdict.description = std::move(description);
  return verdict;
}

enum class object_text { ok, not_object, repeated_member };

// Parses a JOSE header or a claims set: one JSON object whose objects name each member once (RFC 7515
// allows refusing a repeated name; keeping the last one, as a parser may, lets two readers of one token
// see different claims), nested at most max_depth deep.
object_text parse_object(std::string_view text, json& out) {
  std::vector<std::size_t> member_counts;  // of each object being parsed, innermost last
  bool repeated = false, too_deep = false;
  const auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    too_deep = too_deep || depth > max_depth;
    switch (event) {
      case json::parse_event_t::object_start:
        member_counts.push_back(0);
        break;
      case json::parse_event_t::key:
        if (!member_counts.empty()) ++member_counts.back();
        break;
      case json::parse_event_t::object_end:
        // The object keeps one member per name: fewer members than keys read means a name came twice.
        if (!member_counts.empty()) {
          repeated = repeated || parsed.size() != member_counts.back();
          member_counts.pop_back();
        }
        break;
      default:
        break;
    }
    return true;
  };
  // nlohmann reads a NUL byte as the end of its input, and would take "{}\0junk" for "{}"; valid JSON
  // never holds one (not even inside a string, where controls are escaped).
  if (text.find('\0') != std::string_view::npos) return object_text::not_object;
  out = json::parse(text, callback, false);
  if (out.is_discarded() || !out.is_object() || too_deep) return object_text::not_object;
  return repeated ? object_text::repeated_member : object_text::ok;
}

// A NumericDate (RFC 7519: seconds, possibly with a fraction) as whole seconds, a fraction rounded down
// (`up` false) or up; saturated at the limits of int64.
std::int64_t whole_seconds(const json& number, bool up) {
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  if (number.is_number_unsigned()) return std::min<std::uint64_t>(number.get<std::uint64_t>(), max);
  if (number.is_number_integer()) return number.get<std::int64_t>();
  const double d = up ? std::ceil(number.get<double>()) : std::floor(number.get<double>());
  if (d >= 9.2e18) return max;  // beyond these, int64 cannot hold the value
  if (d <= -9.2e18) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(d);
}

bool listed(const std::vector<std::string>& list, const json& value) {
  return value.is_string() &&
         std::find(list.begin(), list.end(), value.get_ref<const std::string&>()) != list.end();
}

// Whether `claim` holds `value`: a word of a space-separated string, or a string element of an array.
bool holds(const json& claim, std::string_view value) {
  if (claim.is_array())
    return std::any_of(claim.begin(), claim.end(), [&](const json& e) { return e == value; });
  if (!claim.is_string()) return false;
  std::string_view words = claim.get_ref<const std::string&>();
  while (!words.empty()) {
    const auto space = words.find(' ');
    if (words.substr(0, space) == value) return true;
    if (space == std::string_view::npos) break;
    words.remove_prefix(space + 1);
  }
  return false;
}

// The checks after the signature, on the claims set.
jwt_verdict check_claims(const json& claims, const jwt_rules& rules, std::int64_t now) {
  jwt_verdict verdict;
  const auto leeway = static_cast<std::int64_t>(rules.leeway.count());
  if (const auto exp = claims.find("exp"); exp != claims.end()) {
    if (!exp->is_number()) return refused(jwt_failure::malformed, "exp is not a number");
    verdict.expires = whole_seconds(*exp, false);
    if (now > saturating_add(verdict.expires, leeway)) return refused(jwt_failure::expired, "token expired");
  }
  if (const auto nbf = claims.find("nbf"); nbf != claims.end()) {
    if (!nbf->is_number()) return refused(jwt_failure::malformed, "nbf is not a number");
    verdict.not_before = whole_seconds(*nbf, true);
    if (saturating_add(now, leeway) < verdict.not_before)
      return refused(jwt_failure::not_yet_valid, "token not yet valid");
  }
  if (!rules.issuers.empty()) {
    const auto iss = claims.find("iss");
    if (iss == claims.end() || !listed(rules.issuers, *iss))
      return refused(jwt_failure::issuer, "issuer not accepted");
  }
  if (!rules.audiences.empty()) {
    const auto aud = claims.find("aud");
    const bool accepted =
        aud != claims.end() && (listed(rules.audiences, *aud) ||
                                (aud->is_array() && std::any_of(aud->begin(), aud->end(), [&](const json& a) {
                                   return listed(rules.audiences, a);
                                 })));
    if (!accepted) return refused(jwt_failure::audience, "audience not accepted");
  }
  for (const auto& name : rules.required_claims) {
    const auto claim = claims.find(name);
    if (claim == claims.end() || claim->is_null())
      return refused(jwt_failure::missing_claim, "missing claim '" + name + "'");
  }
  for (const auto& required : rules.claim_values) {
    const auto claim = claims.find(required.claim);
    const bool ok =
        claim != claims.end() && std::all_of(required.values.begin(), required.values.end(),
                                             [&](const std::string& v) { return holds(*claim, v); });
    if (!ok) return refused(jwt_failure::forbidden, "claim '" + required.claim + "' lacks a required value");
  }
  return verdict;
}

jwt_verdict verify(std::string_view token, const jwk_set& keys, const jwt_rules& rules, std::int64_t now,
                   std::span<const std::string> wanted) {
  if (token.empty()) return refused(jwt_failure::missing, "no token");
  if (token.size() > max_jwt_size) return refused(jwt_failure::malformed, "token too long");
  const auto dot1 = token.find('.');
  const auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
    return refused(jwt_failure::malformed, "token is not three parts");
  std::string header_text, payload_text, signature;
  if (!base64url_decode(token.substr(0, dot1), header_text) ||
      !base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1), payload_text) ||
      !base64url_decode(token.substr(dot2 + 1), signature))
    return refused(jwt_failure::malformed, "token part not base64url");
  json header, claims;
  switch (parse_object(header_text, header)) {
    case object_text::not_object:
      return refused(jwt_failure::malformed, "header not a JSON object");
    case object_text::repeated_member:
      return refused(jwt_failure::malformed, "header repeats a member");
    case object_text::ok:
      break;
  }
  switch (parse_object(payload_text, claims)) {
    case object_text::not_object:
      return refused(jwt_failure::malformed, "payload not a JSON object");
    case object_text::repeated_member:
      return refused(jwt_failure::malformed, "payload repeats a member");
    case object_text::ok:
      break;
  }
  // Extensions that must be understood (RFC 7515 4.1.11): none are.
  if (header.contains("crit")) return refused(jwt_failure::malformed, "crit header not supported");
  const auto alg_member = header.find("alg");
  if (alg_member == header.end() || !alg_member->is_string())
    return refused(jwt_failure::malformed, "alg missing");
  const auto alg = parse_jwt_algorithm(alg_member->get_ref<const std::string&>());
  if (!alg || (!rules.algorithms.empty() &&
               std::find(rules.algorithms.begin(), rules.algorithms.end(), *alg) == rules.algorithms.end()))
    return refused(jwt_failure::algorithm, "algorithm not accepted");
  std::optional<std::string_view> kid;
  if (const auto k = header.find("kid"); k != header.end()) {
    if (!k->is_string()) return refused(jwt_failure::malformed, "kid is not a string");
    kid = k->get_ref<const std::string&>();
  }
  const jwk* key = keys.find(kid, *alg);
  if (!key)
    return refused(jwt_failure::unknown_kid, kid ? "no key for kid" : "no single key for the algorithm");
  if (!usable_for(*key, *alg)) return refused(jwt_failure::bad_signature, "key not for this algorithm");
  if (!key->key.verify(*alg, token.substr(0, dot2), signature))
    return refused(jwt_failure::bad_signature, "signature does not verify");

  auto verdict = check_claims(claims, rules, now);
  if (verdict.failure != jwt_failure::none) return verdict;
  verdict.claims.reserve(wanted.size());
  json_path path;
  for (const auto& name : wanted) {
    path.steps.assign(1, name);  // one step: a top-level member, whatever characters its name holds
    verdict.claims.push_back(scalar_text(find_json(payload_text, path)).value_or(std::string()));
  }
  return verdict;
}

}  // namespace

std::string_view label(jwt_failure failure) {
  return labels[static_cast<std::size_t>(failure)];
}

jwt_verdict verify_jwt(std::string_view token, const jwk_set& keys, const jwt_rules& rules, std::int64_t now,
                       std::span<const std::string> wanted) {
  try {
    return verify(token, keys, rules, now, wanted);
  } catch (const std::exception&) {  // out of memory: refused, and nothing of the token disclosed
    return refused(jwt_failure::malformed, "token not readable");
  }
}

}  // namespace gateway
