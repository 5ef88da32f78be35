-- bench/wrk-scripts (scripts random-path): request() builds every request with wrk.format, a
-- random id and a counter in the path, so both generators call Lua once per request.
--
--   wrk -t1 -c64 -d5s -s bench/wrk-scripts/random-path.lua http://127.0.0.1:8080/
--   loadbench run -t 1 -c 64 -d 5s -s bench/wrk-scripts/random-path.lua http://127.0.0.1:8080/

local counter = 0
local headers = { ["Accept"] = "*/*" }

function init(args)
    math.randomseed(os.time())
end

function request()
    counter = counter + 1
    return wrk.format("GET", "/items/" .. math.random(1, 100000) .. "?n=" .. counter, headers)
end
