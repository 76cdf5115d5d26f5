// share_key(), the key of every answer a downstream shares (cache, stale-if-error, coalescing): two call
// requests get one key exactly when they send the downstream the same thing. Property style: requests are
// generated from pieces chosen to break a careless encoding (empty values, separators, length-like text,
// values that are prefixes of each other), and the keys are compared with a model of what is sent,
// written here independently of the gateway's code.

#include "gateway/downstream/share_key.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace gateway;
using namespace std::chrono_literals;
using namespace std::string_literals;

namespace {

// Text that an encoding by separators or by length prefixes could confuse.
const std::vector<std::string> tricky = {
    "",         "a",        "ab",   "abc", "b",   ":",     "1:",  "0:",   "1:a",   "2:ab", "a:",   "\r\n",
    "\r\n\r\n", "\r\nX: 1", "X: 1", ",",   ";",   "=",     "a=b", "\x1f", "a\x1f", "\x01", "\x02", "\x03",
    "?",        "/",        "/a",   "/a?", "\0"s, "\0\0"s, "-",   "c",    "GET",   "12",   "123:"};

// The header fields a call may send (call_request::headers), the forwarded ones included.
const std::vector<std::string> field_names = {"Authorization",    "Cookie",          "X-Api-Key",
                                              "X-Tenant",         "X-Forwarded-For", "X-Forwarded-Proto",
                                              "X-Forwarded-Host", "Forwarded"};

// A request as the tests build it; request() points a call_request at it (it must outlive that).
struct spec {
  std::string method = "GET";
  std::string target = "/coupon?sku=A1";
  std::string body;
  std::vector<std::pair<std::string, std::string>> fields;  // sent as "\r\nName: value" each
  std::optional<response_header_policy> policy;             // the answer fields kept; none: nullopt
  std::optional<passed_answer_policy> pass;                 // the statuses passed; none: nullopt
  // SQL (when `sql`): the query's statement and names, and the route's parameters (names, values).
  std::optional<sql_settings> sql;
  std::vector<param_settings> param_specs;
  gateway::param_values params;
  // Bookkeeping the gateway writes per request: never in the key.
  std::string request_id = "r-1";
  std::string traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  clock::time_point deadline = clock::time_point() + 10s;

  std::string headers;  // rendered by request()
  call_request request() {
    headers.clear();
    for (const auto& [name, value] : fields) headers.append("\r\n").append(name).append(": ").append(value);
    call_request r;
    r.method = method;
    r.target = sql ? std::string_view() : std::string_view(target);
    r.body = body;
    r.headers = headers;
    r.answer_fields = policy ? &*policy : nullptr;
    r.pass = pass ? &*pass : nullptr;
    r.sql = sql ? &*sql : nullptr;
    r.params = &params;
    r.param_specs = &param_specs;
    r.request_id = request_id;
    r.traceparent = traceparent;
    r.deadline = deadline;
    r.now = clock::time_point() + 1s;
    return r;
  }
};

// What the downstream is sent (and which fields of its answer the call keeps), written without the
// gateway's code: a SQL call binds, for each name of its query, the last route parameter of that name with
// a value that is not empty, else NULL.
using sent_http = std::tuple<std::string, std::string, std::string, std::string>;
using sent_sql = std::tuple<std::string, std::vector<std::pair<std::string, std::optional<std::string>>>>;
using kept = std::tuple<bool, std::vector<std::string>, std::vector<std::string>>;
using model = std::tuple<bool, sent_http, sent_sql, kept>;

model model_of(spec& s) {
  s.request();  // renders s.headers
  kept k{false, {}, {}};
  if (s.policy && !s.policy->empty()) k = {s.policy->cache_control, s.policy->forward, s.policy->set_cookie};
  if (!s.sql) return {false, {s.method, s.target, s.body, s.headers}, {}, k};
  sent_sql q{s.sql->statement, {}};
  for (const auto& name : s.sql->params) {
    std::optional<std::string> value;
    for (std::size_t i = 0; i < s.param_specs.size(); ++i) {
      if (s.param_specs[i].name == name && !s.params[i].empty()) value = s.params[i];
    }
    std::get<1>(q).emplace_back(name, value);
  }
  return {true, {}, q, k};
}

std::string key_of(spec& s) {
  return share_key(s.request());
}

spec sql_spec(std::vector<std::string> names, std::vector<std::pair<std::string, std::string>> route) {
  spec s;
  s.sql.emplace();
  s.sql->statement = "SELECT secret FROM accounts WHERE tenant = ?1 AND id = ?2";
  s.sql->params = std::move(names);
  for (auto& [name, value] : route) {
    param_settings p;
    p.name = name;
    s.param_specs.push_back(p);
    s.params.push_back(value);
  }
  return s;
}

// A random request from `rng`: HTTP or SQL, each part made of 0 to 2 tricky pieces.
spec random_spec(std::mt19937& rng) {
  const auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  const auto text = [&] {
    std::string out;
    for (std::size_t i = pick(3); i > 0; --i) out += tricky[pick(tricky.size())];
    return out;
  };
  const auto names = [&] {
    std::vector<std::string> out;
    for (std::size_t i = pick(3); i > 0; --i) out.push_back(text());
    return out;
  };
  spec s;
  if (pick(3) == 0) {
    std::vector<std::pair<std::string, std::string>> route;
    for (std::size_t i = pick(4); i > 0; --i) route.emplace_back(text(), text());
    s = sql_spec(names(), std::move(route));
    s.sql->statement = text();
  } else {
    s.method = pick(2) == 0 ? "GET" : text();
    s.target = text();
    s.body = text();
    for (std::size_t i = pick(3); i > 0; --i)
      s.fields.emplace_back(field_names[pick(field_names.size())], text());
  }
  if (pick(2) == 0) s.policy = response_header_policy{names(), names(), pick(2) == 0};
  return s;
}

}  // namespace

TEST_CASE("share key: requests that differ in any one thing sent never share", "[share_key]") {
  // Each dimension of what a call sends, changed alone: every two different values give two keys.
  using mutator = std::function<void(spec&, const std::string&)>;
  std::vector<std::pair<std::string, mutator>> dimensions = {
      {"method", [](spec& s, const std::string& v) { s.method = v; }},
      {"target", [](spec& s, const std::string& v) { s.target = v; }},
      {"body", [](spec& s, const std::string& v) { s.body = v; }},
      {"policy forward",
       [](spec& s, const std::string& v) {
         s.policy = response_header_policy{{v}, {}, false};
       }},
      {"policy set_cookie",
       [](spec& s, const std::string& v) {
         s.policy = response_header_policy{{}, {v}, false};
       }},
      {"policy lists",
       [](spec& s, const std::string& v) {
         s.policy = response_header_policy{{"a", v}, {"b"}, true};
       }},
      {"pass_headers",
       [](spec& s, const std::string& v) {
         s.pass = passed_answer_policy{{401}, {{v}, {}, false}};
       }},
  };
  // Every header field the call sends, the forwarded ones included, one at a time (the others fixed).
  for (const auto& changed : field_names) {
    dimensions.emplace_back(changed, [changed](spec& s, const std::string& v) {
      for (const auto& name : field_names) s.fields.emplace_back(name, name == changed ? v : "x");
    });
  }
  for (const auto& [what, change] : dimensions) {
    for (std::size_t i = 0; i < tricky.size(); ++i) {
      for (std::size_t j = 0; j < tricky.size(); ++j) {
        if (i == j) continue;
        spec a, b;
        change(a, tricky[i]);
        change(b, tricky[j]);
        INFO(what << ": " << i << " vs " << j);
        CHECK(key_of(a) != key_of(b));
      }
    }
  }
  // SQL: a bound value, a bound name, the statement.
  for (std::size_t i = 0; i < tricky.size(); ++i) {
    for (std::size_t j = 0; j < tricky.size(); ++j) {
      if (i == j) continue;
      const auto vi = tricky[i];
      const auto vj = tricky[j];
      INFO("sql " << i << " vs " << j);
      if (!vi.empty() && !vj.empty()) {  // an empty value is bound as NULL, as no value is
        auto a = sql_spec({"tenant", "id"}, {{"tenant", vi}, {"id", "u1"}});
        auto b = sql_spec({"tenant", "id"}, {{"tenant", vj}, {"id", "u1"}});
        CHECK(key_of(a) != key_of(b));
      }
      auto a = sql_spec({"tenant", vi}, {{"tenant", "t1"}, {vi, "u1"}});
      auto b = sql_spec({"tenant", vj}, {{"tenant", "t1"}, {vj, "u1"}});
      CHECK(key_of(a) != key_of(b));
      a = sql_spec({"id"}, {{"id", "u1"}});
      b = sql_spec({"id"}, {{"id", "u1"}});
      a.sql->statement = vi;
      b.sql->statement = vj;
      CHECK(key_of(a) != key_of(b));
    }
  }
  // The statuses a call passes: different lists (or none) never share.
  const std::vector<std::vector<unsigned>> status_lists = {{}, {401}, {403}, {401, 403}, {401, 404}, {4014}};
  for (std::size_t i = 0; i < status_lists.size(); ++i) {
    for (std::size_t j = 0; j < status_lists.size(); ++j) {
      if (i == j) continue;
      spec a, b;
      if (!status_lists[i].empty()) a.pass = passed_answer_policy{status_lists[i], {}};
      if (!status_lists[j].empty()) b.pass = passed_answer_policy{status_lists[j], {}};
      INFO("pass_status " << i << " vs " << j);
      CHECK(key_of(a) != key_of(b));
    }
  }
  // An HTTP call and a SQL call never share.
  spec http;
  auto sql = sql_spec({}, {});
  CHECK(key_of(http) != key_of(sql));
}

TEST_CASE("share key: a SQL call's key is the names its query binds, not the route's parameter order",
          "[share_key]") {
  // The reported leak: route /a declares [tenant, id], route /b [id, tenant]; the same values in the
  // same positions bind different names.
  auto a = sql_spec({"tenant", "id"}, {{"tenant", "t1"}, {"id", "u1"}});
  auto b = sql_spec({"tenant", "id"}, {{"id", "t1"}, {"tenant", "u1"}});
  CHECK(key_of(a) != key_of(b));
  // The same names bound to the same values through either route: one query, one key.
  auto b_same = sql_spec({"tenant", "id"}, {{"id", "u1"}, {"tenant", "t1"}});
  CHECK(key_of(a) == key_of(b_same));
  // A route parameter the query does not bind is not sent: it does not split answers.
  auto extra = sql_spec({"tenant", "id"}, {{"tenant", "t1"}, {"id", "u1"}, {"page", "2"}});
  CHECK(key_of(a) == key_of(extra));
  // A missing value and an empty one are both bound as NULL; a NULL is not the text "".
  auto missing = sql_spec({"tenant", "id"}, {{"tenant", "t1"}});
  auto empty = sql_spec({"tenant", "id"}, {{"tenant", "t1"}, {"id", ""}});
  CHECK(key_of(missing) == key_of(empty));
  CHECK(key_of(missing) != key_of(a));
}

TEST_CASE("share key: the gateway's per-request bookkeeping is not in the key", "[share_key]") {
  spec a;
  a.fields = {{"X-Forwarded-For", "10.0.0.1"}, {"Authorization", "Bearer x"}};
  spec b = a;
  b.request_id = "r-2";
  b.traceparent = "00-11111111111111111111111111111111-2222222222222222-00";
  b.deadline = a.deadline + 250ms;  // another X-Request-Timeout-Ms
  CHECK(key_of(a) == key_of(b));
  b.traceparent.clear();  // none sent
  CHECK(key_of(a) == key_of(b));
  // An empty answer-field policy keeps what no policy keeps.
  b.policy = response_header_policy{};
  CHECK(key_of(a) == key_of(b));
  // Answer-field policies are told apart by their contents, not their addresses (a reload makes new ones).
  a.policy = response_header_policy{{"etag"}, {"session"}, true};
  b.policy = response_header_policy{{"etag"}, {"session"}, true};
  CHECK(key_of(a) == key_of(b));
}

TEST_CASE("share key: generated requests share a key exactly when they send the same thing", "[share_key]") {
  std::mt19937 rng(20240611);
  std::vector<spec> specs;
  for (int i = 0; i < 1500; ++i) specs.push_back(random_spec(rng));
  std::map<std::string, model> seen;  // key -> what was sent
  std::size_t distinct_models = 0;
  std::map<model, std::string> by_model;
  for (auto& s : specs) {
    const auto m = model_of(s);
    const auto key = key_of(s);
    const auto [at, fresh] = seen.emplace(key, m);
    CHECK(at->second == m);  // one key, one thing sent
    const auto [mat, mfresh] = by_model.emplace(m, key);
    CHECK(mat->second == key);  // one thing sent, one key
    if (mfresh) ++distinct_models;
  }
  CHECK(seen.size() == distinct_models);
  CHECK(distinct_models > 1000);  // the generator makes mostly different requests
}
