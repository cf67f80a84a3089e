/**
 * What a client is built from, checked before anything is sent: a key that cannot be one would
 * otherwise fail deep inside fetch (a line break in a header) or as a 401 that does not say
 * what is wrong. The messages never show the key.
 */

import { ConfigurationError, InvalidAPIKey } from "./errors.js";

export const KEY_PREFIX = "svc_pk_";
/** URL-safe characters after the prefix (the spec's key format). */
export const KEY_BODY_LENGTH = 43;
const URL_SAFE = /^[A-Za-z0-9_-]*$/;

/** `key`, if it is shaped like a hangar API key; else InvalidAPIKey saying why. */
export function apiKey(key: unknown, what = "the API key"): string {
  if (typeof key !== "string" || !key.trim()) {
    throw new InvalidAPIKey(
      "no API key: pass the organization's key (svc_pk_..., from Org Settings)",
    );
  }
  if (key !== key.trim()) {
    throw new InvalidAPIKey(`${what} has spaces or a line break around it: remove them`);
  }
  if (!key.startsWith(KEY_PREFIX)) {
    throw new InvalidAPIKey(`${what} does not start with ${KEY_PREFIX}: is it another secret?`);
  }
  const body = key.slice(KEY_PREFIX.length);
  if (!URL_SAFE.test(body)) {
    throw new InvalidAPIKey(
      `${what} has characters that are not URL-safe after ${KEY_PREFIX} ` +
        "(letters, digits, - and _): was it copied whole?",
    );
  }
  if (body.length !== KEY_BODY_LENGTH) {
    throw new InvalidAPIKey(
      `${what} has ${body.length} characters after ${KEY_PREFIX}, not ${KEY_BODY_LENGTH}: ` +
        "was it copied whole?",
    );
  }
  return key;
}

/** `text` without a trailing slash, if it is an http:// or https:// address with a host;
 * else ConfigurationError naming `what` it is. */
export function httpUrl(text: unknown, what: string): string {
  let url: URL | null = null;
  if (typeof text === "string") {
    try {
      url = new URL(text);
    } catch {
      url = null;
    }
  }
  if (url === null || !["http:", "https:"].includes(url.protocol) || !url.hostname) {
    throw new ConfigurationError(
      `${what} must be an http:// or https:// address, not ${JSON.stringify(text)}`,
    );
  }
  return (text as string).replace(/\/+$/, "");
}
