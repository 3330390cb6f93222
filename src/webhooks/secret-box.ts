import {createCipheriv, createDecipheriv, hkdfSync, randomBytes} from 'node:crypto'

const IV_BYTES = 12
const TAG_BYTES = 16

/** Mints a webhook signing secret: `svc_whsec_` and 32 random bytes as hex. */
export function mintWebhookSecret(): string {
  return `svc_whsec_${randomBytes(32).toString('hex')}`
}

/**
 * Encrypts webhook secrets at rest with AES-256-GCM under a key derived from the master key
 * (HKDF, so the cursor-signing key and this one never coincide). Stored form: base64 of
 * iv | tag | ciphertext.
 */
export class SecretBox {
  private readonly key: Buffer

  constructor(masterKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'leads-webhook-secrets-v1', 32))
  }

  seal(plain: string): string {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')
  }

  /** Throws when the stored value was altered or sealed under another master key. */
  open(sealed: string): string {
    const raw = Buffer.from(sealed, 'base64')
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES))
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
  }
}
