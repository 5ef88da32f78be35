-- bench/wrk-scripts (script fixed): only wrk's fields, set once, no request(): wrk formats
-- the request once per thread and so does loadbench, which then runs no Lua per request.
--
--   wrk -t1 -c64 -d5s -s bench/wrk-scripts/fixed.lua http://127.0.0.1:8080/
--   loadbench run -t 1 -c 64 -d 5s -s bench/wrk-scripts/fixed.lua http://127.0.0.1:8080/

wrk.method = "POST"
wrk.path = "/items/42?n=7"
wrk.body = '{"id":1,"n":"a"}'
wrk.headers["Accept"] = "*/*"
wrk.headers["Content-Type"] = "application/json"
