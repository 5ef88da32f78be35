-- The fixed request of bench/values for wrk (mode wrk-fixed): method, path, headers and body
-- set once, no request() function, so wrk renders the request once and writes the same bytes
-- every time. The same request as loadbench's fixed mode:
--   POST /items/42?n=7   body {"id":1,"n":"a"}
--
--   wrk -t1 -c64 -d5s -s bench/values-fixed.lua http://127.0.0.1:8080/

wrk.method = "POST"
wrk.path = "/items/42?n=7"
wrk.body = '{"id":1,"n":"a"}'
wrk.headers["User-Agent"] = "wrk/4.1.0-bench"
wrk.headers["Accept"] = "*/*"
