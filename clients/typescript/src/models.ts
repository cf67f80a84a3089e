/**
 * The API's shapes, named: each is the OpenAPI document's schema as openapi-typescript
 * generated it into ./schema.ts (`npm run generate`), so they are the spec's exact fields and
 * nullability. Ids are strings; timestamps are RFC 3339 strings (`new Date(value)` reads
 * them); date-only fields are `YYYY-MM-DD` strings. Every object also admits keys this version
 * does not know, as the API promises to add some.
 */

import type { components, operations, webhooks } from "./schema.js";

type Schemas = components["schemas"];
type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;
/** A query parameter that takes an RFC 3339 time: a `Date` is sent as its ISO form. */
type Time = string | Date;

export type Reservation = Schemas["Reservation"];
export type ReservationPage = Schemas["ReservationPage"];
export type Aircraft = Schemas["Aircraft"];
export type Squawk = Schemas["Squawk"];
export type Member = Schemas["Member"];
export type MaintenanceLog = Schemas["MaintenanceLog"];
export type WorkOrder = Schemas["WorkOrder"];
/** `getOrganization()`: the organization the key belongs to, and the key itself. */
export type Organization = Schemas["KeyOrganization"];
/** An item of the events API as the document's LoggedEvent describes it: `data` untyped. */
export type LoggedEvent = Schemas["LoggedEvent"];
export type EventName = LoggedEvent["event"];

/** Each webhook delivery's body by event name, from the document's `webhooks` section:
 * `{event, delivered_at, data}` with the event's own `data`. */
export type WebhookBodies = {
  [E in keyof webhooks]: NonNullable<webhooks[E]["post"]["requestBody"]>["content"]["application/json"];
};
/** A delivery's body: a union told apart by `event` (`switch (body.event)` types `data`).
 * `test.ping` is the Test action's. */
export type WebhookEvent = WebhookBodies[keyof WebhookBodies];
/** The `data` of event `E`, in its deliveries and in the events API alike. */
export type EventData<E extends keyof WebhookBodies> = WebhookBodies[E]["data"];

/** One item of the events API (`events.list`, `events.iter`): `data` typed by `event`, as in
 * the event's webhook deliveries; `id` is their `X-Service-Event-Id`. */
export type Event = {
  [E in EventName]: { id: string; event: E; created_at: string; data: EventData<E> };
}[EventName];
/** One page of the events API; `next_cursor` is a string on every page, the last one too. */
export type EventPage = { items: Event[]; next_cursor: string };
export type ErrorBody = Schemas["ErrorBody"];

export type ReservationStatus = Reservation["status"];
export type SquawkStatus = Squawk["status"];
export type WorkOrderStatus = WorkOrder["status"];

/** `reservations()` and `reservationsPage()`'s filters: the query parameters by their names. */
export type ReservationFilters = Omit<
  Query<"list_reservations">,
  "limit" | "after" | "start_after" | "start_before"
> & { start_after?: Time | null; start_before?: Time | null };
/** One page's position and size: `after` is the previous page's `next_cursor`. */
export type PageQuery = Pick<Query<"list_reservations">, "limit" | "after">;
export type SquawkFilters = Query<"list_squawks">;
export type MaintenanceLogFilters = Query<"list_maintenance_logs">;
export type WorkOrderFilters = Query<"list_work_orders">;
/** The events API's filters; a cursor is bound to the filters it was given with. */
export type EventFilters = {
  /** One name or several (an unknown name is 422 `UNKNOWN_EVENT`). */
  event?: EventName | readonly EventName[] | null;
  /** Events created at or after this time. */
  created_after?: Time | null;
};
export type EventQuery = EventFilters & Pick<Query<"list_events">, "limit" | "after">;
