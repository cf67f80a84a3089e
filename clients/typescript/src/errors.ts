/**
 * Everything the client throws, under one root: `HangarClientError`. The same tree as the
 * Python client's `hangar_client.errors`, so code in either language branches the same way.
 *
 * HangarClientError
 * ├── ConfigurationError: refused before any request
 * │   └── InvalidAPIKey
 * ├── APIConnectionError: no answer (refused, reset, cut off); the fetch error is `cause`
 * │   └── APITimeoutError
 * ├── InvalidPayload: an answer that is not what the API promises
 * └── HangarError: an error answer, with its `status`, stable `code` and human `detail`
 *     ├── Unauthorized, InsufficientScope, InvalidCursor, CursorExpired
 *     ├── ValidationFailed
 *     │   └── UnknownEvent
 *     ├── RateLimited: `bucket` ("minute" | "hour") and `resetsAt`
 *     └── ServerError: any 5xx
 *         └── BadGateway (502), ServiceUnavailable (503), GatewayTimeout (504)
 */

export type Bucket = "minute" | "hour";

/** Any failure of the client: catch this one to catch them all. */
export class HangarClientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    // The subclass's own name in stack traces and `String(error)`, not "Error".
    this.name = new.target.name;
  }
}

/** A client that cannot work as configured (a base URL that is not http(s), say), thrown when
 * it is built, before anything is sent. */
export class ConfigurationError extends HangarClientError {}

/** The key is missing, blank, or not shaped like a hangar API key (`svc_pk_` and 43 URL-safe
 * characters): thrown when the client is built. The message never shows the key. */
export class InvalidAPIKey extends ConfigurationError {}

/** No answer from hangar: the connection was refused or cut, or the answer was not HTTP.
 * Thrown once the retries are spent; the fetch error is `cause`. */
export class APIConnectionError extends HangarClientError {}

/** No answer within the client's `timeoutMs`. */
export class APITimeoutError extends APIConnectionError {}

/** A body that is not what the API promises (not JSON, or not the shape of the answer). */
export class InvalidPayload extends HangarClientError {}

/** An error answer. Branch on `code` (stable), show `detail` (human). A body that is not
 * hangar's `{detail, code}` (a proxy's page) has code `HTTP_<status>`; the page itself is
 * `body` (its text). */
export class HangarError extends HangarClientError {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly body: unknown;
  readonly response: Response | undefined;

  constructor(status: number, code: string, detail: string, body?: unknown, response?: Response) {
    super(`${status} ${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.body = body;
    this.response = response;
  }
}

/** 401 UNAUTHORIZED: key missing, malformed, unknown, revoked or rotated out. */
export class Unauthorized extends HangarError {}

/** 403 INSUFFICIENT_SCOPE: the detail names the scope the key lacks. */
export class InsufficientScope extends HangarError {}

/** 400 INVALID_CURSOR: `after` did not come from these results (or these filters). */
export class InvalidCursor extends HangarError {}

/** 422: invalid query parameters; `body.errors` lists them. */
export class ValidationFailed extends HangarError {}

/** 422 UNKNOWN_EVENT: an `event` filter that is not one of the catalogue's names. A
 * ValidationFailed too, so one `instanceof ValidationFailed` catches every 422. */
export class UnknownEvent extends ValidationFailed {}

/** 410 CURSOR_EXPIRED: the events cursor points before the retention window (those events
 * are gone). Start again without `after`, e.g. with `created_after`. */
export class CursorExpired extends HangarError {}

/** 429 RATE_LIMITED, once waiting for the bucket to open is over the configured bounds.
 *
 * `bucket` is the key's budget that refused: "minute" (60 per calendar minute) or "hour"
 * (1000 per calendar hour); null for a 429 that did not come from hangar's limits (a
 * proxy's). `resetsAt` is when that bucket opens again (the top of the next minute or hour,
 * UTC), null likewise. */
export class RateLimited extends HangarError {
  bucket: Bucket | null = null;
  resetsAt: Date | null = null;
}

/** Any 5xx: hangar failed (500 INTERNAL_ERROR), or something in front of it did. 502, 503
 * and 504 are retried first. */
export class ServerError extends HangarError {}

/** 502: a proxy in front of hangar got no good answer from it, still, after the retries. */
export class BadGateway extends ServerError {}

/** 503 SERVICE_UNAVAILABLE, still, after the retries. */
export class ServiceUnavailable extends ServerError {}

/** 504: a proxy in front of hangar waited for it in vain, still, after the retries. */
export class GatewayTimeout extends ServerError {}

type ErrorClass = new (
  status: number,
  code: string,
  detail: string,
  body?: unknown,
  response?: Response,
) => HangarError;

const BY_CODE: Record<string, ErrorClass> = {
  UNAUTHORIZED: Unauthorized,
  INSUFFICIENT_SCOPE: InsufficientScope,
  INVALID_CURSOR: InvalidCursor,
  VALIDATION_ERROR: ValidationFailed,
  UNKNOWN_EVENT: UnknownEvent,
  CURSOR_EXPIRED: CursorExpired,
  RATE_LIMITED: RateLimited,
  SERVICE_UNAVAILABLE: ServiceUnavailable,
};
// What something in front of hangar (a proxy, a load balancer) answers has no hangar code.
const BY_STATUS: Record<number, ErrorClass> = {
  429: RateLimited,
  502: BadGateway,
  503: ServiceUnavailable,
  504: GatewayTimeout,
};

// The spec's only rate-limit signal: the 429's detail names the limit that refused, "60/min"
// or "1000/hour" (no Retry-After, no X-RateLimit-* headers, and the body is {detail, code}).
const LIMIT = /\d+\s*\/\s*(min|minute|hour)\b/;
const PERIOD_MS: Record<Bucket, number> = { minute: 60_000, hour: 3_600_000 };

/** The bucket a hangar 429's detail names, or null when it names none. */
export function bucketOf(detail: string): Bucket | null {
  const found = LIMIT.exec(detail);
  if (found === null) {
    return null;
  }
  return found[1] === "hour" ? "hour" : "minute";
}

/** When `bucket`'s calendar window after `now` begins (buckets are aligned to the epoch, so
 * to the top of the minute or hour in UTC). */
export function bucketOpens(bucket: Bucket, now: Date): Date {
  const period = PERIOD_MS[bucket];
  const ms = now.getTime();
  return new Date(ms - (ms % period) + period);
}

/** The error for an error answer whose body has been read as `text`; `now` dates a 429's
 * `resetsAt`. */
export function errorFor(response: Response, text: string, now: Date): HangarError {
  const status = response.status;
  const body = jsonOrUndefined(text);
  const fields = isRecord(body) ? body : {};
  let code = fields["code"];
  let detail = String(fields["detail"] ?? "");
  if (typeof code !== "string") {
    code = `HTTP_${status}`;
    detail = notHangars(response, text);
  }
  const kind =
    BY_CODE[code as string] ?? BY_STATUS[status] ?? (status >= 500 ? ServerError : HangarError);
  const error = new kind(status, code as string, detail, body ?? text, response);
  if (error instanceof RateLimited) {
    error.bucket = bucketOf(detail);
    error.resetsAt = error.bucket ? bucketOpens(error.bucket, now) : null;
  }
  return error;
}

/** A detail for an answer that is not hangar's JSON (an nginx 502 page, say): what it is and
 * where it likely came from, not its markup. */
function notHangars(response: Response, text: string): string {
  const reason = response.statusText || "Error";
  const kind = (response.headers.get("Content-Type") ?? "").split(";")[0]?.trim() || "untyped";
  const what = text ? `${kind} content` : "an empty body";
  return (
    `${reason} (${what}, not hangar's JSON error: it likely came from a proxy or load ` +
    "balancer in front of hangar)"
  );
}

function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
