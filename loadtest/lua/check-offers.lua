-- wrk script for aggregate routes: every request asks for another SKU (A1..A<CHECK_SKUS>, round-robin,
-- each wrk thread starting elsewhere) and every answer is checked: status 200 and a JSON array of
-- CHECK_ENTRIES entries (counted by their "source": keys). An answer that passes is degraded when any
-- entry carries "degraded":true, good otherwise; one that fails is bad.
--
-- At the end it prints three machine-readable lines (latencies in milliseconds):
--   check: answers=N good=N bad=N non200=N degraded=N
--   wrk: requests=N duration_us=N connect=N read=N write=N timeout=N status=N
--   latency_ms: p50=X p90=X p99=X p999=X max=X
-- and, when CHECK_LATENCY_FILE is set, writes "percentile milliseconds" lines to that file for plotting.
--
-- Environment: CHECK_ENTRIES (default 6), CHECK_SKUS (default 10000), CHECK_LATENCY_FILE (optional),
-- CHECK_TOKENS_FILE (optional: tokens, one a line; each request sends the next as "Authorization: Bearer",
-- round-robin, each thread starting elsewhere), CHECK_TAG_HEADER and CHECK_TAG_VALUES (optional: each
-- request sends that header with the next of the values tag-1..tag-N, round-robin).

-- The shared latency writer, next to this script.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local latency_file = require("latency_file")

local threads = {}
local counters = { "answers", "good", "bad", "non200", "degraded" }

function setup(thread)
  thread:set("thread_index", #threads)
  table.insert(threads, thread)
end

function init(args)
  answers, good, bad, non200, degraded = 0, 0, 0, 0, 0
  entries = tonumber(os.getenv("CHECK_ENTRIES") or "6")
  skus = tonumber(os.getenv("CHECK_SKUS") or "10000")
  next_sku = (thread_index * 7919) % skus
  prefix = wrk.path .. (string.find(wrk.path, "?", 1, true) and "&sku=A" or "?sku=A")
  tokens = {}
  local tokens_file = os.getenv("CHECK_TOKENS_FILE") or ""
  if tokens_file ~= "" then
    for line in io.lines(tokens_file) do
      if line ~= "" then tokens[#tokens + 1] = "Bearer " .. line end
    end
    assert(#tokens > 0, "no token in " .. tokens_file)
  end
  next_token = (thread_index * 7919) % math.max(#tokens, 1)
  tag_header = os.getenv("CHECK_TAG_HEADER") or ""
  tag_values = tonumber(os.getenv("CHECK_TAG_VALUES") or "1")
  next_tag = thread_index % tag_values
  headers = {}
end

function request()
  next_sku = next_sku % skus + 1
  if #tokens == 0 and tag_header == "" then return wrk.format("GET", prefix .. next_sku) end
  if #tokens > 0 then
    next_token = next_token % #tokens + 1
    headers["Authorization"] = tokens[next_token]
  end
  if tag_header ~= "" then
    next_tag = next_tag % tag_values + 1
    headers[tag_header] = "tag-" .. next_tag
  end
  return wrk.format("GET", prefix .. next_sku, headers)
end

local function count(text, needle)
  local n, from = 0, 1
  while true do
    local _, last = string.find(text, needle, from, true)
    if not last then return n end
    n = n + 1
    from = last + 1
  end
end

function response(status, headers, body)
  answers = answers + 1
  if status ~= 200 then
    non200 = non200 + 1
    bad = bad + 1
  elseif string.byte(body, 1) ~= 91 or string.byte(body, -1) ~= 93 or count(body, '"source":') ~= entries then
    bad = bad + 1 -- not "[...]" or not the expected number of entries
  elseif string.find(body, '"degraded":true', 1, true) then
    degraded = degraded + 1
  else
    good = good + 1
  end
end

function done(summary, latency, requests)
  local total = {}
  for _, name in ipairs(counters) do
    total[name] = 0
    for _, t in ipairs(threads) do
      total[name] = total[name] + t:get(name)
    end
  end
  local e = summary.errors
  io.write(string.format("check: answers=%d good=%d bad=%d non200=%d degraded=%d\n",
    total.answers, total.good, total.bad, total.non200, total.degraded))
  io.write(string.format("wrk: requests=%d duration_us=%d connect=%d read=%d write=%d timeout=%d status=%d\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status))
  io.write(string.format("latency_ms: p50=%.3f p90=%.3f p99=%.3f p999=%.3f max=%.3f\n",
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000))
  local path = os.getenv("CHECK_LATENCY_FILE")
  if path and path ~= "" then latency_file.write(path, latency, "check-offers.lua") end
end
