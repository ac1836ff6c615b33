-- wrk script: POSTs one AdmissionReview per request (keep-alive) and checks every answer.
--   wrk ... -s review.lua https://HOST:PORT/validate -- REVIEW_FILE UID
-- An answer counts as bad unless it is HTTP 200 and its body carries the request's uid and
-- "allowed":true. done() prints one line "BENCH {json}" for tests/bench/run.py.
local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   local f = assert(io.open(args[1], "rb"))
   local body = f:read("*a")
   f:close()
   uid = args[2]
   bad = 0
   answers = 0
   wrk.method = "POST"
   wrk.body = body
   wrk.headers["Content-Type"] = "application/json"
end

function response(status, headers, body)
   answers = answers + 1
   if status ~= 200 or not body:find(uid, 1, true) or not body:find('"allowed":true', 1, true) then
      bad = bad + 1
   end
end

function done(summary, latency, requests)
   local nbad, nanswers = 0, 0
   for _, t in ipairs(threads) do
      nbad = nbad + t:get("bad")
      nanswers = nanswers + t:get("answers")
   end
   local e = summary.errors
   io.write(string.format(
      'BENCH {"requests":%d,"duration_us":%d,"answers":%d,"bad":%d,"errors":%d,' ..
      '"p50_us":%d,"p99_us":%d}\n',
      summary.requests, summary.duration, nanswers, nbad,
      e.connect + e.read + e.write + e.status + e.timeout,
      latency:percentile(50), latency:percentile(99)))
end
