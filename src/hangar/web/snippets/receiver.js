// A webhook receiver that checks X-Service-Signature before trusting a delivery.
// Run:  WEBHOOK_SECRET=<your secret> PORT=8080 node receiver.js
// Serve it behind TLS: webhooks are only ever sent to https:// URLs.
const crypto = require("node:crypto");
const http = require("node:http");

const SECRET = process.env.WEBHOOK_SECRET;

function isAuthentic(rawBody, signature) {
  // Hash the bytes exactly as received, before any JSON parsing.
  const expected = Buffer.from(
    "sha256=" + crypto.createHmac("sha256", SECRET).update(rawBody).digest("hex"),
  );
  const given = Buffer.from(signature || "");
  // timingSafeEqual needs equal lengths; a signature's length is no secret.
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

http
  .createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      if (req.method !== "POST" || !isAuthentic(raw, req.headers["x-service-signature"])) {
        res.writeHead(401).end();
        return;
      }
      const envelope = JSON.parse(raw.toString("utf8"));
      // The same delivery can arrive twice (a retry after a timeout): drop repeats by id.
      console.log(req.headers["x-service-delivery"], envelope.event, envelope.data);
      res.writeHead(204).end();
    });
  })
  .listen(Number(process.env.PORT || 8080), "127.0.0.1");
