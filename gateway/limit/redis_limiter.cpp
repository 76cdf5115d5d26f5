#include "gateway/limit/redis_limiter.hpp"

#include "gateway/tls/tls_client_context.hpp"
#include "gateway/tls/tls_settings.hpp"

#include <hiredis/hiredis.h>
#include <openssl/sha.h>
#include <boost/asio/post.hpp>

#include <cmath>
#include <string_view>

namespace gateway {

namespace net = boost::asio;
using std::chrono::milliseconds;

namespace {

// KEYS[1]: the key. ARGV: emission interval T (us), burst tolerance (b - 1) * T (us), cost.
// Admitted when the new TAT is at most tolerance + T ahead of now; the TAT is stored only then, with a
// time to live that ends when it falls behind now (an absent key is an idle one).
constexpr std::string_view gcra_script = R"lua(
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local new_tat = tat + cost * interval
local limit = tolerance + interval
local allowed = 0
local ahead = tat - now
local retry_after = 0
if new_tat - now <= limit then
  allowed = 1
  ahead = new_tat - now
  if ahead > 0 then
    redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil(ahead / 1000))
  end
else
  retry_after = math.ceil((new_tat - now - limit) / 1000)
end
local remaining = math.floor((limit - ahead) / interval)
if remaining < 0 then remaining = 0 end
return {allowed, remaining, retry_after, math.ceil(ahead / 1000)}
)lua";

std::string sha1_hex(std::string_view text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

bool is_noscript(const redis_result& r) {
  return r.state == redis_status::ok && r.reply->type == REDIS_REPLY_ERROR &&
         std::string_view(r.reply->str, r.reply->len).starts_with("NOSCRIPT");
}

redis_verdict verdict_of(const redis_result& r) {
  redis_verdict v;
  v.state = r.state;
  if (r.state != redis_status::ok) return v;
  const redisReply& a = *r.reply;
  const auto integer = [&a](std::size_t i) { return a.element[i]->integer; };
  if (a.type != REDIS_REPLY_ARRAY || a.elements != 4) {
    v.state = redis_status::unavailable;  // an error reply (OOM, READONLY, BUSY...) or not our script
    return v;
  }
  for (std::size_t i = 0; i < 4; ++i) {
    if (a.element[i]->type != REDIS_REPLY_INTEGER) {
      v.state = redis_status::unavailable;
      return v;
    }
  }
  v.allowed = integer(0) == 1;
  v.remaining = integer(1);
  v.retry_after = milliseconds(integer(2));
  v.reset = milliseconds(integer(3));
  return v;
}

}  // namespace

const std::string& redis_limiter::script() {
  static const std::string text(gcra_script);
  return text;
}

const std::string& redis_limiter::script_sha1() {
  static const std::string sha1 = sha1_hex(gcra_script);
  return sha1;
}

std::unique_ptr<redis_limiter> redis_limiter::make(const std::vector<net::any_io_executor>& threads,
                                                   const redis_settings& settings, std::string& error) {
  std::shared_ptr<const tls_client_context> tls;
  if (settings.tls) {
    tls_settings ts;
    ts.enabled = true;
    ts.verify = settings.verify;
    ts.ca_file = settings.ca_file;
    ts.server_name = settings.server_name;
    tls_client_context::problem why;
    tls = tls_client_context::make(ts, settings.host, why);
    if (!tls) {
      error = why.key + ": " + why.message;
      return nullptr;
    }
  }
  script_sha1();  // computed once, here, not on a request's first admit
  std::unique_ptr<redis_limiter> made(new redis_limiter());
  const std::size_t per_thread = std::max<std::size_t>(settings.connections_per_thread, 1);
  for (const auto& ex : threads) {
    auto& t = made->threads_.emplace_back();
    t.ex = ex;
    for (std::size_t k = 0; k < per_thread; ++k) {
      auto link = std::make_shared<redis_link>(ex, settings, tls);
      t.links.push_back(link);
      net::post(ex, [link] { link->start(); });
    }
  }
  return made;
}

redis_limiter::~redis_limiter() {
  close();
}

void redis_limiter::close() {
  for (auto& t : threads_)
    for (auto& link : t.links) net::post(t.ex, [link] { link->close(); });
}

redis_verdict redis_limiter::admit(std::size_t thread_index, std::string_view key, const gcra_limit& limit,
                                   clock::time_point deadline, net::yield_context yield) {
  if (!(limit.rate_per_second > 0) || !std::isfinite(limit.rate_per_second) || !(limit.burst >= 1) ||
      !std::isfinite(limit.burst) || limit.cost > limit.burst) {
    return {redis_status::ok, false, 0, milliseconds(-1), milliseconds(0)};
  }
  auto& t = threads_[thread_index];
  // Round robin over the thread's links, skipping those that are down (a down link fails at once).
  redis_link* link = t.links[t.next++ % t.links.size()].get();
  for (std::size_t tried = 1; !link->connected() && tried < t.links.size(); ++tried)
    link = t.links[t.next++ % t.links.size()].get();

  const auto interval = std::max<long long>(1, std::llround(1e6 / limit.rate_per_second));
  const auto tolerance = std::llround((limit.burst - 1) * static_cast<double>(interval));
  const std::string interval_arg = std::to_string(interval);
  const std::string tolerance_arg = std::to_string(tolerance);
  const std::string cost_arg = std::to_string(limit.cost);
  auto r =
      link->submit(redis_command({"EVALSHA", script_sha1(), "1", key, interval_arg, tolerance_arg, cost_arg}),
                   deadline, yield);
  // The script cache is empty after a restart or SCRIPT FLUSH: send the script itself (EVAL caches it).
  if (is_noscript(r))
    r = link->submit(redis_command({"EVAL", script(), "1", key, interval_arg, tolerance_arg, cost_arg}),
                     deadline, yield);
  return verdict_of(r);
}

}  // namespace gateway
