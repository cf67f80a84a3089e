// Catch up on hangar's events after downtime, then keep polling: each event once, in order.
// Run:  HANGAR_BASE_URL=https://hangar.example HANGAR_API_KEY=svc_pk_... node poll_events.js
// Node 18 or later (fetch), no dependencies. The key needs the read:events scope. The position
// is kept in hangar-events.json (or the file STATE_FILE names): started again, it carries on.
const fs = require("node:fs");

const BASE_URL = process.env.HANGAR_BASE_URL.replace(/\/+$/, "");
const KEY = process.env.HANGAR_API_KEY;
const STATE_FILE = process.env.STATE_FILE || "hangar-events.json";
// Idle, a call every 5 s is 720 an hour: inside the key's 60 a minute and 1000 an hour.
const IDLE_SECONDS = Number(process.env.POLL_SECONDS || 5);
const LIMIT = 100;

const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

function loadState() {
  try {
    return JSON.parse(fs.readFileSync(STATE_FILE, "utf8"));
  } catch (error) {
    if (error.code !== "ENOENT") throw error;
    return { after: null, created_after: null, last_created_at: null }; // from the oldest kept
  }
}

function saveState(state) {
  // Written whole, then renamed over the old one: a crash never leaves half a file.
  fs.writeFileSync(STATE_FILE + ".tmp", JSON.stringify(state));
  fs.renameSync(STATE_FILE + ".tmp", STATE_FILE);
}

function handle(event) {
  // Your work goes here: event.data is what the event's webhook deliveries carry.
  console.log(event.id, event.event, event.created_at);
}

function secondsUntilNext(period) {
  // The limits count per calendar minute and hour; the jitter keeps workers apart.
  return period - ((Date.now() / 1000) % period) + Math.random() * 2;
}

async function main() {
  let state = loadState();
  const handled = new Set(); // in production: a unique key on the id where your work is kept
  let failures = 0;
  const backOff = () => sleep(Math.min(60, 2 ** ++failures) * (0.5 + Math.random() / 2));
  for (;;) {
    // A cursor is bound to the filters it came with: send the same created_after each time.
    const query = new URLSearchParams({ limit: String(LIMIT) });
    for (const name of ["after", "created_after"]) if (state[name]) query.set(name, state[name]);
    let response;
    try {
      response = await fetch(`${BASE_URL}/api/v1/external/events?${query}`, {
        headers: { Authorization: `Bearer ${KEY}` },
        signal: AbortSignal.timeout(30000),
      });
    } catch {
      await backOff(); // no answer: back off and try again
      continue;
    }
    if (!response.ok) {
      const detail = await response.text();
      if (response.status === 410) {
        // CURSOR_EXPIRED: start again from when it stopped.
        const since = state.last_created_at;
        state = { after: null, created_after: since, last_created_at: since };
      } else if (response.status === 429) {
        // RATE_LIMITED: the detail names the minute or the hour.
        await sleep(secondsUntilNext(detail.includes("hour") ? 3600 : 60));
      } else if (response.status >= 500) {
        await backOff();
      } else {
        // 400, 401, 403, 422: retrying the same request cannot succeed.
        throw new Error(`hangar answered ${response.status}: ${detail}`);
      }
      continue;
    }
    failures = 0;
    const page = await response.json();
    for (const event of page.items) {
      // Drop duplicates by id: the X-Service-Event-Id of the event's webhook deliveries.
      if (!handled.has(event.id)) {
        handled.add(event.id);
        handle(event);
      }
      state.last_created_at = event.created_at;
    }
    state.after = page.next_cursor; // on every page, the last one too: keep it
    saveState(state);
    if (page.items.length < LIMIT) await sleep(IDLE_SECONDS); // a short page: caught up for now
  }
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
