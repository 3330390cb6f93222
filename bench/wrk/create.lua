-- wrk script for bench/push-wrk.ts: every request creates a new person, never a merge. Its
-- contact email and phone (matched on the last 10 digits) and its Idempotency-Key are unique in
-- the run: the run id and the burst's number (from the bench, after `--`), this thread's number
-- and a count of its requests. A fifth argument `unkeyed` sends no Idempotency-Key.
--   wrk -t1 -c16 -d5s -s bench/wrk/create.lua http://127.0.0.1:<port>/api/agents/crm/leads -- <token> <customer id> <run id> <burst 0-999> [unkeyed]
-- done() prints one line, `wrk-result {json}`, with the figures the bench reads (latency in
-- microseconds), and `wrk-first-non201 <status> <body>` when any answer was not a 201.

local threads = {}

function setup(thread)
  thread:set("thread_number", #threads)
  table.insert(threads, thread)
end

local run, burst, headers, keyed
local sent = 0

function init(args)
  run, burst = args[3], tonumber(args[4])
  keyed = args[5] ~= "unkeyed"
  headers = {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. args[1],
    ["X-Customer-Id"] = args[2],
  }
  non201 = 0
  first_non201 = nil
end

function request()
  sent = sent + 1
  local id = string.format("%s-%d-%d-%d", run, burst, thread_number, sent)
  if keyed then headers["Idempotency-Key"] = id end
  local body = string.format(
    '{"contact_name":"Wrk %s","contact_email":"wrk-%s@example.org","contact_phone":"+1 %03d-%d%06d"}',
    id, id, burst, thread_number, sent
  )
  return wrk.format("POST", nil, headers, body)
end

function response(status, _, body)
  if status ~= 201 then
    non201 = non201 + 1
    first_non201 = first_non201 or (status .. " " .. string.sub(body or "", 1, 300))
  end
end

function done(summary, latency)
  local count, first = 0, nil
  for _, thread in ipairs(threads) do
    count = count + thread:get("non201")
    first = first or thread:get("first_non201")
  end
  local errors = summary.errors
  io.write(string.format(
    'wrk-result {"requests":%d,"duration_us":%d,"non201":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},'
      .. '"latency_us":{"p50":%d,"p99":%d,"mean":%.1f,"max":%d}}\n',
    summary.requests, summary.duration, count,
    errors.connect, errors.read, errors.write, errors.status, errors.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean, latency.max
  ))
  if first then
    io.write("wrk-first-non201 " .. string.gsub(first, "[\r\n]", " ") .. "\n")
  end
end
