-- wrk script: counts answers that are not 200 or carry a degraded entry, and prints them at the end.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  bad_status = 0
  degraded = 0
  answers = 0
end

function response(status, headers, body)
  answers = answers + 1
  if status ~= 200 then
    bad_status = bad_status + 1
  elseif string.find(body, '"degraded":true', 1, true) then
    degraded = degraded + 1
  end
end

function done(summary, latency, requests)
  local a, b, d = 0, 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("answers")
    b = b + t:get("bad_status")
    d = d + t:get("degraded")
  end
  io.write(string.format("answers: %d, non-200: %d, degraded: %d\n", a, b, d))
end
