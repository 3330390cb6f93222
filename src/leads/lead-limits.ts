import {ValidationError} from '../shared/errors.js'
import type {CustomFields} from './lead-types.js'

/**
 * Limits of a lead that the columns impose (see migrations/): the same on both backends, so
 * SQLite, which stores anything, refuses what MySQL would. test/src/db/column-limits.test.ts
 * checks every input cap against its column.
 */
export const LEAD_LIMITS = {
  contactName: 200,
  contactPhone: 64,
  /** Digits of a phone (leads.phone_digits); E.164 needs 15, the rest is room for extensions. */
  phoneDigits: 32,
  contactEmail: 254,
  stageSlug: 64,
  /** Characters of one custom-field string value. */
  customFieldValue: 2000,
  /** UTF-8 bytes of a lead's custom fields as stored (JSON in leads.custom_fields, a TEXT column of 65,535 bytes). */
  customFieldsBytes: 32_768,
} as const

/** Throws when a lead's custom fields, as they would be stored, exceed LEAD_LIMITS.customFieldsBytes. */
export function checkCustomFieldsSize(customFields: CustomFields): void {
  const bytes = Buffer.byteLength(JSON.stringify(customFields), 'utf8')
  if (bytes > LEAD_LIMITS.customFieldsBytes) {
    throw new ValidationError(`custom_fields of one lead may take at most ${LEAD_LIMITS.customFieldsBytes} bytes as JSON; these take ${bytes}`, 'custom_fields')
  }
}
