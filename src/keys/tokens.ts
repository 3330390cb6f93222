import {createHash, randomBytes} from 'node:crypto'

const TOKEN_PATTERN = /^svc_[0-9a-f]{64}$/

/** Mints a Personal Access Token: `svc_` and 32 bytes from the CSPRNG as 64 hex characters. */
export function mintToken(): string {
  return `svc_${randomBytes(32).toString('hex')}`
}

/** The only form of a token the database ever holds. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token)
}
