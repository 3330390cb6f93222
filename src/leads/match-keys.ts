/** Lower-cased, trimmed email: the form emails are matched and searched in. */
export function normalizeEmail(email: string | null): string | null {
  const trimmed = email?.trim().toLowerCase()
  return trimmed ? trimmed : null
}

/** Every digit of a phone number, formatting dropped; null when it has none. */
export function phoneDigits(phone: string | null): string | null {
  const digits = phone?.replace(/\D/g, '') ?? ''
  return digits === '' ? null : digits
}

/** The last 10 digits of a phone number, the key two leads' phones are matched on. */
export function phoneLast10(phone: string | null): string | null {
  return phoneDigits(phone)?.slice(-10) ?? null
}
