/**
 * `client.events`: the events API, one page at a time (`list`) or every event in order
 * (`iter`, an async iterator).
 *
 * The API's cursor marks a page boundary, never one event, so an iterator's `cursor` moves past
 * a page only once every event of that page has been yielded: saved and passed back as
 * `after`, it gives every event not yet handed out (and, after a `break` in the middle of a
 * page, that page's earlier events again: delivery is at least once, `id` tells repeats).
 */

import type { Event, EventFilters, EventPage, EventQuery } from "./models.js";
import type { Sleep } from "./transport.js";

export const DEFAULT_LIMIT = 100;
/** How long `follow` waits between polls once caught up: the events API asks for 5 s or
 * slower. */
export const DEFAULT_INTERVAL_MS = 5_000;

export interface IterOptions extends EventFilters {
  /** Where to start: a cursor saved from `iterator.cursor` or a page's `next_cursor`; from the
   * oldest event kept when absent. */
  after?: string | null;
  /** Page size, 1 to 500. */
  limit?: number;
  /** Keep polling once caught up, every `intervalMs`, instead of ending: the iteration then
   * ends only at `break` or when `signal` aborts. */
  follow?: boolean;
  intervalMs?: number;
  /** Ends a following iteration (quietly: the loop ends, `cursor` is kept). */
  signal?: AbortSignal;
}

/** Every event after `after`, oldest first, fetched a page at a time; it ends when a page comes
 * back short (caught up for now), unless it follows.
 *
 * `cursor` is where to resume: pass it as `after` (with the same filters) to a later `iter` or
 * `list` to get only events this iterator has not yielded. It starts as `after` and moves to a
 * page's `next_cursor` once every event of that page has been yielded and the loop asks for
 * more, so after a loop that ran to its end it is the newest position:
 *
 *     const events = client.events.iter({ after: saved });
 *     for await (const event of events) handle(event);
 *     saved = events.cursor; // store it; poll again later with it
 */
export class EventIterator implements AsyncIterableIterator<Event> {
  cursor: string | null;
  private readonly held: Event[] = [];
  private pageEnd: string | null = null; // the held page's next_cursor
  private caughtUp = false;

  constructor(
    private readonly fetch: (after: string | null) => Promise<EventPage>,
    private readonly options: IterOptions,
    private readonly sleep: Sleep,
  ) {
    this.cursor = options.after ?? null;
  }

  [Symbol.asyncIterator](): EventIterator {
    return this;
  }

  async next(): Promise<IteratorResult<Event, undefined>> {
    for (;;) {
      const event = this.held.shift();
      if (event !== undefined) {
        return { done: false, value: event };
      }
      if (this.pageEnd !== null) {
        this.cursor = this.pageEnd;
        this.pageEnd = null;
      }
      if (this.caughtUp) {
        const { follow, intervalMs = DEFAULT_INTERVAL_MS, signal } = this.options;
        if (!follow || signal?.aborted) {
          return { done: true, value: undefined };
        }
        await this.sleep(intervalMs, signal);
        if (signal?.aborted) {
          return { done: true, value: undefined };
        }
      }
      const page = await this.fetch(this.cursor);
      this.held.push(...page.items);
      this.pageEnd = page.next_cursor;
      this.caughtUp = page.items.length < (this.options.limit ?? DEFAULT_LIMIT);
    }
  }

  /** `break` out of a `for await`: `cursor` stays where the unyielded events begin (their page
   * starts), and iterating again fetches from there. */
  async return(): Promise<IteratorResult<Event, undefined>> {
    this.held.length = 0;
    this.pageEnd = null;
    this.caughtUp = false;
    return { done: true, value: undefined };
  }
}

/** The events API of the client's organization (scope `read:events`): what happened, oldest
 * first, for catching up on webhooks a receiver missed. Events older than the server's
 * retention window are gone; a cursor from before it throws `CursorExpired`. */
export class Events {
  constructor(
    private readonly page: (query: EventQuery) => Promise<EventPage>,
    private readonly sleep: Sleep,
  ) {}

  /** One page of up to `limit` (1 to 500) events after `after`; `next_cursor` is a string on
   * every page, the last one too. */
  list(query: EventQuery = {}): Promise<EventPage> {
    return this.page({ limit: DEFAULT_LIMIT, ...query });
  }

  /** Every event after `after` until caught up (or, with `follow`, for as long as the loop
   * runs), `limit` per request; see `EventIterator.cursor` for resuming. */
  iter(options: IterOptions = {}): EventIterator {
    const { event, created_after, limit = DEFAULT_LIMIT } = options;
    return new EventIterator(
      (after) => this.list({ after, event, created_after, limit }),
      { ...options, limit },
      this.sleep,
    );
  }
}
