/**
 * `HangarClient`: hangar's public API with one organization's key, over openapi-fetch and the
 * types generated from the API's OpenAPI document (./schema.ts).
 */

import createClient from "openapi-fetch";

import { FEED_PATH } from "./calendar.js";
import { apiKey, httpUrl } from "./config.js";
import { HangarClientError, InvalidPayload, isRecord } from "./errors.js";
import { Events } from "./events.js";
import type {
  Aircraft,
  EventPage,
  EventQuery,
  MaintenanceLog,
  MaintenanceLogFilters,
  Member,
  Organization,
  PageQuery,
  Reservation,
  ReservationFilters,
  ReservationPage,
  Squawk,
  SquawkFilters,
  WorkOrder,
  WorkOrderFilters,
} from "./models.js";
import { DEFAULT_POLICY, type RetryPolicy } from "./policy.js";
import type { paths } from "./schema.js";
import {
  type Fetch,
  type Retrying,
  type Runtime,
  type Sleep,
  realSleep,
  retryingFetch,
} from "./transport.js";
import { USER_AGENT } from "./version.js";

export interface RetryOptions {
  /** Bounds of the waiting; what is not given keeps its default (`DEFAULT_POLICY`). */
  policy?: Partial<RetryPolicy>;
  /** Stands for `policy.maxRetries`: more attempts after a 502, 503, 504 or no answer. */
  maxRetries?: number;
  /** The clock the client dates a 429's wait by. */
  now?: () => Date;
  /** How the client waits before a retry (and between polls of a following iterator). */
  sleep?: Sleep;
  /** The jitter's source, a number in [0, 1). */
  random?: () => number;
  /** Hears of each retry before its wait. */
  onRetry?: (retrying: Retrying) => void;
}

export interface ClientOptions extends RetryOptions {
  /** Milliseconds one attempt may take, answer read included (default 10 s). */
  timeoutMs?: number;
  /** The fetch to send with (the global one by default): for tests and proxies. */
  fetch?: Fetch;
}

type Get = ReturnType<typeof createClient<paths>>["GET"];
type ListFilters = Record<string, unknown>;

const RESERVATION_FILTERS = ["aircraft_id", "pilot_id", "status", "start_after", "start_before"];
const SQUAWK_FILTERS = ["status", "aircraft_id", "is_grounding"];

/** hangar's public API with one organization's key.
 *
 * Every failure throws a `HangarClientError` (./errors.ts): a key that cannot be one at once
 * (`InvalidAPIKey`), no answer as `APIConnectionError`, an error answer as a `HangarError`.
 * 429s, 502, 503, 504 and connection failures are retried first, within `policy`; `onRetry`
 * hears of each retry before its wait. `now`, `sleep` and `random` are injectable so that tests
 * never really wait; `fetch` is for tests or proxies. `events` is the events API. */
export class HangarClient {
  readonly baseUrl: string;
  readonly events: Events;
  private readonly key: string;
  private readonly runtime: Runtime;
  private readonly get: Get;

  constructor(baseUrl: string, key: string, options: ClientOptions = {}) {
    this.baseUrl = httpUrl(baseUrl, "the base URL");
    this.key = apiKey(key);
    this.runtime = {
      policy: { ...DEFAULT_POLICY, ...options.policy },
      timeoutMs: options.timeoutMs ?? 10_000,
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      now: options.now ?? (() => new Date()),
      sleep: options.sleep ?? realSleep,
      random: options.random ?? Math.random,
      onRetry: options.onRetry,
    };
    if (options.maxRetries !== undefined) {
      this.runtime = {
        ...this.runtime,
        policy: { ...this.runtime.policy, maxRetries: options.maxRetries },
      };
    }
    const api = createClient<paths>({
      baseUrl: this.baseUrl,
      fetch: retryingFetch(this.runtime),
      headers: { "User-Agent": USER_AGENT, Authorization: `Bearer ${this.key}` },
    });
    this.get = api.GET.bind(api) as Get;
    this.events = new Events((query) => this.eventsPage(query), this.runtime.sleep);
  }

  /** This client with other retry settings (what is not given stays). */
  withOptions(options: RetryOptions): HangarClient {
    const runtime = this.runtime;
    return new HangarClient(this.baseUrl, this.key, {
      timeoutMs: runtime.timeoutMs,
      fetch: runtime.fetch,
      policy: { ...runtime.policy, ...options.policy },
      ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
      now: options.now ?? runtime.now,
      sleep: options.sleep ?? runtime.sleep,
      random: options.random ?? runtime.random,
      ...(options.onRetry ?? runtime.onRetry
        ? { onRetry: options.onRetry ?? runtime.onRetry }
        : {}),
    });
  }

  /** One page, newest start time first; pass `next_cursor` back as `after` with the same
   * filters. */
  async reservationsPage(query: PageQuery & ReservationFilters = {}): Promise<ReservationPage> {
    const { limit = 100, after, ...filters } = query;
    refuseUnknown(filters, RESERVATION_FILTERS);
    const page = await this.read("/api/v1/external/reservations", () =>
      this.get("/api/v1/external/reservations", {
        params: { query: { limit, after, ...withTimes(filters) } },
      }),
    );
    return object(page, "/api/v1/external/reservations", "items") as ReservationPage;
  }

  /** Every matching reservation, following `next_cursor` page by page. */
  async *reservations(
    filters: ReservationFilters & { pageSize?: number } = {},
  ): AsyncGenerator<Reservation, void, undefined> {
    const { pageSize = 100, ...rest } = filters;
    let after: string | null = null;
    for (;;) {
      const page: ReservationPage = await this.reservationsPage({
        ...rest,
        limit: pageSize,
        after,
      });
      yield* page.items;
      if (page.next_cursor === null || page.next_cursor === undefined) {
        return;
      }
      after = page.next_cursor;
    }
  }

  async aircraft(): Promise<Aircraft[]> {
    const path = "/api/v1/external/aircraft";
    return list(await this.read(path, () => this.get(path)), path);
  }

  /** The 500 most recent matching squawks, newest first. */
  async squawks(filters: SquawkFilters = {}): Promise<Squawk[]> {
    refuseUnknown(filters, SQUAWK_FILTERS);
    const path = "/api/v1/external/squawks";
    return list(await this.read(path, () => this.get(path, { params: { query: filters } })), path);
  }

  async members(): Promise<Member[]> {
    const path = "/api/v1/external/members";
    return list(await this.read(path, () => this.get(path)), path);
  }

  /** The 500 most recent entries; filter by aircraft for a complete history. */
  async maintenanceLogs(filters: MaintenanceLogFilters = {}): Promise<MaintenanceLog[]> {
    refuseUnknown(filters, ["aircraft_id"]);
    const path = "/api/v1/external/maintenance-logs";
    return list(await this.read(path, () => this.get(path, { params: { query: filters } })), path);
  }

  async workOrders(filters: WorkOrderFilters = {}): Promise<WorkOrder[]> {
    refuseUnknown(filters, ["status"]);
    const path = "/api/v1/external/work-orders";
    return list(await this.read(path, () => this.get(path, { params: { query: filters } })), path);
  }

  /** The organization the key belongs to (`id` is its deliveries' `X-Service-Organization`),
   * and the key's prefix, scopes and `expires_at`. Any valid key may ask. */
  async getOrganization(): Promise<Organization> {
    const path = "/api/v1/external/organization";
    const body = await this.read(path, () => this.get(path));
    return object(body, path, "key") as Organization;
  }

  /** The iCalendar feed's text (the key goes in `?token=`, as calendar apps send it). */
  async calendar(): Promise<string> {
    const body = await this.read(FEED_PATH, () =>
      this.get(FEED_PATH, {
        params: { query: { token: this.key } },
        headers: { Authorization: null },
        parseAs: "text",
      }),
    );
    if (typeof body !== "string") {
      throw new InvalidPayload(`the answer to GET ${FEED_PATH} is not text`);
    }
    return body;
  }

  private async eventsPage(query: EventQuery): Promise<EventPage> {
    const { event, created_after, ...rest } = query;
    refuseUnknown(rest, ["limit", "after"]);
    const path = "/api/v1/external/events";
    const names = event === null || event === undefined ? undefined : [event].flat();
    const page = await this.read(path, () =>
      this.get(path, {
        params: { query: { ...rest, event: names, ...withTimes({ created_after }) } },
      }),
    );
    return object(page, path, "items") as EventPage;
  }

  /** The body of a successful answer; what openapi-fetch could not parse is InvalidPayload. */
  private async read(
    path: string,
    send: () => Promise<{ data?: unknown; response: Response }>,
  ): Promise<unknown> {
    try {
      const { data, response } = await send();
      if (!response.ok) {
        // The transport throws for every error answer; this is a bug if reached.
        throw new InvalidPayload(`GET ${path} answered ${response.status}`);
      }
      return data;
    } catch (failure) {
      if (failure instanceof HangarClientError) {
        throw failure;
      }
      // Not JSON at all (a captive portal's page, say).
      throw new InvalidPayload(`the answer to GET ${path} is not the API's JSON: ${failure}`, {
        cause: failure,
      });
    }
  }
}

/** The TypeError a misspelt filter gets from plain JavaScript (TypeScript refuses it when
 * compiling): sending it on would silently not filter. */
function refuseUnknown(filters: object, names: readonly string[]): void {
  const unknown = Object.keys(filters)
    .filter((name) => !names.includes(name))
    .sort();
  if (unknown.length > 0) {
    throw new TypeError(
      `unexpected filter ${JSON.stringify(unknown[0])} (the filters: ${[...names].sort().join(", ")})`,
    );
  }
}

/** `Date`s as RFC 3339 text; absent values left out. */
function withTimes<T extends ListFilters>(filters: T): { [K in keyof T]: Exclude<T[K], Date> } {
  const sent: ListFilters = {};
  for (const [name, value] of Object.entries(filters)) {
    if (value instanceof Date) {
      if (Number.isNaN(value.getTime())) {
        throw new RangeError(`${name} is an invalid Date`);
      }
      sent[name] = value.toISOString();
    } else if (value !== undefined) {
      sent[name] = value;
    }
  }
  return sent as { [K in keyof T]: Exclude<T[K], Date> };
}

function list<T>(body: unknown, path: string): T[] {
  if (!Array.isArray(body)) {
    throw new InvalidPayload(`expected a JSON array from ${path}`);
  }
  return body as T[];
}

function object(body: unknown, path: string, field: string): Record<string, unknown> {
  if (!isRecord(body) || !(field in body)) {
    throw new InvalidPayload(`expected a JSON object with "${field}" from ${path}`);
  }
  return body;
}
