// The events iterator's paging, cursor and following, over scripted pages (no server): the
// cursor moves past a page only once all of it was yielded; `follow` polls every intervalMs
// once caught up and ends when its signal aborts.
import assert from "node:assert/strict";
import { test } from "node:test";

import { type Event, type EventPage, HangarClient } from "../src/index.js";

const KEY = `svc_pk_${"a".repeat(43)}`;

function event(n: number): Event {
  const data = { id: `s${n}`, aircraft_id: "a", description: "d", severity: "minor", is_grounding: false, reported_by: null, created_at: "2026-05-04T10:00:00Z" } as const;
  return { id: `e${n}`, event: "squawk.created", created_at: "2026-05-04T10:00:00Z", data };
}

/** A client whose events API answers `pages` in turn (then empty pages), recording each
 * request's `after` and each wait. */
function paged(pages: EventPage[], onSleep: (ms: number) => void = () => {}) {
  const afters: (string | null)[] = [];
  const waits: number[] = [];
  const client = new HangarClient("https://hangar.example", KEY, {
    sleep: async (ms) => {
      waits.push(ms);
      onSleep(ms);
    },
    fetch: async (input) => {
      afters.push(new URL(input.url).searchParams.get("after"));
      const page = pages.shift() ?? { items: [], next_cursor: `c-end-${afters.length}` };
      return new Response(JSON.stringify(page), { headers: { "Content-Type": "application/json" } });
    },
  });
  return { client, afters, waits };
}

test("iter walks every page, ends at a short page, and leaves the cursor at the end", async () => {
  const { client, afters } = paged([
    { items: [event(1), event(2)], next_cursor: "c1" },
    { items: [event(3), event(4)], next_cursor: "c2" },
    { items: [event(5)], next_cursor: "c3" },
  ]);
  const events = client.events.iter({ limit: 2 });
  const seen = [];
  for await (const item of events) {
    seen.push(item.id);
  }
  assert.deepEqual(seen, ["e1", "e2", "e3", "e4", "e5"]);
  assert.deepEqual(afters, [null, "c1", "c2"]);
  assert.equal(events.cursor, "c3");
});

test("a break in a page keeps the cursor at that page's start", async () => {
  const { client } = paged([
    { items: [event(1), event(2)], next_cursor: "c1" },
    { items: [event(3), event(4)], next_cursor: "c2" },
  ]);
  const events = client.events.iter({ after: "c0", limit: 2 });
  for await (const item of events) {
    if (item.id === "e3") {
      break;
    }
  }
  assert.equal(events.cursor, "c1"); // e3's page is given again from there
});

test("follow polls every intervalMs once caught up, yields what arrives, ends on abort", async () => {
  const stop = new AbortController();
  let polls = 0;
  const { client, afters, waits } = paged(
    [
      { items: [event(1)], next_cursor: "c1" },
      { items: [], next_cursor: "c1" },
      { items: [event(2), event(3)], next_cursor: "c2" },
    ],
    () => {
      polls += 1;
      if (polls === 3) {
        stop.abort();
      }
    },
  );
  const events = client.events.iter({ follow: true, intervalMs: 7_000, signal: stop.signal });
  const seen = [];
  for await (const item of events) {
    seen.push(item.id);
  }
  assert.deepEqual(seen, ["e1", "e2", "e3"]);
  assert.deepEqual(waits, [7_000, 7_000, 7_000]);
  assert.deepEqual(afters, [null, "c1", "c1"]);
  assert.equal(events.cursor, "c2");
});
