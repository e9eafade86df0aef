-- POSTs of form bodies: each request sends a body picked at random from a file, one body a line, already
-- form-encoded (one line for a fixed request). Headers (content type, API key) come from wrk's -H.
--   wrk -t2 -c64 -d4s -H 'Content-Type: application/x-www-form-urlencoded' -s scripts/bench/post.lua URL -- BODIES_FILE
local bodies = {}

function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then bodies[#bodies + 1] = line end
  end
  if #bodies == 0 then error("post.lua: no bodies in " .. tostring(args[1])) end
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 1000003)
end

function request()
  return wrk.format("POST", nil, nil, bodies[math.random(#bodies)])
end
