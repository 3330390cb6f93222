/** An API token (`svc_` and 64 hex) or a webhook signing secret (`svc_whsec_` and 64 hex), or a good part of one. */
const SECRET = /svc_(whsec_)?[0-9a-f]{16,}/gi

/**
 * The text with every API token and webhook signing secret in it cut to its kind and last four
 * characters (`svc_…fb25`, as `leads config` shows a token): a message that quotes a value typed
 * in the wrong place (a token given as a key id, a secret as a webhook id) must not show the
 * secret again, on a terminal, in a log or in an API answer.
 */
export function withoutSecrets(text: string): string {
  return text.replace(SECRET, (secret, whsec: string | undefined) => `svc_${whsec ?? ''}…${secret.slice(-4)}`)
}
