// A webhook receiver: checks both signatures and the time, drops repeats, answers at once,
// works after.
// Run:  WEBHOOK_SECRET=<your secret> PORT=8080 node receiver.js
// Serve it behind TLS: webhooks are only ever sent to https:// URLs.
const crypto = require("node:crypto");
const http = require("node:http");

const SECRET = process.env.WEBHOOK_SECRET;
const TOLERANCE_S = 5 * 60; // a delivery signed longer ago (or ahead) than this is refused
const seen = new Set(); // in production: a unique key on the delivery id where you keep work

function signedWithSecret(rawBody, signature) {
  // Hash the bytes exactly as received, before any JSON parsing.
  const expected = Buffer.from(
    "sha256=" + crypto.createHmac("sha256", SECRET).update(rawBody).digest("hex"),
  );
  const given = Buffer.from(signature || "");
  // timingSafeEqual needs equal lengths; a signature's length is no secret.
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

function signedRecently(rawBody, headers) {
  // Standard Webhooks' signature covers webhook-id and webhook-timestamp as well as the
  // body: a copy sent again later is stale, and one given another id does not verify.
  const id = headers["webhook-id"] || "";
  const timestamp = headers["webhook-timestamp"] || "";
  if (!id || !/^[0-9]{1,15}$/.test(timestamp)) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_S) return false;
  const expected = Buffer.from(
    "v1," +
      crypto
        .createHmac("sha256", SECRET)
        .update(`${id}.${timestamp}.`)
        .update(rawBody)
        .digest("base64"),
  );
  // Several space-separated signatures while a secret is rotated: one of yours is enough.
  return (headers["webhook-signature"] || "")
    .split(" ")
    .map((given) => Buffer.from(given))
    .some((given) => given.length === expected.length && crypto.timingSafeEqual(given, expected));
}

function isAuthentic(rawBody, headers) {
  // While a secret is rotated, X-Service-Signature is made with the new secret and
  // X-Service-Signature-Previous with the old one: either one matching yours is enough, so
  // you can switch WEBHOOK_SECRET to the new secret at any time during the grace period.
  const signed =
    signedWithSecret(rawBody, headers["x-service-signature"]) ||
    signedWithSecret(rawBody, headers["x-service-signature-previous"]);
  return signed && signedRecently(rawBody, headers);
}

function handle(deliveryId, envelope) {
  // Your work goes here, after the answer has gone.
  console.log(deliveryId, envelope.event, JSON.stringify(envelope.data));
}

http
  .createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      if (req.method !== "POST" || !isAuthentic(raw, req.headers)) {
        res.writeHead(401).end();
        return;
      }
      // At once: an answer later than 10 s is a failed attempt, and hangar sends it again.
      res.writeHead(204).end();
      // The same delivery can come again (a retry after a timeout, a Redeliver, a copy
      // replayed within the tolerance): it has its 2xx, so that hangar stops sending it, but
      // it is handled only once. By webhook-id: the signature covers it.
      const deliveryId = req.headers["webhook-id"] || "";
      if (seen.has(deliveryId)) return;
      seen.add(deliveryId);
      setImmediate(() => {
        try {
          handle(deliveryId, JSON.parse(raw.toString("utf8")));
        } catch (error) {
          console.error(error); // one bad delivery must not stop the ones after it
        }
      });
    });
  })
  .listen(Number(process.env.PORT || 8080), "127.0.0.1");
