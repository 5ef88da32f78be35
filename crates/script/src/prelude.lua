-- loadbench's wrk table: the Lua side of docs/coming-from.md, "wrk scripts". Rust sets
-- scheme, host, port, path, method, headers and body before this runs, and adds lookup,
-- connect and thread.
local wrk = ...

-- The request line, the headers and the body as one HTTP/1.1 request. Arguments left out
-- come from the wrk table; Host defaults to the one init settled, Content-Length follows
-- the body.
function wrk.format(method, path, headers, body)
  method = method or wrk.method
  path = path or wrk.path
  headers = headers or wrk.headers
  body = body or wrk.body
  local out = { method .. " " .. path .. " HTTP/1.1" }
  local host
  for name, value in pairs(headers) do
    local lower = string.lower(name)
    if lower == "host" then
      host = value
    elseif lower ~= "content-length" then
      out[#out + 1] = name .. ": " .. tostring(value)
    end
  end
  host = host or wrk.headers["Host"] or wrk.authority()
  table.insert(out, 2, "Host: " .. host)
  if body then
    out[#out + 1] = "Content-Length: " .. #body
  end
  out[#out + 1] = ""
  out[#out + 1] = body or ""
  return table.concat(out, "\r\n")
end

-- host, or [host] for an IPv6 address, with :port when the URL gave one.
function wrk.authority()
  local host = wrk.host
  if string.find(host, ":", 1, true) then
    host = "[" .. host .. "]"
  end
  if wrk.port then
    host = host .. ":" .. wrk.port
  end
  return host
end

-- Before init: the request as the table stands now. After init: the one formatted then.
function wrk.request()
  return wrk.format()
end

-- Called by Rust after the script's own init(args): the Host header settles and the
-- default request is formatted once.
function wrk.settle(args)
  local has_host = false
  for name in pairs(wrk.headers) do
    if string.lower(name) == "host" then
      has_host = true
    end
  end
  if not has_host then
    wrk.headers["Host"] = wrk.authority()
  end
  if type(init) == "function" then
    init(args)
  end
  local request = wrk.format()
  wrk.request = function()
    return request
  end
  return request
end

return wrk
