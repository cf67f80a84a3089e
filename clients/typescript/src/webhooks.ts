/**
 * Checking a webhook delivery, as the Python client's hangar_client.signature does:
 * `verifyDelivery` (both of hangar's signatures and the time), `SeenDeliveries` (repeats),
 * `verifySignature` (`X-Service-Signature` alone), `organizationOf`, `parseEvent` and `whsec`.
 *
 * The Standard Webhooks signature is computed by the official `standardwebhooks` package. Its
 * own `verify` reads the machine's clock and a fixed 5-minute tolerance, so the time is checked
 * here (with `now` and `tolerance` injectable, as the Python client's are) and the package's
 * `sign` gives the expected value, compared in constant time.
 */

import { createHmac, timingSafeEqual } from "node:crypto";

import { Webhook } from "standardwebhooks";

import { InvalidPayload, isRecord } from "./errors.js";
import type { WebhookEvent } from "./models.js";

export const SIGNATURE_HEADER = "X-Service-Signature";
export const PREVIOUS_SIGNATURE_HEADER = "X-Service-Signature-Previous";
export const EVENT_HEADER = "X-Service-Event";
export const EVENT_ID_HEADER = "X-Service-Event-Id";
export const DELIVERY_HEADER = "X-Service-Delivery";
export const ORGANIZATION_HEADER = "X-Service-Organization";
export const WEBHOOK_ID_HEADER = "webhook-id";
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp";
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature";
/** How far a delivery's webhook-timestamp may be from the receiver's clock, either way, in
 * milliseconds (the Standard Webhooks libraries' default: 5 minutes). */
export const TOLERANCE_MS = 5 * 60 * 1000;

/** A request's headers as a receiver has them: fetch's `Headers`, or Node's
 * `IncomingHttpHeaders` (`req.headers`), or any plain object (names in any case). */
export type DeliveryHeaders =
  | Headers
  | Readonly<Record<string, string | readonly string[] | undefined>>;
/** The request body exactly as received: a Buffer (`express.raw()`), bytes, or its text. */
export type DeliveryBody = string | Uint8Array;

export interface VerifyOptions {
  /** The receiver's time (the clock's by default). */
  now?: Date;
  /** Milliseconds the signed time may be from `now`, either way (default 5 minutes). */
  tolerance?: number;
}

const encoder = new TextEncoder();

function bytesOf(body: DeliveryBody): Buffer {
  return typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
}

/** The headers by lowercase name; a repeated header's values joined as HTTP joins them. */
function named(headers: DeliveryHeaders): Map<string, string> {
  const found = new Map<string, string>();
  const entries: Iterable<[string, unknown]> =
    headers instanceof Headers ? headers.entries() : Object.entries(headers);
  for (const [name, value] of entries) {
    if (typeof value === "string") {
      found.set(name.toLowerCase(), value);
    } else if (Array.isArray(value)) {
      found.set(name.toLowerCase(), value.join(", "));
    }
  }
  return found;
}

/** Constant time for equal lengths (a signature's length is no secret). */
function same(expected: string, given: string): boolean {
  const a = encoder.encode(expected);
  const b = encoder.encode(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The `X-Service-Signature` value: `sha256=` and the lowercase hex HMAC-SHA256 of the body
 * bytes, keyed with the secret's UTF-8 bytes. */
export function sign(secret: string, body: DeliveryBody): string {
  return "sha256=" + createHmac("sha256", secret).update(bytesOf(body)).digest("hex");
}

/** The secret in the form the Standard Webhooks libraries take: they base64-decode what
 * follows `whsec_`, and so key with exactly the secret's UTF-8 bytes, as hangar does. */
export function whsec(secret: string): string {
  return "whsec_" + Buffer.from(secret, "utf8").toString("base64");
}

/** The id of the organization a delivery is for (its `X-Service-Organization` header), for a
 * receiver serving many: pick that organization's secret by it, then verify with
 * `verifyDelivery`. It is not signed itself, so trust nothing else on it before that; a forged
 * one only picks a secret the signature will not match. */
export function organizationOf(headers: DeliveryHeaders): string | null {
  return named(headers).get(ORGANIZATION_HEADER.toLowerCase())?.trim() || null;
}

/** True when `header` is `sha256=` and the lowercase hex HMAC-SHA256 of `body`, keyed with the
 * subscription's secret. Pass the body exactly as received (a re-serialised copy differs); the
 * comparison takes constant time. */
export function verifySignature(
  secret: string,
  body: DeliveryBody,
  header: string | null | undefined,
): boolean {
  if (header === null || header === undefined) {
    return false;
  }
  return same(sign(secret, body), header.trim());
}

/** True when a delivery is signed with `secret`, both ways, and recently:
 *
 * - `X-Service-Signature` (or, while a rotation's grace runs, `X-Service-Signature-Previous`,
 *   the previous secret's) over the body, so a receiver still holding the old secret keeps
 *   verifying until it is given the new one;
 * - and `webhook-signature` (one of its space-separated `v1,` values) over `webhook-id`,
 *   `webhook-timestamp` and the body, with the timestamp within `tolerance` of `now`. This is
 *   what refuses a copy sent again later, or under another id; drop repeats within the
 *   tolerance by `webhook-id` (`SeenDeliveries`).
 *
 * Header names are matched in any case, as HTTP has them. Comparisons take constant time. */
export function verifyDelivery(
  secret: string,
  body: DeliveryBody,
  headers: DeliveryHeaders,
  options: VerifyOptions = {},
): boolean {
  const found = named(headers);
  const signed =
    verifySignature(secret, body, found.get(SIGNATURE_HEADER.toLowerCase())) ||
    verifySignature(secret, body, found.get(PREVIOUS_SIGNATURE_HEADER.toLowerCase()));
  return (
    signed &&
    signedRecently(
      secret,
      body,
      found,
      options.now ?? new Date(),
      options.tolerance ?? TOLERANCE_MS,
    )
  );
}

function signedRecently(
  secret: string,
  body: DeliveryBody,
  found: Map<string, string>,
  now: Date,
  tolerance: number,
): boolean {
  const webhookId = found.get(WEBHOOK_ID_HEADER) ?? "";
  const timestamp = found.get(WEBHOOK_TIMESTAMP_HEADER) ?? "";
  // Whole seconds, at most 15 digits (a number of thousands of digits is no time).
  if (!webhookId || !/^[0-9]{1,15}$/.test(timestamp)) {
    return false;
  }
  const signedAt = Number(timestamp) * 1000;
  if (Math.abs(now.getTime() - signedAt) > tolerance) {
    return false;
  }
  // The package keys with exactly these bytes ("raw"), as hangar does (see `whsec`).
  const standard = new Webhook(encoder.encode(secret), { format: "raw" });
  const expected = standard.sign(webhookId, new Date(signedAt), bytesOf(body));
  const given = (found.get(WEBHOOK_SIGNATURE_HEADER) ?? "").split(/\s+/).filter(Boolean);
  // Every value is compared, found or not, so the time taken does not say which one matched.
  return given.map((value) => same(expected, value)).includes(true);
}

/** The `webhook-id`s of the deliveries a receiver took, so that one coming again (a retry
 * after a timeout, a Redeliver, a copy replayed within the tolerance) is answered with a 2xx
 * but handled once. In memory, the newest `limit` ids: in production keep the ids where you
 * keep your work (a unique key), so that a restart forgets none.
 *
 *     if (!verifyDelivery(SECRET, body, req.headers)) answer 401
 *     if (seen.firstTime(req.headers)) queue the work
 *     answer 204
 */
export class SeenDeliveries {
  private readonly ids = new Set<string>();

  constructor(private readonly limit = 100_000) {}

  /** True the first time a delivery's (verified) `webhook-id` is seen, false after. */
  firstTime(headers: DeliveryHeaders): boolean {
    const webhookId = named(headers).get(WEBHOOK_ID_HEADER) ?? "";
    if (this.ids.has(webhookId)) {
      // The newest again: forgotten last.
      this.ids.delete(webhookId);
      this.ids.add(webhookId);
      return false;
    }
    this.ids.add(webhookId);
    if (this.ids.size > this.limit) {
      const oldest = this.ids.values().next();
      if (!oldest.done) {
        this.ids.delete(oldest.value);
      }
    }
    return true;
  }
}

/** The delivery's body read (after `verifyDelivery`), typed by its `event`; InvalidPayload
 * when it is not a delivery's JSON. An event newer than this version's types arrives with an
 * `event` the union does not name: give your `switch` a default branch. */
export function parseEvent(body: DeliveryBody): WebhookEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === "string" ? body : Buffer.from(body).toString("utf8"));
  } catch (error) {
    throw new InvalidPayload(`a webhook body that is not JSON: ${String(error)}`);
  }
  if (
    !isRecord(parsed) ||
    typeof parsed["event"] !== "string" ||
    typeof parsed["delivered_at"] !== "string" ||
    !isRecord(parsed["data"])
  ) {
    throw new InvalidPayload("a webhook body that is not {event, delivered_at, data}");
  }
  return parsed as unknown as WebhookEvent;
}
