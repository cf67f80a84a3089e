/** The client's version (semantic: a minor version adds, never breaks), sent in its User-Agent.
 * 1.0.0: every operation of hangar's public API (with `getOrganization`), the events API as an
 * async iterator, typed errors, the Python client's retry rules, and `verifyDelivery`. */
export const VERSION = "1.0.0";
export const USER_AGENT = `hangar-client-typescript/${VERSION}`;
