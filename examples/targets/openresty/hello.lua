-- content_by_lua_file target of examples/openresty.toml (seed 001's /lua-file): only ngx.say.
ngx.say("ok")
