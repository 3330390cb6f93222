// Package webhookverify checks the signature of a leads webhook request (Go 1.13+, standard library only).
package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// Tolerance is how far X-Service-Timestamp may be from this server's clock.
const Tolerance = 300 * time.Second

var digits = regexp.MustCompile(`^[0-9]+$`)

// Verify reports whether a leads webhook request was signed with secret (the whole
// "svc_whsec_..." string) less than Tolerance ago. rawBody is the request body exactly as
// received (io.ReadAll(r.Body)), never JSON decoded and encoded again.
//
// X-Service-Signature is made with the webhook's current secret. For 24 hours after a rotation,
// X-Service-Signature-Previous is made with the secret the rotation replaced, so a receiver still
// configured with that one keeps accepting deliveries until it is given the new one.
func Verify(rawBody []byte, header http.Header, secret string, now time.Time) bool {
	timestamp := header.Get("X-Service-Timestamp")
	if !digits.MatchString(timestamp) {
		return false
	}
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	age := now.Sub(time.Unix(seconds, 0))
	if age > Tolerance || age < -Tolerance {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + "."))
	mac.Write(rawBody)
	expected := []byte("sha256=" + hex.EncodeToString(mac.Sum(nil)))
	for _, name := range []string{"X-Service-Signature", "X-Service-Signature-Previous"} {
		if given := header.Get(name); given != "" && hmac.Equal([]byte(given), expected) {
			return true
		}
	}
	return false
}
