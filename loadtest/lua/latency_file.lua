-- Writes wrk's latency distribution as "percentile milliseconds" lines, for loadtest/plot.gp. Shared by
-- the check scripts (each loads it with require, from its own directory).
local M = {}

function M.write(path, latency, script)
  local file = io.open(path, "w")
  if not file then
    io.stderr:write(script .. ": cannot write " .. path .. "\n")
    return
  end
  file:write("# percentile milliseconds\n")
  file:write(string.format("0 %.3f\n", latency.min / 1000))
  for p = 1, 99 do
    file:write(string.format("%d %.3f\n", p, latency:percentile(p) / 1000))
  end
  for _, p in ipairs({ 99.5, 99.9, 99.95, 99.99 }) do
    file:write(string.format("%g %.3f\n", p, latency:percentile(p) / 1000))
  end
  file:close()
end

return M
