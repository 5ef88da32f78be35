-- Per-request values for wrk (used by bench/values, mode wrk-lua): every request is built in
-- request() with wrk.format, with a random id in the path, a random pick of a, b or c in the
-- query, and a counter in the JSON body, the same three values as loadbench's template
--   POST /items/{{int(1,100000)}}?n={{pick(a,b,c)}}   body {"id":{{seq}},"n":"a"}
-- The headers match loadbench's (Host and Content-Length from wrk.format, plus User-Agent and
-- Accept), so both write requests of the same size.
--
--   wrk -t1 -c64 -d5s -s bench/values.lua http://127.0.0.1:8080/

local picks = { "a", "b", "c" }
local counter = 0
local headers = { ["User-Agent"] = "wrk/4.1.0-bench", ["Accept"] = "*/*" }

function init(args)
    math.randomseed(os.time())
end

function request()
    counter = counter + 1
    local path = "/items/" .. math.random(1, 100000) .. "?n=" .. picks[math.random(1, 3)]
    local body = '{"id":' .. counter .. ',"n":"a"}'
    return wrk.format("POST", path, headers, body)
end
