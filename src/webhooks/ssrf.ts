import dns from 'node:dns'
import net from 'node:net'

import ipaddr from 'ipaddr.js'

import {ValidationError} from '../shared/errors.js'

/** Resolves a hostname to every address it has, in resolver order. */
export type LookupFn = (hostname: string) => Promise<Array<{address: string; family: 4 | 6}>>

/** DNS through the OS resolver: dns.promises.lookup(host, {all: true, verbatim: true}). */
export const systemLookup: LookupFn = async (hostname) => {
  const addresses = await dns.promises.lookup(hostname, {all: true, verbatim: true})
  return addresses.map(({address, family}) => ({address, family: family === 6 ? 6 : 4}))
}

/** What webhooks may target: the allow list and resolver shared by registration checks and delivery. */
export interface TargetPolicy {
  /** host or host:port entries (lower-case) exempt from the private-address block (LEADS_WEBHOOK_ALLOW_HOSTS). */
  allowHosts: readonly string[]
  lookup: LookupFn
}

/** Thrown at delivery time when a target is not public; delivery treats it as terminal. */
export class SsrfBlockedError extends Error {
  readonly code = 'ESSRFBLOCKED'

  constructor(message: string) {
    super(message)
    this.name = 'SsrfBlockedError'
  }
}

const MAX_URL_LENGTH = 2048
const REJECTED = 'webhook url must be public HTTPS'
// ipaddr.js calls the deprecated IPv4-compatible block 'unicast' (URL turns [::127.0.0.1] into
// [::7f00:1]), yet some stacks still route it to the embedded IPv4 address, so it is not public.
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96')

/** The ipaddr.js range of an address (brackets allowed), or null when it does not parse. */
function addressRange(address: string): string | null {
  const bare = unbracket(address)
  if (!ipaddr.isValid(bare)) return null
  // process() unwraps IPv4-mapped IPv6 so ::ffff:127.0.0.1 is judged as 127.0.0.1.
  const parsed = ipaddr.process(bare)
  const range = parsed.range()
  return range === 'unicast' && parsed.kind() === 'ipv6' && parsed.match(IPV4_COMPATIBLE) ? 'ipv4Compatible' : range
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
}

const RANGE_PHRASES: Record<string, string> = {
  unspecified: 'an unspecified address',
  loopback: 'a loopback address',
  private: 'a private address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a unique-local address',
  carrierGradeNat: 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  reserved: 'a reserved address',
  rfc6052: 'a NAT64 address',
  ipv4Compatible: 'an IPv4-compatible address',
}

/** e.g. 'a loopback address', for error messages; rarer ranges go by their ipaddr.js name. */
function describeRange(range: string | null): string {
  if (range === null) return 'not an IP address'
  return RANGE_PHRASES[range] ?? `a non-public (${range}) address`
}

/** True only for globally routable unicast addresses; accepts v4/v6 text, with or without [brackets]. */
export function isPublicAddress(address: string): boolean {
  return addressRange(address) === 'unicast'
}

/** Parses a webhook URL: absolute HTTPS, no credentials, at most 2048 characters; ValidationError otherwise. */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > MAX_URL_LENGTH) throw new ValidationError(`webhook url must be at most ${MAX_URL_LENGTH} characters`, 'url')
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ValidationError('webhook url must be an absolute https:// URL', 'url')
  }
  if (url.protocol !== 'https:') throw new ValidationError(`webhook url must use https, got ${url.protocol}`, 'url')
  // Credentials in the URL would end up in logs and in every stored copy of the webhook.
  if (url.username || url.password) throw new ValidationError('webhook url must not contain credentials', 'url')
  if (!url.hostname) throw new ValidationError('webhook url must name a host', 'url')
  // Port 0 parses but can never be connected to.
  if (url.port === '0') throw new ValidationError('webhook url must not use port 0', 'url')
  // What is stored is the normalised form (percent-encoded), which can be longer than what was sent.
  if (url.href.length > MAX_URL_LENGTH) {
    throw new ValidationError(`webhook url must be at most ${MAX_URL_LENGTH} characters once normalised (percent-encoded); it has ${url.href.length}`, 'url')
  }
  return url
}

/** Whether the URL's host (and port, default 443) matches an allow entry: 'host' for any port, 'host:port' for one. */
export function isAllowedHost(url: URL, allowHosts: readonly string[]): boolean {
  const port = Number(url.port || 443)
  return allowHosts.some((entry) => {
    const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(entry)
    if (!match?.[1]) return false
    return normalizeHost(match[1]) === url.hostname && (match[2] === undefined || Number(match[2]) === port)
  })
}

/** Canonical form of a host as URL writes it, so '[0:0::1]' matches '[::1]' and '127.1' matches '127.0.0.1'. */
function normalizeHost(host: string): string | null {
  try {
    return new URL(`https://${host}/`).hostname
  } catch {
    return null
  }
}

/**
 * Registration/update check: parseWebhookUrl, then unless allowed: an IP-literal host must be
 * public; a name must resolve (via policy.lookup) and EVERY resolved address must be public.
 */
export async function checkWebhookUrl(raw: string, policy: TargetPolicy): Promise<URL> {
  const url = parseWebhookUrl(raw)
  if (isAllowedHost(url, policy.allowHosts)) return url
  const host = unbracket(url.hostname)
  if (net.isIP(host)) {
    if (!isPublicAddress(host)) throw new ValidationError(`${REJECTED}: ${host} is ${describeRange(addressRange(host))}`, 'url')
    return url
  }
  let addresses: Awaited<ReturnType<LookupFn>>
  try {
    addresses = await policy.lookup(host)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new ValidationError(`${REJECTED}: ${host} cannot be resolved${code ? ` (${code})` : ''}`, 'url')
  }
  if (addresses.length === 0) throw new ValidationError(`${REJECTED}: ${host} cannot be resolved`, 'url')
  // One private answer is enough to refuse: the resolver may hand out any of them at delivery.
  for (const {address} of addresses) {
    if (!isPublicAddress(address)) {
      throw new ValidationError(`${REJECTED}: ${host} resolves to ${address}, ${describeRange(addressRange(address))}`, 'url')
    }
  }
  return url
}

/** Delivery-time check of IP-literal hosts, which a lookup hook never sees: throws SsrfBlockedError unless public or allowed. No-op for names. */
export function checkLiteralTarget(url: URL, policy: TargetPolicy): void {
  const host = unbracket(url.hostname)
  if (!net.isIP(host) || isPublicAddress(host) || isAllowedHost(url, policy.allowHosts)) return
  throw new SsrfBlockedError(`webhook target ${host} is ${describeRange(addressRange(host))}`)
}

/**
 * A `lookup` for http(s).Agent / https.request that hands the socket only public addresses (all
 * of them when `allowed(hostname)`), so the address checked is the address connected to.
 */
export function guardedLookup(policy: TargetPolicy, allowed: (hostname: string) => boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family
    // Two-argument then(): an exception thrown by the socket's callback must not re-enter it as an error.
    policy.lookup(hostname).then(
      (answers) => {
        const candidates = family ? answers.filter((answer) => answer.family === family) : answers
        const usable = allowed(hostname) ? candidates : candidates.filter(({address}) => isPublicAddress(address))
        const first = usable[0]
        if (!first) {
          const seen = candidates.map(({address}) => address).join(', ') || 'nothing'
          callback(new SsrfBlockedError(`webhook target ${hostname} resolves to no public address (${seen})`), '')
        } else if (options.all) {
          callback(null, usable)
        } else {
          callback(null, first.address, first.family)
        }
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    )
  }
}
