// JSON Web Key Sets: which keys are kept and why the others are skipped, the documents refused as a whole,
// and keys made and tokens signed by the openssl command line (not by this project's helpers).

#include "gateway/auth/jwk_set.hpp"
#include "gateway/auth/jwt.hpp"
#include "tests/support/jwt_signer.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace gateway;
using jwt_test::keys;

namespace {

// The skipped lines of a set made of `jwks`, which must still hold `usable` keys.
std::vector<std::string> skipped_by(const std::string& jwks, std::size_t usable) {
  std::string error;
  std::vector<std::string> skipped;
  const auto set = jwk_set::parse(jwks, error, &skipped);
  INFO(error);
  REQUIRE(set);
  CHECK(set->size() == usable);
  return skipped;
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void run(const std::string& command) {
  INFO(command);
  REQUIRE(std::system((command + " 2>/dev/null").c_str()) == 0);
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

}  // namespace

TEST_CASE("jwk_set: keys of every kind are kept, in order, with their kids", "[jwt]") {
  std::string error;
  const auto set = jwk_set::parse(keys().jwks(), error);
  REQUIRE(set);
  CHECK(set->size() == 4);
  CHECK(set->kids() == std::vector<std::string>{"rsa-1", "ec256-1", "ec384-1", "ed-1"});
  const auto again = jwk_set::parse(keys().jwks(), error);
  CHECK(again->generation() != set->generation());
}

TEST_CASE("jwk_set: keys that cannot verify a signature are skipped, each with its reason", "[jwt]") {
  const auto& k = keys();
  const auto good = jwt_test::jwk(k.ed.get(), "good");
  const auto skipped = skipped_by(
      R"({"keys":[)" + good + R"(,{"kty":"oct","kid":"hmac","k":"c2VjcmV0"},{"kty":"XYZ","kid":"odd"},)" +
          jwt_test::jwk(k.rsa.get(), "enc", R"(,"use":"enc")") + "," +
          jwt_test::jwk(k.rsa.get(), "ops", R"(,"key_ops":["encrypt"])") + "," +
          jwt_test::jwk(k.rsa.get(), "hs", R"(,"alg":"HS256")") + "," +
          jwt_test::jwk(k.rsa.get(), "es", R"(,"alg":"ES256")") + "," +
          R"({"kty":"EC","crv":"P-521","kid":"p521","x":"AA","y":"AA"},)"
          R"({"kty":"OKP","crv":"X25519","kid":"x25519","x":"AA"},)"
          R"({"kid":"nokty"}, 7, )" +
          jwt_test::jwk(k.ed.get(), "sig", R"(,"use":"sig","key_ops":["verify"],"alg":"EdDSA")") + "]}",
      2);
  REQUIRE(skipped.size() == 10);
  CHECK(contains(skipped[0], "hmac"));
  CHECK(contains(skipped[0], "oct"));
  CHECK(contains(skipped[1], "unknown kty"));
  CHECK(contains(skipped[2], "use"));
  CHECK(contains(skipped[3], "key_ops"));
  CHECK(contains(skipped[4], "alg"));
  CHECK(contains(skipped[5], "does not fit"));
  CHECK(contains(skipped[6], "crv"));
  CHECK(contains(skipped[7], "crv"));
  CHECK(contains(skipped[8], "no kty"));
  CHECK(contains(skipped[9], "not a JSON object"));
}

TEST_CASE("jwk_set: parameters that do not import skip their key", "[jwt]") {
  const auto& k = keys();
  const auto good = jwt_test::jwk(k.ed.get(), "good");
  const auto x = jwt_test::bn_param(k.ec256.get(), "qx", 32);
  auto y = jwt_test::bn_param(k.ec256.get(), "qy", 32);
  y.back() = static_cast<char>(y.back() ^ 1);
  const auto ec = [](std::string_view crv, const std::string& xs, const std::string& ys) {
    return R"({"kty":"EC","crv":")" + std::string(crv) + R"(","x":")" + xs + R"(","y":")" + ys + R"("})";
  };
  const auto small_rsa = jwt_test::make_rsa(1024);
  const auto skipped = skipped_by(
      R"({"keys":[)" + good + "," + ec("P-256", jwt_test::b64url(x), jwt_test::b64url(y)) +
          "," +                                                                // off the curve
          ec("P-384", jwt_test::b64url(x), jwt_test::b64url(y)) + "," +        // coordinates of P-256's size
          ec("P-256", jwt_test::b64url(x) + "=", jwt_test::b64url(y)) + "," +  // padding
          jwt_test::jwk(small_rsa.get(), "rsa-1024") + "," +
          R"({"kty":"RSA","n":"AQAB","e":"AQAB"},)"
          R"({"kty":"OKP","crv":"Ed25519","x":"AAAA"},)"
          R"({"kty":"RSA","e":"AQAB"}]})",
      1);
  REQUIRE(skipped.size() == 7);
  CHECK(contains(skipped[0], "not on the curve"));
  CHECK(contains(skipped[1], "not 48 bytes"));
  CHECK(contains(skipped[2], "base64url"));
  CHECK(contains(skipped[3], "1024 bits"));
  CHECK(contains(skipped[4], "17 bits"));
  CHECK(contains(skipped[5], "32 bytes"));
  CHECK(contains(skipped[6], "\"n\""));
}

TEST_CASE("jwk_set: a document that is no JSON key set, or holds no usable key, is refused", "[jwt]") {
  for (const auto* text : {"", "not json", "[]", "{}", R"({"keys":{}})", R"({"keys":[]})",
                           R"({"keys":[{"kty":"oct","k":"c2VjcmV0"}]})", R"({"keys":[1,2]})"}) {
    INFO(text);
    std::string error;
    std::vector<std::string> skipped;
    CHECK(jwk_set::parse(text, error, &skipped) == nullptr);
    CHECK_FALSE(error.empty());
  }
  std::string error;
  jwk_set::parse(R"({"keys":[{"kty":"oct","k":"c2VjcmV0"}]})", error);
  CHECK(error == "JWKS has no usable key (1 skipped)");
}

TEST_CASE("jwt: keys and signatures made by the openssl command line verify", "[jwt]") {
  test_support::temp_dir dir;
  const auto f = [&](const char* name) { return dir.file(name); };
  const auto input_for = [](std::string_view alg, std::string_view kid) {
    return jwt_test::signing_input(
        R"({"alg":")" + std::string(alg) + R"(","kid":")" + std::string(kid) + R"("})",
        R"({"sub":"cli","exp":1700000600})");
  };
  // Ed25519: the public key is the last 32 bytes of its SubjectPublicKeyInfo.
  run("openssl genpkey -algorithm ed25519 -out " + f("ed.pem"));
  run("openssl pkey -in " + f("ed.pem") + " -pubout -outform DER -out " + f("ed.der"));
  const auto ed_der = read_file(f("ed.der"));
  REQUIRE(ed_der.size() == 44);
  // RSA: the modulus as hex, the exponent 65537.
  run("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out " + f("rsa.pem"));
  run("openssl rsa -in " + f("rsa.pem") + " -noout -modulus > " + f("modulus"));
  auto modulus = read_file(f("modulus"));
  REQUIRE(modulus.starts_with("Modulus="));
  modulus = modulus.substr(8, modulus.find('\n') - 8);
  // P-256: 04 || x || y, the last 65 bytes of its SubjectPublicKeyInfo.
  run("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out " + f("ec.pem"));
  run("openssl pkey -in " + f("ec.pem") + " -pubout -outform DER -out " + f("ec.der"));
  const auto ec_der = read_file(f("ec.der"));
  REQUIRE(ec_der.size() == 91);
  const std::string jwks =
      R"({"keys":[{"kty":"OKP","crv":"Ed25519","kid":"ed","x":")" + jwt_test::b64url(ed_der.substr(12)) +
      R"("},{"kty":"RSA","kid":"rsa","e":"AQAB","n":")" + jwt_test::b64url(from_hex(modulus)) +
      R"("},{"kty":"EC","crv":"P-256","kid":"ec","x":")" + jwt_test::b64url(ec_der.substr(27, 32)) +
      R"(","y":")" + jwt_test::b64url(ec_der.substr(59, 32)) + R"("}]})";
  std::string error;
  const auto set = jwk_set::parse(jwks, error);
  INFO(error);
  REQUIRE(set);
  REQUIRE(set->size() == 3);

  struct cli_case {
    const char* alg;
    const char* kid;
    std::string command;  // signs the file "in" into "sig"
  };
  const std::vector<cli_case> cases = {
      {"EdDSA", "ed",
       "openssl pkeyutl -sign -rawin -inkey " + f("ed.pem") + " -in " + f("in") + " -out " + f("sig")},
      {"RS256", "rsa", "openssl dgst -sha256 -sign " + f("rsa.pem") + " -out " + f("sig") + " " + f("in")},
      {"PS256", "rsa",
       "openssl dgst -sha256 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest -sign " +
           f("rsa.pem") + " -out " + f("sig") + " " + f("in")},
      {"ES256", "ec", "openssl dgst -sha256 -sign " + f("ec.pem") + " -out " + f("sig") + " " + f("in")},
  };
  for (const auto& c : cases) {
    INFO(c.alg);
    const auto signing_input = input_for(c.alg, c.kid);
    dir.write("in", signing_input);
    run(c.command);
    auto sig = read_file(f("sig"));
    if (std::string_view(c.alg) == "ES256") sig = jwt_test::ecdsa_raw(sig, 32);  // openssl writes DER
    const auto verdict = verify_jwt(signing_input + "." + jwt_test::b64url(sig), *set, {}, 1700000000);
    CHECK(verdict.failure == jwt_failure::none);
    CHECK(verify_jwt(signing_input + "." + jwt_test::b64url(sig), *set, {}, 1700000601).failure ==
          jwt_failure::expired);
  }
}
