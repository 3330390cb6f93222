// What the failover tests measure: creates made while Redis fails over, and what the receiver got.
import {postJson} from './api.js'
import type {TestTenant} from './fixtures.js'
import {waitUntil} from './local-servers.js'
import type {Receiver} from './receiver.js'
import type {TestDaemon} from './test-daemon.js'

export interface CreateRun {
  /** Every lead created, in order; each create answered 201. */
  leadIds: string[]
  /** Status codes other than 201, with the create's index (none expected). */
  refusals: Array<{index: number; status: number; body: string}>
  /** The slowest create, in ms. */
  slowestMs: number
}

/**
 * Creates `count` leads one after another, calling `fault` (not awaited by the creates) before
 * the create numbered `faultAt`, so the fault lands in the middle of the stream of creates.
 */
export async function createDuring(
  daemon: TestDaemon,
  tenant: TestTenant,
  count: number,
  faultAt: number,
  fault: () => Promise<void>,
): Promise<CreateRun & {fault: Promise<void>}> {
  const run: CreateRun = {leadIds: [], refusals: [], slowestMs: 0}
  let faulted: Promise<void> = Promise.resolve()
  for (let index = 0; index < count; index++) {
    if (index === faultAt) faulted = fault()
    const started = performance.now()
    const response = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: `Failover ${index}`})
    run.slowestMs = Math.max(run.slowestMs, performance.now() - started)
    if (response.status === 201) run.leadIds.push((response.body as {lead: {id: string}}).lead.id)
    else run.refusals.push({index, status: response.status, body: response.text.slice(0, 300)})
  }
  return {...run, fault: faulted}
}

export interface DeliveryAudit {
  /** Leads whose lead.created never reached the receiver. */
  missing: string[]
  /** Delivery ids the receiver got more than once, with how many times. */
  duplicates: Record<string, number>
  /** Requests the receiver got for these leads. */
  received: number
}

/** Matches what the receiver got against the leads created: lost events and duplicate deliveries. */
export function auditDeliveries(receiver: Receiver, leadIds: readonly string[]): DeliveryAudit {
  const wanted = new Set(leadIds)
  const deliveredLeads = new Set<string>()
  const timesByDelivery = new Map<string, number>()
  let received = 0
  for (const request of receiver.requests) {
    const body = JSON.parse(request.rawBody.toString('utf8')) as {event: string; lead: {id: string}}
    if (body.event !== 'lead.created' || !wanted.has(body.lead.id)) continue
    received++
    deliveredLeads.add(body.lead.id)
    const deliveryId = String(request.headers['x-service-delivery'])
    timesByDelivery.set(deliveryId, (timesByDelivery.get(deliveryId) ?? 0) + 1)
  }
  return {
    missing: leadIds.filter((id) => !deliveredLeads.has(id)),
    duplicates: Object.fromEntries([...timesByDelivery].filter(([, times]) => times > 1)),
    received,
  }
}

/** The daemons' warnings during a fault, `message (first error)` once each: what the failover looked like from inside. */
export function warningsOf(daemons: readonly TestDaemon[]): string[] {
  const seen = new Map<string, string>()
  for (const line of daemons.flatMap((daemon) => daemon.logs.join('').split('\n'))) {
    if (!line.startsWith('{')) continue
    const entry = JSON.parse(line) as {level?: number; msg?: string; err?: {message?: string}}
    // pino level 40 is warn.
    if (entry.level !== 40 || !entry.msg || seen.has(entry.msg)) continue
    seen.set(entry.msg, entry.err?.message ?? '')
  }
  return [...seen].map(([message, error]) => (error ? `${message} (${error.slice(0, 120)})` : message))
}

/**
 * Waits (up to a minute) for every lead.created of the run, then prints what the failover cost:
 * creates, the slowest, deliveries received, lost and duplicated, and the daemons' warnings
 * meanwhile. Returns the audit and the warnings for the test to assert on.
 */
export async function reportFailover(
  label: string,
  receiver: Receiver,
  run: CreateRun,
  startedAt: number,
  daemons: readonly TestDaemon[],
): Promise<{audit: DeliveryAudit; warnings: string[]}> {
  await waitUntil(() => auditDeliveries(receiver, run.leadIds).missing.length === 0, 'every lead.created of the run', 60_000).catch(() => undefined)
  const audit = auditDeliveries(receiver, run.leadIds)
  console.log(
    `      ${label}: ${run.leadIds.length} creates (slowest ${Math.round(run.slowestMs)} ms), ${audit.received} deliveries received, ` +
      `${audit.missing.length} lost, ${Object.keys(audit.duplicates).length} delivered more than once ${JSON.stringify(audit.duplicates)}, ` +
      `all delivered after ${Math.round((performance.now() - startedAt) / 1000)} s`,
  )
  const warnings = warningsOf(daemons)
  console.log(`      warnings meanwhile: ${warnings.join('; ')}`)
  return {audit, warnings}
}

/** Once the API daemon is ready again, three more creates, each delivered: dispatch works after the failover. */
export async function createAfterFailover(api: TestDaemon, tenant: TestTenant, receiver: Receiver): Promise<void> {
  await waitUntil(async () => (await api.request('/readyz')).status === 200, 'the API daemon to be ready again', 20_000)
  const after: string[] = []
  for (let i = 0; i < 3; i++) {
    const created = await postJson(api, tenant, '/api/agents/crm/leads', {contact_name: `After failover ${i}`})
    if (created.status !== 201) throw new Error(`a create after the failover answered ${created.status}: ${created.text}`)
    after.push((created.body as {lead: {id: string}}).lead.id)
  }
  await waitUntil(() => auditDeliveries(receiver, after).missing.length === 0, 'the deliveries after the failover', 15_000)
}
