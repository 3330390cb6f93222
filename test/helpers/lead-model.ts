/**
 * What the interface says the write paths do, as a plain in-memory model to run beside the
 * daemon: single create (merge by email, else by the last 10 phone digits; lead.created only for
 * a genuine insert), bulk (rows in order, on_duplicate, dry_run, no events) and Idempotency-Key
 * (scoped per customer and endpoint, replayed byte for byte, 409 for another body).
 *
 * It is written from lead-service.md and contract.md, not from the daemon's code: sharing the
 * daemon's merge or matching functions would make the check agree with whatever they do.
 */

/** A lead body as the generator writes it: only the fields the model understands. */
export interface LeadBody {
  contact_name?: string
  contact_email?: string
  contact_phone?: string
  stage_slug?: string
  source_platform?: string
  source_type?: string
  custom_fields?: Record<string, string | number>
}

export interface ModelLead {
  /** The model's own id; bound to the daemon's id the first time a response names the lead. */
  ref: number
  contactName: string | null
  contactEmail: string | null
  contactPhone: string | null
  stage: string
  sourcePlatform: string
  sourceType: string
  customFields: Record<string, string | number>
}

export type Endpoint = 'create' | 'bulk'
export type OnDuplicate = 'update' | 'skip' | 'error'

/** A request as the daemon sees it. */
export type WriteRequest =
  | {endpoint: 'create'; body: LeadBody; key?: string}
  | {endpoint: 'bulk'; body: {leads: LeadBody[]; on_duplicate?: OnDuplicate; dry_run?: boolean}; key?: string}

/** What the model says a request does. `stored` is an earlier answer to replay byte for byte. */
export type Expected =
  | {kind: 'created' | 'merged'; lead: ModelLead}
  | {kind: 'bulk'; dryRun: boolean; rows: Array<{status: 'created' | 'updated' | 'skipped' | 'failed'; ref?: number}>}
  | {kind: 'invalid'}
  | {kind: 'key-conflict'}
  | {kind: 'replay'; status: number; text: string}

/** The schema's enums and the customer's setup, as the tests create it. */
export const STAGES = ['new', 'contacted', 'qualified', 'proposal', 'closed'] as const
export const SOURCE_PLATFORMS_USED = ['direct', 'referral', 'zillow'] as const
export const SOURCE_TYPES_USED = ['form', 'manual', 'import'] as const
/** Known custom fields: the reserved lead_line and a number field the test defines. */
const KNOWN_FIELDS: Record<string, (value: unknown) => boolean> = {
  lead_line: (value) => value === 'buyer' || value === 'seller',
  budget: (value) => typeof value === 'number' && Number.isFinite(value),
}
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

/** One customer's leads (oldest first), its lead.created events and its stored idempotent answers. */
export class CustomerModel {
  leads: ModelLead[] = []
  /** Refs of the leads a lead.created was emitted for, in order. */
  events: number[] = []
  /** `${endpoint} ${key}` → the canonical body and, once answered, the answer to replay. */
  keys = new Map<string, {canonical: string; status: number; text: string}>()

  constructor(private readonly nextRef: () => number) {}

  clone(): CustomerModel {
    const copy = new CustomerModel(this.nextRef)
    copy.leads = structuredClone(this.leads)
    copy.events = [...this.events]
    copy.keys = new Map(this.keys)
    return copy
  }

  /** What the request does, applied to the model. */
  apply(request: WriteRequest): Expected {
    if (request.key !== undefined) {
      const stored = this.keys.get(`${request.endpoint} ${request.key}`)
      if (stored) {
        return stored.canonical === canonicalJson(request.body) ? {kind: 'replay', status: stored.status, text: stored.text} : {kind: 'key-conflict'}
      }
    }
    return request.endpoint === 'create'
      ? this.create(request.body)
      : this.bulk(request.body.leads, request.body.on_duplicate ?? 'update', request.body.dry_run ?? false)
  }

  /** Keeps the daemon's first answer under the request's key (4xx and 2xx are kept; 5xx and 429 are not). */
  remember(request: WriteRequest, status: number, text: string): void {
    if (request.key === undefined || status >= 500 || status === 429) return
    this.keys.set(`${request.endpoint} ${request.key}`, {canonical: canonicalJson(request.body), status, text})
  }

  private create(body: LeadBody): Expected {
    const input = readInput(body)
    if (!input) return {kind: 'invalid'}
    const match = this.match(input)
    if (match) {
      mergeInto(match, input)
      return {kind: 'merged', lead: match}
    }
    const lead = this.insert(input, 'manual')
    this.events.push(lead.ref)
    return {kind: 'created', lead}
  }

  private bulk(rows: LeadBody[], onDuplicate: OnDuplicate, dryRun: boolean): Expected {
    // A dry run reports what would happen and writes nothing: run it on a copy.
    const target = dryRun ? this.clone() : this
    const results = rows.map((row) => {
      const input = readInput(row)
      if (!input) return {status: 'failed' as const}
      const match = target.match(input)
      if (!match) return {status: 'created' as const, ref: target.insert(input, 'import').ref}
      if (onDuplicate === 'skip') return {status: 'skipped' as const, ref: match.ref}
      if (onDuplicate === 'error') return {status: 'failed' as const}
      mergeInto(match, input)
      return {status: 'updated' as const, ref: match.ref}
    })
    return {kind: 'bulk', dryRun, rows: results}
  }

  /** The oldest lead with the input's email, else the oldest with its phone's last 10 digits. */
  private match(input: Input): ModelLead | undefined {
    const email = input.contactEmail?.toLowerCase()
    const byEmail = email === undefined ? undefined : this.leads.find((lead) => lead.contactEmail?.toLowerCase() === email)
    if (byEmail) return byEmail
    const phone = input.contactPhone === undefined ? undefined : last10(input.contactPhone)
    return phone === undefined ? undefined : this.leads.find((lead) => lead.contactPhone !== null && last10(lead.contactPhone) === phone)
  }

  private insert(input: Input, defaultSourceType: string): ModelLead {
    const lead: ModelLead = {
      ref: this.nextRef(),
      contactName: input.contactName ?? null,
      contactEmail: input.contactEmail ?? null,
      contactPhone: input.contactPhone ?? null,
      stage: input.stage ?? STAGES[0],
      sourcePlatform: input.sourcePlatform ?? 'direct',
      sourceType: input.sourceType ?? defaultSourceType,
      customFields: {...input.customFields},
    }
    this.leads.push(lead)
    return lead
  }
}

/** A lead body read as the contract says: strings trimmed, blank means not given, unknown custom fields dropped. */
interface Input {
  contactName?: string
  contactEmail?: string
  contactPhone?: string
  stage?: string
  sourcePlatform?: string
  sourceType?: string
  customFields: Record<string, string | number>
}

/** The input, or undefined when the daemon must refuse it (400 alone, a failed row in bulk). */
function readInput(body: LeadBody): Input | undefined {
  const given = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim())
  const input: Input = {
    contactName: given(body.contact_name),
    contactEmail: given(body.contact_email),
    contactPhone: given(body.contact_phone),
    stage: given(body.stage_slug),
    sourcePlatform: given(body.source_platform),
    sourceType: given(body.source_type),
    customFields: {},
  }
  if (input.contactName === undefined && input.contactEmail === undefined && input.contactPhone === undefined) return undefined
  if (input.contactEmail !== undefined && !EMAIL.test(input.contactEmail)) return undefined
  if (input.contactPhone !== undefined && input.contactPhone.replace(/\D/g, '') === '') return undefined
  if (input.stage !== undefined && !(STAGES as readonly string[]).includes(input.stage)) return undefined
  for (const [slug, value] of Object.entries(body.custom_fields ?? {})) {
    const valid = KNOWN_FIELDS[slug]
    if (!valid) continue
    const trimmed = typeof value === 'string' ? value.trim() : value
    if (!valid(trimmed)) return undefined
    input.customFields[slug] = trimmed
  }
  return input
}

/** Given fields overwrite, absent ones are kept, custom fields merge key by key. */
function mergeInto(lead: ModelLead, input: Input): void {
  lead.contactName = input.contactName ?? lead.contactName
  lead.contactEmail = input.contactEmail ?? lead.contactEmail
  lead.contactPhone = input.contactPhone ?? lead.contactPhone
  lead.stage = input.stage ?? lead.stage
  lead.sourcePlatform = input.sourcePlatform ?? lead.sourcePlatform
  lead.sourceType = input.sourceType ?? lead.sourceType
  lead.customFields = {...lead.customFields, ...input.customFields}
}

function last10(phone: string): string | undefined {
  const digits = phone.replace(/\D/g, '')
  return digits === '' ? undefined : digits.slice(-10)
}

/** JSON with keys sorted at every depth: bodies equal up to key order and whitespace compare equal. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`)
      .join(',')}}`
  }
  return JSON.stringify(value)
}
