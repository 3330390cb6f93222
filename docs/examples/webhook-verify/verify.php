<?php
// Checks the signature of a leads webhook request (PHP 7.1+, no extension beyond the default hash).

/** How far X-Service-Timestamp may be from this server's clock, in seconds. */
const LEADS_WEBHOOK_TOLERANCE_SECONDS = 300;

/**
 * True when a leads webhook request was signed with $secret (the whole "svc_whsec_..." string)
 * less than LEADS_WEBHOOK_TOLERANCE_SECONDS ago. $rawBody is the request body exactly as received
 * (file_get_contents('php://input')), never json_decode'd and encoded again; $headers an array of
 * header names to values, any case (getallheaders()); $now Unix seconds.
 *
 * X-Service-Signature is made with the webhook's current secret. For 24 hours after a rotation,
 * X-Service-Signature-Previous is made with the secret the rotation replaced, so a receiver still
 * configured with that one keeps accepting deliveries until it is given the new one.
 */
function leads_verify_webhook(string $rawBody, array $headers, string $secret, ?float $now = null): bool
{
    $named = array_change_key_case($headers, CASE_LOWER);
    $timestamp = (string) ($named['x-service-timestamp'] ?? '');
    if (preg_match('/\A[0-9]+\z/', $timestamp) !== 1) {
        return false;
    }
    if (abs(($now ?? microtime(true)) - (int) $timestamp) > LEADS_WEBHOOK_TOLERANCE_SECONDS) {
        return false;
    }
    $expected = 'sha256=' . hash_hmac('sha256', $timestamp . '.' . $rawBody, $secret);
    foreach (['x-service-signature', 'x-service-signature-previous'] as $name) {
        if (hash_equals($expected, (string) ($named[$name] ?? ''))) {
            return true;
        }
    }
    return false;
}
