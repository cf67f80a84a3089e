// The retry rules and typed errors, with a scripted fetch and an injected clock and sleep (no
// server, no real waiting): the Python client's rules, case by case.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  APIConnectionError,
  APITimeoutError,
  BadGateway,
  ConfigurationError,
  CursorExpired,
  GatewayTimeout,
  HangarClient,
  type HangarClientError,
  HangarError,
  InsufficientScope,
  InvalidAPIKey,
  InvalidCursor,
  InvalidPayload,
  RateLimited,
  type Retrying,
  ServerError,
  ServiceUnavailable,
  Unauthorized,
  UnknownEvent,
  ValidationFailed,
  calendarUrl,
} from "../src/index.js";

const KEY = `svc_pk_${"a".repeat(43)}`;
const BASE = "https://hangar.example";
// 10:00:30 UTC: the minute's bucket opens in 30 s, the hour's in 59 min 30 s.
const NOW = new Date("2026-05-04T10:00:30Z");

type Step = Response | Error;

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", ...headers },
  });
}

/** A client whose fetch answers `steps` in turn, recording the requests, the waits and the
 * retries it heard of. */
function scripted(steps: Step[], options: ConstructorParameters<typeof HangarClient>[2] = {}) {
  const requests: Request[] = [];
  const waits: number[] = [];
  const retries: Retrying[] = [];
  const client = new HangarClient(BASE, KEY, {
    now: () => NOW,
    random: () => 0,
    sleep: async (ms) => {
      waits.push(ms);
    },
    onRetry: (retrying) => retries.push(retrying),
    fetch: async (input) => {
      requests.push(input);
      const step = steps.shift();
      assert.ok(step, "more requests than the test scripted");
      if (step instanceof Error) {
        throw step;
      }
      return step;
    },
    ...options,
  });
  return { client, requests, waits, retries };
}

async function failure(promise: Promise<unknown>): Promise<HangarClientError> {
  try {
    await promise;
  } catch (error) {
    return error as HangarClientError;
  }
  assert.fail("expected an error");
}

const refused = (): Error =>
  Object.assign(new TypeError("fetch failed"), {
    cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
  });

describe("retries", () => {
  for (const status of [502, 503, 504]) {
    test(`${status} is retried with backoff, then answered`, async () => {
      const { client, waits, retries } = scripted([
        json(status, { detail: "busy", code: "SERVICE_UNAVAILABLE" }),
        json(status, { detail: "busy", code: "SERVICE_UNAVAILABLE" }),
        json(200, []),
      ]);
      assert.deepEqual(await client.aircraft(), []);
      // Equal jitter with random() = 0: half of 500 ms, then half of 1 s.
      assert.deepEqual(waits, [250, 500]);
      assert.deepEqual(
        retries.map((r) => [r.attempt, r.waitMs, r.error instanceof ServerError]),
        [
          [1, 250, true],
          [2, 500, true],
        ],
      );
    });
  }

  test("after max_retries (2) more attempts, the status's error is thrown", async () => {
    const page = "<html><body>502 Bad Gateway</body></html>";
    const html = () =>
      new Response(page, { status: 502, statusText: "Bad Gateway", headers: { "Content-Type": "text/html" } });
    const { client, requests } = scripted([html(), html(), html()]);
    const error = await failure(client.members());
    assert.equal(requests.length, 3);
    assert.ok(error instanceof BadGateway);
    assert.equal(error.code, "HTTP_502");
    assert.match(error.detail, /^Bad Gateway \(text\/html content, not hangar's JSON error/);
    assert.equal(await error.response?.text(), page); // the proxy's page, still readable
  });

  test("Retry-After is honoured when longer, within the cap", async () => {
    const { client, waits } = scripted([
      json(503, { detail: "d", code: "SERVICE_UNAVAILABLE" }, { "Retry-After": "3" }),
      json(503, { detail: "d", code: "SERVICE_UNAVAILABLE" }, { "Retry-After": "120" }),
      json(200, []),
    ]);
    await client.workOrders();
    assert.deepEqual(waits, [3_000, 8_000]);
  });

  test("maxRetries and withOptions bound the attempts", async () => {
    const { client, requests } = scripted(
      [json(503, { detail: "d", code: "SERVICE_UNAVAILABLE" })],
      { maxRetries: 0 },
    );
    assert.ok((await failure(client.aircraft())) instanceof ServiceUnavailable);
    assert.equal(requests.length, 1);
    const more = scripted([
      json(504, {}),
      json(504, {}),
      json(504, {}),
      json(504, {}),
      json(200, []),
    ]);
    await more.client.withOptions({ maxRetries: 4 }).aircraft();
    assert.equal(more.requests.length, 5);
  });

  test("a connection refused is retried, then APIConnectionError with its cause", async () => {
    const { client, requests } = scripted([refused(), refused(), refused()]);
    const error = await failure(client.squawks());
    assert.equal(requests.length, 3);
    assert.ok(error instanceof APIConnectionError && !(error instanceof APITimeoutError));
    assert.match(error.message, /could not GET \/api\/v1\/external\/squawks .*ECONNREFUSED/);
    assert.ok(error.cause instanceof TypeError);
  });

  test("no answer in time is APITimeoutError, retried like a refusal", async () => {
    const late = () => new DOMException("The operation was aborted due to timeout", "TimeoutError");
    const { client, requests } = scripted([late(), json(200, [])]);
    assert.deepEqual(await client.aircraft(), []);
    assert.equal(requests.length, 2);
    const again = scripted([late(), late(), late()]);
    assert.ok((await failure(again.client.aircraft())) instanceof APITimeoutError);
  });

  test("a real timeout: a fetch that never answers is cut at timeoutMs", async () => {
    const client = new HangarClient(BASE, KEY, {
      timeoutMs: 20,
      maxRetries: 0,
      fetch: (_input, init) =>
        new Promise((_resolve, reject) => {
          init?.signal?.addEventListener("abort", () => reject(init.signal?.reason));
        }),
    });
    // AbortSignal.timeout's timer does not hold the event loop open, and this fetch has no
    // socket that would: without a timer of its own Node may end the run before it fires.
    const held = setTimeout(() => undefined, 5_000);
    try {
      assert.ok((await failure(client.aircraft())) instanceof APITimeoutError);
    } finally {
      clearTimeout(held);
    }
  });

  test("500 and other 4xx are never retried", async () => {
    for (const [status, code, kind] of [
      [500, "INTERNAL_ERROR", ServerError],
      [401, "UNAUTHORIZED", Unauthorized],
      [403, "INSUFFICIENT_SCOPE", InsufficientScope],
      [400, "INVALID_CURSOR", InvalidCursor],
      [410, "CURSOR_EXPIRED", CursorExpired],
      [422, "VALIDATION_ERROR", ValidationFailed],
      [422, "UNKNOWN_EVENT", UnknownEvent],
      [404, "NOT_FOUND", HangarError],
    ] as const) {
      const { client, requests } = scripted([json(status, { detail: "no", code })]);
      const error = await failure(client.aircraft());
      assert.equal(requests.length, 1, `${status} ${code}`);
      assert.ok(error instanceof kind, `${status} ${code}: ${error}`);
      assert.equal((error as HangarError).status, status);
      assert.equal((error as HangarError).code, code);
    }
    const unknown = await failure(scripted([json(422, { detail: "x", code: "UNKNOWN_EVENT" })]).client.aircraft());
    assert.ok(unknown instanceof ValidationFailed); // one check catches every 422
  });

  test("a 429 waits until its minute opens, plus jitter", async () => {
    const { client, waits, retries } = scripted(
      [json(429, { detail: "Rate limit exceeded: 60/min", code: "RATE_LIMITED" }), json(200, [])],
      { random: () => 0.5 },
    );
    await client.aircraft();
    assert.deepEqual(waits, [30_000 + 500]);
    const error = retries[0]?.error;
    assert.ok(error instanceof RateLimited);
    assert.equal(error.bucket, "minute");
    assert.deepEqual(error.resetsAt, new Date("2026-05-04T10:01:00Z"));
  });

  test("a 429 of the hour is over maxRateLimitWaitMs: thrown at once", async () => {
    const { client, waits } = scripted([
      json(429, { detail: "Rate limit exceeded: 1000/hour", code: "RATE_LIMITED" }),
    ]);
    const error = await failure(client.aircraft());
    assert.ok(error instanceof RateLimited);
    assert.equal(error.bucket, "hour");
    assert.deepEqual(error.resetsAt, new Date("2026-05-04T11:00:00Z"));
    assert.deepEqual(waits, []);
  });

  test("429s are retried at most maxRateLimitRetries (3) times", async () => {
    const limited = () => json(429, { detail: "60/min", code: "RATE_LIMITED" });
    const { client, requests } = scripted([limited(), limited(), limited(), limited()]);
    assert.ok((await failure(client.aircraft())) instanceof RateLimited);
    assert.equal(requests.length, 4);
  });

  test("a proxy's 429 waits its Retry-After, else backs off", async () => {
    const { client, waits } = scripted([
      new Response("slow down", { status: 429, headers: { "Retry-After": "7" } }),
      new Response("slow down", { status: 429 }),
      json(200, []),
    ]);
    await client.aircraft();
    assert.deepEqual(waits, [7_000, 500]); // the second: backoff's second step, halved
  });
});

describe("answers and configuration", () => {
  test("a 200 that is not the API's JSON is InvalidPayload", async () => {
    const portal = new Response("<html>Sign in to the Wi-Fi</html>", {
      status: 200,
      headers: { "Content-Type": "text/html", "Content-Length": "33" },
    });
    const error = await failure(scripted([portal]).client.aircraft());
    assert.ok(error instanceof InvalidPayload, String(error));
    const wrongShape = await failure(scripted([json(200, { items: [] })]).client.aircraft());
    assert.ok(wrongShape instanceof InvalidPayload);
  });

  test("requests: the key as a bearer token, the User-Agent, the filters as query", async () => {
    const { client, requests } = scripted([
      json(200, { items: [], next_cursor: null }),
      json(200, { items: [], next_cursor: "c" }),
      new Response("BEGIN:VCALENDAR", { status: 200, headers: { "Content-Type": "text/calendar" } }),
    ]);
    await client.reservationsPage({ status: "cancelled", start_after: new Date("2026-05-01T00:00:00Z") });
    await client.events.list({ event: ["squawk.created", "mel.expired"], after: "x" });
    assert.equal(await client.calendar(), "BEGIN:VCALENDAR");
    const [first, second, feed] = requests;
    assert.equal(first?.headers.get("Authorization"), `Bearer ${KEY}`);
    assert.match(first?.headers.get("User-Agent") ?? "", /^hangar-client-typescript\/1\.0\.0$/);
    const query = new URL(first?.url ?? "").searchParams;
    assert.equal(query.get("status"), "cancelled");
    assert.equal(query.get("start_after"), "2026-05-01T00:00:00.000Z");
    assert.equal(query.get("limit"), "100");
    assert.deepEqual(new URL(second?.url ?? "").searchParams.getAll("event"), [
      "squawk.created",
      "mel.expired",
    ]);
    // The feed: the key in ?token= (as calendar apps send it), no Authorization header.
    assert.equal(new URL(feed?.url ?? "").searchParams.get("token"), KEY);
    assert.equal(feed?.headers.get("Authorization"), null);
  });

  test("a misspelt filter from plain JavaScript is a TypeError, not an unfiltered list", async () => {
    const { client } = scripted([]);
    await assert.rejects(
      client.squawks({ aircraftId: "x" } as never),
      (error: unknown) => error instanceof TypeError && /unexpected filter "aircraftId"/.test(String(error)),
    );
  });

  test("keys and base URLs that cannot work are refused before anything is sent", () => {
    for (const key of ["", "  ", ` ${KEY}`, "whsec_abc", `svc_pk_${"a".repeat(42)}`, `svc_pk_${"a".repeat(42)}!`]) {
      assert.throws(() => new HangarClient(BASE, key), InvalidAPIKey, JSON.stringify(key));
    }
    assert.throws(() => new HangarClient(BASE, `svc_pk_${"s3cr3t".repeat(7)}xyz`), (error: unknown) => {
      assert.ok(error instanceof InvalidAPIKey);
      assert.ok(!String(error).includes("s3cr3t"), "the message shows no key");
      return true;
    });
    for (const base of ["ftp://hangar.example", "hangar.example", "http://"]) {
      assert.throws(() => new HangarClient(base, KEY), ConfigurationError, base);
    }
    assert.ok(new InvalidAPIKey("x") instanceof ConfigurationError);
  });

  test("calendarUrl carries the key in ?token=, webcal if asked", () => {
    assert.equal(
      calendarUrl("https://hangar.example/", KEY),
      `https://hangar.example/api/v1/external/reservations.ics?token=${KEY}`,
    );
    assert.match(calendarUrl("https://hangar.example", KEY, { webcal: true }), /^webcal:\/\/hangar\.example\//);
  });

  test("errors are named for what they are", () => {
    const error = new GatewayTimeout(504, "HTTP_504", "d");
    assert.equal(error.name, "GatewayTimeout");
    assert.equal(String(error), "GatewayTimeout: 504 HTTP_504: d");
  });
});
