// Verifies deliveries with the official Standard Webhooks library, as a receiver would.
// stdin: a JSON list of {body_base64, headers, secret}; stdout: a JSON list, one answer each:
// {"ok": true, "payload": <the parsed body>} or {"ok": false, "error": "<why>"}.
// The body goes in as the raw bytes received (a Buffer), never re-serialized JSON.
"use strict";

const { Webhook } = require("standardwebhooks");

function verifyOne({ body_base64: bodyBase64, headers, secret }) {
  try {
    const payload = new Webhook(secret).verify(Buffer.from(bodyBase64, "base64"), headers);
    return { ok: true, payload };
  } catch (error) {
    return { ok: false, error: String(error && error.message ? error.message : error) };
  }
}

const chunks = [];
process.stdin.on("data", (chunk) => chunks.push(chunk));
process.stdin.on("end", () => {
  const cases = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  process.stdout.write(JSON.stringify(cases.map(verifyOne)));
});
