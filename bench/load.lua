-- wrk script for the a2a_flask benchmark (see bench/README.md).
--
--   wrk -t2 -c16 -d10s -s bench/load.lua URL -- MODE POOLFILE AUTH MAXREQ NONCE [PROTO]
--
-- MODE     "send": message/send with a unique messageId per request
--          "get":  tasks/get round-robin over the task ids in POOLFILE
-- POOLFILE one task id per line ("-" for send)
-- AUTH     value of the Authorization header, "-" for none
-- MAXREQ   stop a thread after this many requests (0: no limit)
-- NONCE    makes messageIds unique across runs
-- PROTO    "0.3" (default) or "1.0": SendMessage/GetTask with the header
--          A2A-Version: 1.0, and state TASK_STATE_COMPLETED
--
-- Every answer is checked, not only its status: HTTP 200, no JSON-RPC
-- "error" member, result state "completed", and for tasks/get the
-- JSON-RPC id (the pool index) must come back with the asked task id.
-- done() prints one line "BENCH_RESULT {json}" for bench/run.py.

local threads = {}

function setup(thread)
   threads[#threads + 1] = thread
   thread:set("tid", #threads)
end

-- thread globals (read back by done() through thread:get)
responses = 0
errors = 0
first_err = ""

local mode, max_req, nonce, proto, done_pat
local pool, pool_pat, pool_n, idx = {}, {}, 0, 0
local sent = 0

local function escape(s)
   return (s:gsub("%p", "%%%0"))
end

function init(args)
   mode = args[1] or "send"
   local poolfile = args[2] or "-"
   local auth = args[3] or "-"
   max_req = tonumber(args[4] or "0") or 0
   nonce = args[5] or "x"
   proto = args[6] or "0.3"
   done_pat = '"state"%s*:%s*"completed"'
   if proto == "1.0" then
      wrk.headers["A2A-Version"] = "1.0"
      done_pat = '"state"%s*:%s*"TASK_STATE_COMPLETED"'
   end
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
   if auth ~= "-" then
      wrk.headers["Authorization"] = auth
   end
   if mode == "get" then
      for line in io.lines(poolfile) do
         if #line > 0 then
            pool[#pool + 1] = line
            pool_pat[#pool] = '"id"%s*:%s*"' .. escape(line) .. '"'
         end
      end
      pool_n = #pool
      idx = ((tid - 1) * 37) % pool_n
   end
end

function request()
   sent = sent + 1
   if max_req > 0 and sent > max_req then
      wrk.thread:stop()
   end
   local body
   if mode == "get" then
      idx = idx % pool_n + 1
      local method = proto == "1.0" and "GetTask" or "tasks/get"
      body = '{"jsonrpc":"2.0","id":' .. idx .. ',"method":"' .. method .. '","params":{"id":"' .. pool[idx] .. '"}}'
   elseif proto == "1.0" then
      body = '{"jsonrpc":"2.0","id":' .. sent .. ',"method":"SendMessage","params":{"message":'
         .. '{"role":"ROLE_USER","messageId":"wrk-' .. nonce .. '-' .. tid .. '-' .. sent
         .. '","parts":[{"text":"hello"}]}}}'
   else
      body = '{"jsonrpc":"2.0","id":' .. sent .. ',"method":"message/send","params":{"message":'
         .. '{"kind":"message","role":"user","messageId":"wrk-' .. nonce .. '-' .. tid .. '-' .. sent
         .. '","parts":[{"kind":"text","text":"hello"}]}}}'
   end
   return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
   responses = responses + 1
   local ok = status == 200 and body ~= nil
      and body:find('"error"%s*:') == nil
      and body:find(done_pat) ~= nil
   if ok and mode == "get" then
      local k = tonumber(body:match('"id"%s*:%s*(%d+)'))
      ok = k ~= nil and pool_pat[k] ~= nil and body:find(pool_pat[k]) ~= nil
   end
   if not ok then
      errors = errors + 1
      if first_err == "" then
         first_err = tostring(status) .. " " .. string.sub(body or "", 1, 400)
      end
   end
end

function done(summary, latency, requests)
   local resp, errs, first = 0, 0, ""
   for _, t in ipairs(threads) do
      resp = resp + t:get("responses")
      errs = errs + t:get("errors")
      local f = t:get("first_err")
      if first == "" and f ~= nil then first = f end
   end
   local e = summary.errors
   io.write(string.format(
      'BENCH_RESULT {"requests":%d,"checked":%d,"duration_us":%d,"mean_us":%.1f,'
      .. '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"body_errors":%d,'
      .. '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,"status_errors":%d}\n',
      summary.requests, resp, summary.duration, latency.mean,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, errs,
      e.connect, e.read, e.write, e.timeout, e.status))
   if first ~= "" then
      io.write("BENCH_FIRST_ERROR " .. first:gsub("\n", " ") .. "\n")
   end
end
