/**
 * hangar-client: a typed TypeScript client for hangar's public API (the read operations, the
 * events API, the calendar feed) and its signed webhooks, mirroring the Python client.
 */

export { HangarClient, type ClientOptions, type RetryOptions } from "./client.js";
export { calendarUrl, FEED_PATH } from "./calendar.js";
export {
  APIConnectionError,
  APITimeoutError,
  BadGateway,
  type Bucket,
  ConfigurationError,
  CursorExpired,
  GatewayTimeout,
  HangarClientError,
  HangarError,
  InsufficientScope,
  InvalidAPIKey,
  InvalidCursor,
  InvalidPayload,
  RateLimited,
  ServerError,
  ServiceUnavailable,
  Unauthorized,
  UnknownEvent,
  ValidationFailed,
} from "./errors.js";
export { EventIterator, Events, type IterOptions } from "./events.js";
export type * from "./models.js";
export { DEFAULT_POLICY, type RetryPolicy } from "./policy.js";
export type { components, operations, paths, webhooks } from "./schema.js";
export type { Fetch, Retrying, Sleep } from "./transport.js";
export { USER_AGENT, VERSION } from "./version.js";
export {
  DELIVERY_HEADER,
  type DeliveryBody,
  type DeliveryHeaders,
  EVENT_HEADER,
  EVENT_ID_HEADER,
  ORGANIZATION_HEADER,
  organizationOf,
  PREVIOUS_SIGNATURE_HEADER,
  parseEvent,
  SeenDeliveries,
  SIGNATURE_HEADER,
  sign,
  TOLERANCE_MS,
  type VerifyOptions,
  verifyDelivery,
  verifySignature,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  whsec,
} from "./webhooks.js";
