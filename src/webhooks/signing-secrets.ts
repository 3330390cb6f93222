import type {SecretBox} from './secret-box.js'

/**
 * How long after a rotation every delivery request also carries X-Service-Signature-Previous,
 * made with the secret the rotation replaced: the receiver's window to switch to the new secret
 * without rejecting a delivery (docs/api.md, "Verifying deliveries").
 */
export const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000

/** The secrets one request is signed with: the current one, and the previous one during the overlap (else null). */
export interface SigningSecrets {
  current: string
  previous: string | null
}

/** A webhook's secrets as stored, each sealed by the SecretBox. */
export interface SealedSecrets {
  secretCiphertext: string
  /** The secret the last rotation replaced; null before the first rotation. */
  previousSecretCiphertext: string | null
  secretRotatedAt: number | null
}

/**
 * Opens the secrets that sign a request sent at `now`: the previous one only within
 * SECRET_OVERLAP_MS of the rotation, and only when it still opens.
 */
export function signingSecrets(sealed: SealedSecrets, box: SecretBox, now: number): SigningSecrets {
  const {previousSecretCiphertext: previous, secretRotatedAt: rotatedAt} = sealed
  const overlapping = previous !== null && rotatedAt !== null && now < rotatedAt + SECRET_OVERLAP_MS
  return {current: box.open(sealed.secretCiphertext), previous: overlapping ? openedOrNull(previous, box) : null}
}

/**
 * After a lost master key, customers rotate under the new one, and the secret a rotation retires
 * was sealed under the lost key: it signs nothing, and must not stop what the current one signs.
 */
function openedOrNull(sealed: string, box: SecretBox): string | null {
  try {
    return box.open(sealed)
  } catch {
    return null
  }
}
