// The client against a live hangar, as tests/client/test_typescript_client.py serves it: every
// operation, paging, the events API, the typed errors (401, 403, 400, 422, 429 retried) and a
// delivery signed by hangar's own code. HANGAR_TEST_FIXTURE names a JSON file with the
// server's address, keys and what each organization must read; HANGAR_CONTROL moves the
// server's clock (the client's injected sleep), so a 429's minute passes without waiting.
// Without them these tests are skipped, saying why.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import {
  APIConnectionError,
  type ClientOptions,
  ConfigurationError,
  HangarClient,
  InsufficientScope,
  InvalidAPIKey,
  InvalidCursor,
  ORGANIZATION_HEADER,
  organizationOf,
  RateLimited,
  type Retrying,
  SeenDeliveries,
  Unauthorized,
  UnknownEvent,
  ValidationFailed,
  parseEvent,
  verifyDelivery,
  verifySignature,
} from "../src/index.js";

interface Rows {
  id: string;
  name: string;
  admin_id: string;
  aircraft: string[];
  reservations: string[];
  cancelled: string[];
  squawks: string[];
  maintenance_logs: string[];
  work_orders: string[];
  members: string[];
  events: { id: string; event: string; data: Record<string, unknown> }[];
}

interface Fixture {
  url: string;
  now: string;
  keys: { all: string; no_members: string; rate: string; other: string };
  org: Rows;
  other: Rows;
  delivery: {
    secret: string;
    previous_secret: string;
    body: string;
    headers: Record<string, string>;
    signed_at: string;
  };
}

const FIXTURE = process.env.HANGAR_TEST_FIXTURE;
const CONTROL = process.env.HANGAR_CONTROL;
const skip =
  FIXTURE && CONTROL ? false : "needs a live hangar: tests/client/test_typescript_client.py runs these";
const fx: Fixture = FIXTURE ? (JSON.parse(readFileSync(FIXTURE, "utf8")) as Fixture) : ({} as Fixture);

// The server's clock, as last told: the client dates a 429's wait by it.
let serverNow = new Date(fx.now ?? Date.now());
const moves: number[] = [];

/** The client's sleep: the server's clock moved on by `ms`, at once. */
async function moveServerClock(ms: number): Promise<void> {
  moves.push(ms);
  const answer = await fetch(`${CONTROL}/advance?ms=${Math.ceil(ms)}`, { method: "POST" });
  assert.equal(answer.status, 200);
  serverNow = new Date(await answer.text());
}

function client(key: string, options: ClientOptions = {}): HangarClient {
  return new HangarClient(fx.url, key, {
    now: () => serverNow,
    sleep: moveServerClock,
    random: () => 0.5,
    ...options,
  });
}

function sorted(values: Iterable<string>): string[] {
  return [...values].sort();
}

/** No id of the other organization anywhere in `found`. */
function noneOfTheOthers(found: unknown): void {
  const text = JSON.stringify(found);
  const theirs = [
    fx.other.id,
    ...fx.other.aircraft,
    ...fx.other.reservations,
    ...fx.other.squawks,
    ...fx.other.maintenance_logs,
    ...fx.other.work_orders,
    ...fx.other.events.map((e) => e.id),
  ];
  for (const id of theirs) {
    assert.ok(!text.includes(id), `the other organization's ${id} showed`);
  }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected an error");
}

describe("a live hangar", { skip }, () => {
  test("every operation reads the organization's rows, never the other's", async () => {
    const hangar = client(fx.keys.all);
    const aircraft = await hangar.aircraft();
    assert.deepEqual(sorted(aircraft.map((a) => a.id)), sorted(fx.org.aircraft));
    assert.ok(aircraft.some((a) => a.tail_number === "N42TS"));
    const squawks = await hangar.squawks();
    assert.deepEqual(sorted(squawks.map((s) => s.id)), sorted(fx.org.squawks));
    const plane = aircraft.find((a) => a.tail_number === "N42TS")?.id ?? "";
    const onPlane = await hangar.squawks({ aircraft_id: plane });
    assert.equal(onPlane.length, 1);
    assert.ok(onPlane.every((s) => s.aircraft_id === plane));
    const grounding = await hangar.squawks({ is_grounding: true });
    const not = await hangar.squawks({ is_grounding: false });
    assert.ok(grounding.length >= 1 && grounding.every((s) => s.is_grounding));
    assert.equal(grounding.length + not.length, squawks.length);
    const members = await hangar.members();
    assert.deepEqual(sorted(members.map((m) => m.user_id)), sorted(fx.org.members));
    assert.ok(members.some((m) => m.user_id === fx.org.admin_id));
    const logs = await hangar.maintenanceLogs();
    assert.deepEqual(sorted(logs.map((l) => l.id)), sorted(fx.org.maintenance_logs));
    assert.equal((await hangar.maintenanceLogs({ aircraft_id: plane })).length, 1);
    const orders = await hangar.workOrders();
    assert.deepEqual(sorted(orders.map((w) => w.id)), sorted(fx.org.work_orders));
    assert.equal((await hangar.workOrders({ status: "completed" })).length, 0);
    const feed = await hangar.calendar();
    assert.match(feed, /^BEGIN:VCALENDAR/);
    const organization = await hangar.getOrganization();
    assert.equal(organization.id, fx.org.id);
    assert.equal(organization.name, fx.org.name);
    assert.ok(fx.keys.all.startsWith(organization.key.prefix));
    assert.ok(organization.key.scopes.includes("read:reservations"));
    assert.equal(organization.key.expires_at, null);
    for (const found of [aircraft, squawks, members, logs, orders, feed, organization]) {
      noneOfTheOthers(found);
    }
    // The other organization's key reads its own organization.
    const theirs = await client(fx.keys.other).getOrganization();
    assert.equal(theirs.id, fx.other.id);
    assert.equal(theirs.name, fx.other.name);
  });

  test("reservations: one page, then every one by following next_cursor", async () => {
    const sent: string[] = [];
    const hangar = client(fx.keys.all, {
      fetch: (input, init) => {
        sent.push(new URL(input.url).search);
        return fetch(input, init);
      },
    });
    const page = await hangar.reservationsPage({ limit: 2 });
    assert.equal(page.items.length, 2);
    assert.equal(typeof page.next_cursor, "string");
    sent.length = 0;
    const walked = [];
    for await (const reservation of hangar.reservations({ pageSize: 2 })) {
      walked.push(reservation);
    }
    assert.deepEqual(sorted(walked.map((r) => r.id)), sorted(fx.org.reservations));
    assert.equal(new Set(walked.map((r) => r.id)).size, walked.length);
    // Newest start first, across pages.
    const starts = walked.map((r) => Date.parse(r.start_time ?? ""));
    assert.deepEqual(starts, [...starts].sort((a, b) => b - a));
    assert.equal(sent.length, Math.floor(fx.org.reservations.length / 2) + 1);
    const cancelled = [];
    for await (const reservation of hangar.reservations({ status: "cancelled" })) {
      cancelled.push(reservation.id);
    }
    assert.deepEqual(sorted(cancelled), sorted(fx.org.cancelled));
    noneOfTheOthers(walked);
  });

  test("events: iterated across pages, resumed from the cursor, filtered", async () => {
    const hangar = client(fx.keys.all);
    const events = hangar.events.iter({ limit: 5 });
    const seen = [];
    for await (const event of events) {
      seen.push(event);
    }
    assert.deepEqual(sorted(seen.map((e) => e.id)), sorted(fx.org.events.map((e) => e.id)));
    const expected = new Map(fx.org.events.map((e) => [e.id, e]));
    for (const event of seen) {
      assert.equal(event.event, expected.get(event.id)?.event);
      assert.deepEqual(event.data, expected.get(event.id)?.data);
    }
    // `data` is typed by `event` (the document's webhooks section), as the deliveries' is.
    for (const event of seen) {
      switch (event.event) {
        case "squawk.created":
          assert.equal(typeof event.data.aircraft_id, "string");
          assert.ok(["minor", "major", "grounding"].includes(event.data.severity));
          break;
        case "reservation.cancelled":
          assert.equal(typeof event.data.id, "string");
          break;
        default:
          assert.equal(typeof event.data, "object");
      }
    }
    const created = seen.map((e) => Date.parse(e.created_at));
    assert.deepEqual(created, [...created].sort((a, b) => a - b)); // oldest first
    assert.equal(new Set(seen.map((e) => e.event)).size, 13); // every one of the 13 events
    noneOfTheOthers(seen);
    // Caught up: from the saved cursor there is nothing more.
    assert.equal(typeof events.cursor, "string");
    const later = [];
    for await (const event of hangar.events.iter({ after: events.cursor })) {
      later.push(event);
    }
    assert.deepEqual(later, []);
    // Following: it polls after intervalMs, here until the test's signal stops it.
    const stop = new AbortController();
    const following = client(fx.keys.all, {
      sleep: async (ms) => {
        assert.equal(ms, 5_000);
        stop.abort();
      },
    }).events.iter({ after: events.cursor, follow: true, signal: stop.signal });
    for await (const event of following) {
      assert.fail(`nothing new was expected, got ${event.id}`);
    }
    assert.equal(following.cursor, events.cursor);
    // Filters: by name, one or several.
    const squawks = await hangar.events.list({ event: "squawk.created" });
    assert.ok(squawks.items.length >= 1);
    assert.ok(squawks.items.every((e) => e.event === "squawk.created"));
    const two = await hangar.events.list({ event: ["mel.created", "mel.expired"], limit: 500 });
    assert.deepEqual(sorted(new Set(two.items.map((e) => e.event))), ["mel.created", "mel.expired"]);
  });

  test("typed errors: 401, 403 for a scope, 400 cursor, 422, a bad key, no answer", async () => {
    const wrong = await rejection(client(`svc_pk_${"0".repeat(43)}`).aircraft());
    assert.ok(wrong instanceof Unauthorized, String(wrong));
    assert.equal(wrong.status, 401);
    assert.equal(wrong.code, "UNAUTHORIZED");
    const scoped = await rejection(client(fx.keys.no_members).members());
    assert.ok(scoped instanceof InsufficientScope, String(scoped));
    assert.equal(scoped.status, 403);
    assert.match(scoped.detail, /read:members/);
    const hangar = client(fx.keys.all);
    const invalid = await rejection(hangar.reservationsPage({ status: "grounded" as never }));
    assert.ok(invalid instanceof ValidationFailed, String(invalid));
    assert.equal(invalid.status, 422);
    const tooMany = await rejection(hangar.reservationsPage({ limit: 100_000 }));
    assert.ok(tooMany instanceof ValidationFailed, String(tooMany));
    const unknown = await rejection(hangar.events.list({ event: "squawk.eaten" as never }));
    assert.ok(unknown instanceof UnknownEvent && unknown instanceof ValidationFailed);
    assert.equal(unknown.code, "UNKNOWN_EVENT");
    const cursor = await rejection(hangar.reservationsPage({ after: "not-a-cursor" }));
    assert.ok(cursor instanceof InvalidCursor, String(cursor));
    assert.equal(cursor.status, 400);
    assert.throws(() => client("svc_pk_short"), InvalidAPIKey);
    assert.throws(() => new HangarClient("ftp://127.0.0.1", fx.keys.all), ConfigurationError);
    // No answer: a port nothing listens on (the control's host, port 9 is discard's, closed).
    const waits: number[] = [];
    const nowhere = new HangarClient("http://127.0.0.1:9", fx.keys.all, {
      maxRetries: 1,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    const refused = await rejection(nowhere.aircraft());
    assert.ok(refused instanceof APIConnectionError, String(refused));
    assert.equal(waits.length, 1);
  });

  test("429: retried once its minute opens; over maxRateLimitWaitMs, thrown", async () => {
    const retries: Retrying[] = [];
    const hangar = client(fx.keys.rate, { onRetry: (retrying) => retries.push(retrying) });
    const before = serverNow.getTime();
    for (let n = 0; n < 61; n += 1) {
      await hangar.aircraft(); // the 61st is refused, waits (the clock moves), and succeeds
    }
    assert.equal(retries.length, 1);
    const [retry] = retries;
    assert.ok(retry?.error instanceof RateLimited);
    assert.equal(retry.error.bucket, "minute");
    const opens = before - (before % 60_000) + 60_000;
    assert.equal(retry.error.resetsAt?.getTime(), opens);
    assert.equal(retry.waitMs, opens - before + 500); // to the minute, and half the jitter
    // The same key without waiting: the new minute's 60 are spent, then RateLimited.
    const impatient = hangar.withOptions({ policy: { maxRateLimitWaitMs: 0 } });
    let refused: unknown;
    for (let n = 0; n < 61 && refused === undefined; n += 1) {
      refused = await impatient.aircraft().then(() => undefined, (error: unknown) => error);
    }
    assert.ok(refused instanceof RateLimited, String(refused));
    assert.equal(refused.status, 429);
    assert.equal(refused.code, "RATE_LIMITED");
    assert.equal(refused.bucket, "minute");
  });

  test("a delivery signed by hangar verifies; tampered, stale or foreign ones do not", () => {
    const { secret, previous_secret: previous, body, headers } = fx.delivery;
    const signedAt = new Date(fx.delivery.signed_at);
    const at = (ms: number) => ({ now: new Date(signedAt.getTime() + ms) });
    assert.ok(verifyDelivery(secret, body, headers, at(0)));
    assert.ok(verifyDelivery(secret, Buffer.from(body), new Headers(headers), at(0)));
    // A receiver still holding the secret before a rotation verifies it too.
    assert.ok(verifyDelivery(previous, body, headers, at(0)));
    assert.ok(!verifyDelivery("7f".repeat(32), body, headers, at(0)));
    assert.ok(!verifyDelivery(secret, body.replace('"data":{', '"data":{"x":1,'), headers, at(0)));
    assert.ok(!verifyDelivery(secret, `${body} `, headers, at(0)));
    // Within 5 minutes of its signed time, either way, and not after.
    assert.ok(verifyDelivery(secret, body, headers, at(300_000)));
    assert.ok(verifyDelivery(secret, body, headers, at(-300_000)));
    assert.ok(!verifyDelivery(secret, body, headers, at(301_000)));
    assert.ok(!verifyDelivery(secret, body, headers, at(-301_000)));
    assert.ok(verifyDelivery(secret, body, headers, { ...at(600_000), tolerance: 600_000 }));
    // A copy given a new id or time does not verify; nor does the contract's signature alone.
    assert.ok(!verifyDelivery(secret, body, { ...headers, "webhook-id": "another" }, at(0)));
    const later = String(Number(headers["webhook-timestamp"]) + 60);
    assert.ok(!verifyDelivery(secret, body, { ...headers, "webhook-timestamp": later }, at(0)));
    const contractOnly = { "X-Service-Signature": headers["X-Service-Signature"] ?? "" };
    assert.ok(verifySignature(secret, body, contractOnly["X-Service-Signature"]));
    assert.ok(!verifyDelivery(secret, body, contractOnly, at(0)));
    // Header names in any case.
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    assert.ok(verifyDelivery(secret, body, lower, at(0)));
    // Repeats, by the signed webhook-id.
    const seen = new SeenDeliveries();
    assert.ok(seen.firstTime(headers));
    assert.ok(!seen.firstTime(lower));
    const event = parseEvent(body);
    assert.equal(event.event, "squawk.created");
    if (event.event === "squawk.created") {
      assert.equal(event.data.aircraft_id, fx.org.events.find((e) => e.event === "squawk.created")?.data["aircraft_id"]);
    }
    assert.equal(headers[ORGANIZATION_HEADER], fx.org.id);
    assert.equal(organizationOf(new Headers(headers)), fx.org.id);
    assert.equal(organizationOf({}), null);
    assert.ok(moves.every((ms) => ms > 0));
  });
});
