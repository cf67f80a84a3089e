/**
 * The fetch the client hands openapi-fetch: one GET, sent again as the retry rules say
 * (./policy.ts), and either a complete successful answer or one of the client's errors. The
 * body is read here, inside the retries, so an answer cut off mid-body is a connection failure
 * that is retried like a refused connection, and an error answer's text can become its error.
 */

import {
  APIConnectionError,
  APITimeoutError,
  type HangarClientError,
  HangarClientError as ClientErrorClass,
  errorFor,
} from "./errors.js";
import { type RetryPolicy, RetryState } from "./policy.js";

/** What `onRetry` is told before each wait: the failure that is being retried (a
 * `RateLimited`, a `ServerError`, an `APIConnectionError`), how long the client waits now, and
 * which retry of the request follows (1 for the first). */
export interface Retrying {
  readonly error: HangarClientError;
  readonly waitMs: number;
  readonly attempt: number;
}

/** The fetch the client sends with (the global one by default): tests and proxies pass their
 * own. */
export type Fetch = (input: Request, init?: RequestInit) => Promise<Response>;
/** Waits `ms`, or less when `signal` aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface Runtime {
  readonly policy: RetryPolicy;
  readonly timeoutMs: number;
  readonly fetch: Fetch;
  readonly now: () => Date;
  readonly sleep: Sleep;
  readonly random: () => number;
  readonly onRetry: ((retrying: Retrying) => void) | undefined;
}

// Statuses whose answers have no body: a Response cannot be built with one.
const NO_BODY = new Set([101, 204, 205, 304]);

/** The global setTimeout as a promise, ended early (resolved) by `signal`. */
export const realSleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
  });

/** openapi-fetch's `fetch` option: sends `request` until it succeeds or the rules give up. */
export function retryingFetch(runtime: Runtime): Fetch {
  return async (request: Request) => {
    // The path, never the URL: the calendar feed's query carries the key.
    const path = new URL(request.url).pathname;
    const retries = new RetryState();
    for (;;) {
      const error = await attempt(runtime, request, path);
      if (error instanceof Response) {
        return error; // the answer: nothing failed
      }
      const wait = retries.waitBeforeRetry(
        error,
        runtime.policy,
        runtime.now(),
        runtime.random,
      );
      if (wait === null) {
        throw error;
      }
      runtime.onRetry?.({ error, waitMs: wait, attempt: retries.attempts });
      await runtime.sleep(wait);
    }
  };
}

/** One attempt: the whole successful answer, or the error it amounts to. */
async function attempt(
  runtime: Runtime,
  request: Request,
  path: string,
): Promise<Response | HangarClientError> {
  let answer: Response;
  let bytes: ArrayBuffer;
  try {
    answer = await runtime.fetch(request.clone(), {
      signal: AbortSignal.timeout(runtime.timeoutMs),
    });
    bytes = await answer.arrayBuffer();
  } catch (failure) {
    if (failure instanceof ClientErrorClass) {
      throw failure; // an injected fetch's own verdict: not ours to retry
    }
    return connectionError(path, failure, runtime.timeoutMs);
  }
  const copy = new Response(NO_BODY.has(answer.status) ? null : bytes, {
    status: answer.status,
    statusText: answer.statusText,
    headers: answer.headers,
  });
  if (answer.ok) {
    return copy;
  }
  const text = new TextDecoder().decode(bytes);
  // The error keeps a readable copy: `error.response.text()` gives a proxy's page.
  return errorFor(copy.clone(), text, runtime.now());
}

function connectionError(path: string, failure: unknown, timeoutMs: number): APIConnectionError {
  const what = describe(failure);
  if (failure instanceof Error && failure.name === "TimeoutError") {
    return new APITimeoutError(`no answer in ${timeoutMs} ms to GET ${path} (${what})`, {
      cause: failure,
    });
  }
  return new APIConnectionError(`could not GET ${path} from hangar (${what})`, {
    cause: failure,
  });
}

/** `TypeError: fetch failed (ECONNREFUSED)`: Node's fetch says what happened in its cause. */
function describe(failure: unknown): string {
  if (!(failure instanceof Error)) {
    return String(failure);
  }
  const cause = failure.cause as { code?: unknown; message?: unknown } | undefined;
  const why = typeof cause?.code === "string" ? cause.code : cause?.message;
  const text = failure.message ? `${failure.name}: ${failure.message}` : failure.name;
  return typeof why === "string" && why ? `${text} (${why})` : text;
}
