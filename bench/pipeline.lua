-- HTTP/1.1 pipelining for wrk, the classic way (used by bench/pipeline-vs-wrk): `init` renders
-- the request DEPTH times into one string, and `request` hands wrk that whole batch, so each
-- connection writes DEPTH requests at once and wrk counts every response.
--
--   wrk -t1 -c16 -d10s -s bench/pipeline.lua http://127.0.0.1:8080/ -- 16

local batch

function init(args)
    local depth = tonumber(args[1]) or 16
    local requests = {}
    for i = 1, depth do
        requests[i] = wrk.format()
    end
    batch = table.concat(requests)
end

function request()
    return batch
end
