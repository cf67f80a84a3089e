<?php
// A webhook receiver: checks both signatures and the time, drops repeats, answers at once,
// queues the work.
// Run:  WEBHOOK_SECRET=<your secret> QUEUE_DIR=/var/spool/hangar php -S 127.0.0.1:8080 receiver.php
// (or behind your web server, as the script of the webhook's URL). Serve it behind TLS:
// webhooks are only ever sent to https:// URLs. Each new delivery is written to QUEUE_DIR as
// <delivery id>.json, for a worker (cron, a queue consumer) to handle after the answer.

function signed_with_secret(string $secret, string $raw_body, ?string $signature): bool
{
    // Hash the bytes exactly as received, before any JSON parsing.
    $expected = 'sha256=' . hash_hmac('sha256', $raw_body, $secret);
    // hash_equals takes the same time wherever the two values differ.
    return $signature !== null && hash_equals($expected, $signature);
}

function signed_recently(string $secret, string $raw_body): bool
{
    // Standard Webhooks' signature covers webhook-id and webhook-timestamp as well as the
    // body: a copy sent again later is stale, and one given another id does not verify.
    $id = $_SERVER['HTTP_WEBHOOK_ID'] ?? '';
    $timestamp = $_SERVER['HTTP_WEBHOOK_TIMESTAMP'] ?? '';
    if ($id === '' || !preg_match('/^[0-9]{1,15}$/D', $timestamp)) {
        return false;
    }
    if (abs(time() - (int) $timestamp) > 5 * 60) { // the tolerance: 5 minutes either way
        return false;
    }
    $mac = hash_hmac('sha256', "$id.$timestamp.$raw_body", $secret, true);
    $expected = 'v1,' . base64_encode($mac);
    // Several space-separated signatures while a secret is rotated: one of yours is enough.
    foreach (explode(' ', $_SERVER['HTTP_WEBHOOK_SIGNATURE'] ?? '') as $given) {
        if (hash_equals($expected, $given)) {
            return true;
        }
    }
    return false;
}

$secret = getenv('WEBHOOK_SECRET');
if ($secret === false || $secret === '') {
    error_log('WEBHOOK_SECRET is not set');
    http_response_code(500);
    exit;
}
$raw = file_get_contents('php://input');
// While a secret is rotated, X-Service-Signature is made with the new secret and
// X-Service-Signature-Previous with the old one: either one matching yours is enough, so
// you can switch WEBHOOK_SECRET to the new secret at any time during the grace period.
$signed = signed_with_secret($secret, $raw, $_SERVER['HTTP_X_SERVICE_SIGNATURE'] ?? null)
    || signed_with_secret($secret, $raw, $_SERVER['HTTP_X_SERVICE_SIGNATURE_PREVIOUS'] ?? null);
$authentic = $signed && signed_recently($secret, $raw);
if ($_SERVER['REQUEST_METHOD'] !== 'POST' || !$authentic) {
    http_response_code(401);
    exit;
}

// The delivery's id (webhook-id: the signature covers it) names its file (a UUID: checked,
// since it becomes a path).
$delivery_id = $_SERVER['HTTP_WEBHOOK_ID'];
if (!preg_match('/^[A-Za-z0-9-]{1,64}$/D', $delivery_id)) {
    http_response_code(400);
    exit;
}
$queue = getenv('QUEUE_DIR') ?: sys_get_temp_dir() . '/hangar-webhooks';
is_dir($queue) || @mkdir($queue, 0700, true);
$file = tempnam($queue, '.incoming-');
file_put_contents($file, $raw);
// The same delivery can come again (a retry after a timeout, a Redeliver, a copy replayed
// within the tolerance): link() fails when
// its file is there already, so a repeat gets its 2xx, so that hangar stops sending it, but is
// queued only once; and a worker never reads half a file. The worker keeps handled files (or
// their names) for as long as repeats can come.
@link($file, "$queue/$delivery_id.json");
unlink($file);
// At once: an answer later than 10 s is a failed attempt, and hangar sends it again.
http_response_code(204);
