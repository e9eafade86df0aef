-- Redirect traffic spread over many links: each request GETs /<code> for a code picked at random from a
-- file of codes, one a line. Every wrk thread reads the file and seeds its own generator.
--   wrk -t2 -c64 -d4s -H 'User-Agent: …' -s scripts/bench/random-code.lua http://HOST:PORT -- CODES_FILE
local codes = {}

function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then codes[#codes + 1] = "/" .. line end
  end
  if #codes == 0 then error("random-code.lua: no codes in " .. tostring(args[1])) end
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 1000003)
end

function request()
  return wrk.format("GET", codes[math.random(#codes)])
end
