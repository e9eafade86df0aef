-- GETs of one path from many client addresses: the public statistics page allows 60 views a minute per
-- address, so every 50 requests of a thread come from a new X-Forwarded-For address (the server trusts
-- 127.0.0.1 as its proxy in this bench).
--   wrk -t1 -c1 -d4s -s scripts/bench/forwarded.lua http://HOST:PORT/CODE+
local thread_no = 0
local n = 0

function setup(thread)
  thread_no = thread_no + 1
  thread:set("tid", thread_no)
end

function request()
  n = n + 1
  local a = (tid or 0) * 65536 + math.floor(n / 50)
  local ip = "10." .. (math.floor(a / 65536) % 256) .. "." .. (math.floor(a / 256) % 256) .. "." .. (a % 256)
  return wrk.format("GET", nil, { ["X-Forwarded-For"] = ip })
end
