/**
 * When to retry, and how long to wait first: decisions only, no I/O, no sleeping. The Python
 * client's rules (hangar_client.policy), in milliseconds.
 *
 * Every call the client makes is a GET, so any of them may be sent again. What is retried:
 *
 * - 429: hangar counts 60 requests per calendar minute and 1000 per calendar hour per key, and
 *   its 429 carries no Retry-After: the only way to know when the refusal ends is the bucket
 *   its detail names. So a 429 waits until that bucket opens, plus a little jitter so that many
 *   clients refused in one minute do not all return at its first instant. A 429 from something
 *   in front of hangar (no bucket) waits its Retry-After, else backs off.
 * - 502, 503, 504 and connection failures (refused, reset, timed out, cut off): exponential
 *   backoff with jitter, at least the Retry-After the answer asks for, never more than the cap.
 * - Nothing else: another 4xx will be refused again, and a 500 is a bug, not a blip.
 */

import {
  APIConnectionError,
  type HangarClientError,
  HangarError,
  RateLimited,
  bucketOpens,
} from "./errors.js";

export const RETRIED_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/** Bounds of the waiting.
 *
 * A 429 whose bucket opens later than `maxRateLimitWaitMs` from now is thrown at once
 * (`RateLimited`), never slept through: by default a minute bucket is waited for and an hour
 * bucket is not. 502, 503, 504 and connection failures are tried `maxRetries` more times,
 * waiting `backoffBaseMs` at most at first, doubling, never more than `backoffCapMs` (also
 * when a Retry-After asks for longer). */
export interface RetryPolicy {
  readonly maxRateLimitWaitMs: number;
  readonly maxRateLimitRetries: number;
  /** Up to this long after the bucket opens. */
  readonly rateLimitJitterMs: number;
  /** The first retry waits up to this, then doubling. */
  readonly backoffBaseMs: number;
  readonly backoffCapMs: number;
  /** As Stripe's and OpenAI's clients: three attempts in all. */
  readonly maxRetries: number;
}

export const DEFAULT_POLICY: RetryPolicy = Object.freeze({
  maxRateLimitWaitMs: 90_000,
  maxRateLimitRetries: 3,
  rateLimitJitterMs: 1_000,
  backoffBaseMs: 500,
  backoffCapMs: 8_000,
  maxRetries: 2,
});

/** Milliseconds from `now` until the refusing bucket opens, plus `jitterMs`; null when the
 * 429 names no bucket. */
export function rateLimitWait(error: RateLimited, now: Date, jitterMs: number): number | null {
  if (error.bucket === null) {
    return null;
  }
  return bucketOpens(error.bucket, now).getTime() - now.getTime() + jitterMs;
}

/** Exponential, capped, with "equal jitter": between half and all of the step, so it never
 * collapses to zero and retries spread out. */
export function backoff(attempt: number, policy: RetryPolicy, random: () => number): number {
  const step = Math.min(policy.backoffCapMs, policy.backoffBaseMs * 2 ** Math.min(attempt, 64));
  return step / 2 + (step / 2) * random();
}

/** The answer's Retry-After in milliseconds (RFC 9110 §10.2.3: seconds or an HTTP date), or
 * null when it has none that can be read. */
export function retryAfter(error: HangarError, now: Date): number | null {
  const value = error.response?.headers.get("Retry-After")?.trim();
  if (!value) {
    return null;
  }
  if (/^\d+$/.test(value)) {
    return Number(value) * 1000;
  }
  const moment = Date.parse(value);
  if (Number.isNaN(moment)) {
    return null;
  }
  return Math.max(0, moment - now.getTime());
}

/** Whether a failure may be met again by trying again (the policy's bounds aside). */
export function isRetried(error: HangarClientError): boolean {
  if (error instanceof HangarError) {
    return error.status === 429 || RETRIED_STATUSES.has(error.status);
  }
  return error instanceof APIConnectionError;
}

/** One request's retries so far. */
export class RetryState {
  rateLimited = 0;
  transient = 0;

  /** Milliseconds to wait before trying again, or null to give up (and throw `error`). */
  waitBeforeRetry(
    error: HangarClientError,
    policy: RetryPolicy,
    now: Date,
    random: () => number,
  ): number | null {
    if (!isRetried(error)) {
      return null;
    }
    if (error instanceof RateLimited) {
      return this.rateLimitedWait(error, policy, now, random);
    }
    if (this.transient >= policy.maxRetries) {
      return null;
    }
    this.transient += 1;
    const wait = backoff(this.transient - 1, policy, random);
    const asked = error instanceof HangarError ? retryAfter(error, now) : null;
    return Math.min(Math.max(wait, asked ?? 0), policy.backoffCapMs);
  }

  get attempts(): number {
    return this.rateLimited + this.transient;
  }

  private rateLimitedWait(
    error: RateLimited,
    policy: RetryPolicy,
    now: Date,
    random: () => number,
  ): number | null {
    if (this.rateLimited >= policy.maxRateLimitRetries) {
      return null;
    }
    let wait =
      rateLimitWait(error, now, policy.rateLimitJitterMs * random()) ?? retryAfter(error, now);
    if (wait === null) {
      wait = backoff(this.rateLimited, policy, random);
    }
    if (wait > policy.maxRateLimitWaitMs) {
      return null;
    }
    this.rateLimited += 1;
    return wait;
  }
}
