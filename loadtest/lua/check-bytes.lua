-- wrk script for pass-through (proxy) routes: the same fixed request every time (the URL's path), and the
-- answers checked against CHECK_BYTES, the size of the body every answer must carry.
--
-- Bodies of up to 64 KiB are checked one by one (status 200 and exactly CHECK_BYTES bytes). Above that the
-- script defines no response() callback, so that wrk does not collect each body for Lua (at 1000
-- connections and 1 MiB that would be 1 GB of wrk buffers and a copy per answer): a 4xx or 5xx answer is
-- then counted by wrk itself (its status errors), a body cut short ends its connection with a read error,
-- and the bytes read must reach requests x CHECK_BYTES: bad answers are the larger of the status errors
-- and the bodies missing from the bytes read (rounded up), both lower bounds.
--
-- At the end it prints the same three lines as check-offers.lua (latencies in milliseconds):
--   check: answers=N good=N bad=N non200=N degraded=0
--   wrk: requests=N duration_us=N connect=N read=N write=N timeout=N status=N
--   latency_ms: p50=X p90=X p99=X p999=X max=X
-- then "bytes: total=N per_answer=X" (heads included, and the answers in flight when wrk stopped), and,
-- when CHECK_LATENCY_FILE is set, writes "percentile milliseconds" lines to that file for plotting.
--
-- Environment: CHECK_BYTES (required), CHECK_LATENCY_FILE (optional).

-- The shared latency writer, next to this script.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local latency_file = require("latency_file")

local expected = tonumber(os.getenv("CHECK_BYTES") or "")
if not expected then
  error("check-bytes.lua: set CHECK_BYTES to the expected body size")
end
local per_answer = expected <= 65536

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  answers, good, bad, non200 = 0, 0, 0, 0
end

if per_answer then
  function response(status, headers, body)
    answers = answers + 1
    if status ~= 200 then
      non200 = non200 + 1
      bad = bad + 1
    elseif #body ~= expected then
      bad = bad + 1
    else
      good = good + 1
    end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local total = { answers = 0, good = 0, bad = 0, non200 = 0 }
  if per_answer then
    for name in pairs(total) do
      for _, t in ipairs(threads) do
        total[name] = total[name] + t:get(name)
      end
    end
  else
    -- wrk counts a 4xx or 5xx answer as a status error; any other answer short of the body (a 3xx, say)
    -- shows in the bytes.
    local short = summary.requests * expected - summary.bytes
    total.answers = summary.requests
    total.non200 = e.status
    total.bad = math.min(summary.requests, math.max(e.status, math.ceil(math.max(short, 0) / expected)))
    total.good = summary.requests - total.bad
  end
  io.write(string.format("check: answers=%d good=%d bad=%d non200=%d degraded=0\n",
    total.answers, total.good, total.bad, total.non200))
  io.write(string.format("wrk: requests=%d duration_us=%d connect=%d read=%d write=%d timeout=%d status=%d\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status))
  io.write(string.format("latency_ms: p50=%.3f p90=%.3f p99=%.3f p999=%.3f max=%.3f\n",
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000))
  io.write(string.format("bytes: total=%d per_answer=%.1f\n", summary.bytes,
    summary.requests > 0 and summary.bytes / summary.requests or 0))
  local path = os.getenv("CHECK_LATENCY_FILE")
  if path and path ~= "" then latency_file.write(path, latency, "check-bytes.lua") end
end
