/** The reservations calendar feed's subscription address. */

export const FEED_PATH = "/api/v1/external/reservations.ics";

/** The feed URL to paste into Google, Apple or Outlook calendar: the key travels in `?token=`,
 * because calendar clients cannot send headers. The URL is a credential for everything the key
 * can read: use a key with only `read:reservations`. `webcal: true` gives the `webcal://` form
 * some calendar apps open directly. */
export function calendarUrl(baseUrl: string, key: string, options: { webcal?: boolean } = {}): string {
  const url = new URL(baseUrl);
  url.pathname = url.pathname.replace(/\/+$/, "") + FEED_PATH;
  url.search = new URLSearchParams({ token: key }).toString();
  url.hash = "";
  const text = url.toString();
  return options.webcal ? text.replace(/^https?:/, "webcal:") : text;
}
