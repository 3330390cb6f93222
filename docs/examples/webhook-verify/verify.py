import hashlib
import hmac
import re
import time

# How far X-Service-Timestamp may be from this server's clock, in seconds.
TOLERANCE_SECONDS = 300


def verify_webhook(raw_body, headers, secret, now=None):
    """True when a leads webhook request was signed with `secret` (the whole `svc_whsec_...`
    string) less than TOLERANCE_SECONDS ago. `raw_body` is the request body exactly as received
    (bytes, never JSON parsed and serialised again); `headers` any mapping of header names to
    values (Flask's and Django's request.headers, or a dict); `now` Unix seconds.

    X-Service-Signature is made with the webhook's current secret. For 24 hours after a rotation,
    X-Service-Signature-Previous is made with the secret the rotation replaced, so a receiver
    still configured with that one keeps accepting deliveries until it is given the new one.
    """
    named = {name.lower(): value for name, value in headers.items()}
    timestamp = named.get("x-service-timestamp", "")
    if not re.fullmatch(r"[0-9]+", timestamp):
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > TOLERANCE_SECONDS:
        return False
    material = timestamp.encode("ascii") + b"." + raw_body
    expected = b"sha256=" + hmac.new(secret.encode("utf-8"), material, hashlib.sha256).hexdigest().encode("ascii")
    return any(
        hmac.compare_digest(named.get(name, "").encode("utf-8", "replace"), expected)
        for name in ("x-service-signature", "x-service-signature-previous")
    )
