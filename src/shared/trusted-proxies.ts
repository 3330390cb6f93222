import net from 'node:net'

import {ConfigError} from './errors.js'

/**
 * The load balancers and proxies in front of the daemon (LEADS_TRUSTED_PROXIES), and the client
 * address a request came from through them.
 *
 * Only a listed peer's X-Forwarded-For is believed, and only as far as listed hops go: walking the
 * header from the right (each proxy appends the address it received from), the first hop that is
 * not a trusted proxy is the client. What a client writes into the header itself sits to the left
 * of that and is never reached, so it cannot pick the address its requests are counted under.
 */
export class TrustedProxies {
  private readonly list = new net.BlockList()

  constructor(readonly entries: readonly string[]) {
    for (const entry of entries) {
      const [address, prefix] = entry.split('/') as [string, string | undefined]
      const family = net.isIPv6(address) ? 'ipv6' : 'ipv4'
      if (prefix === undefined) this.list.addAddress(address, family)
      else this.list.addSubnet(address, Number(prefix), family)
    }
  }

  /** Parses the comma-separated addresses and CIDRs of LEADS_TRUSTED_PROXIES; a bad entry is a ConfigError naming it. */
  static parse(raw: string | undefined): TrustedProxies {
    const entries = (raw ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean)
    for (const entry of entries) {
      if (!isAddressOrCidr(entry)) {
        throw new ConfigError('LEADS_TRUSTED_PROXIES', `has "${entry}", which is neither an IP address nor a CIDR; expected e.g. 10.0.0.0/8,127.0.0.1`)
      }
    }
    return new TrustedProxies(entries)
  }

  trusts(address: string): boolean {
    const plain = unmapped(address)
    const family = net.isIP(plain)
    return family !== 0 && this.list.check(plain, family === 6 ? 'ipv6' : 'ipv4')
  }

  /**
   * The client's address: the socket peer, unless it is a trusted proxy; then the rightmost hop of
   * X-Forwarded-For (all its headers, in order) that is not one. A hop that is not an address ends
   * the walk at the trusted hop that passed it on; a header of trusted hops only gives its leftmost.
   */
  clientAddress(peer: string, forwardedFor: string | string[] | undefined): string {
    let client = unmapped(peer)
    if (this.entries.length === 0 || !this.trusts(client) || forwardedFor === undefined) return client
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',').map((hop) => unmapped(hop.trim()))
    for (const hop of hops.reverse()) {
      if (net.isIP(hop) === 0) break
      client = hop
      if (!this.trusts(hop)) break
    }
    return client
  }
}

function isAddressOrCidr(entry: string): boolean {
  const [address, prefix, ...rest] = entry.split('/')
  const family = net.isIP(address ?? '')
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)
}

/** An IPv4 address as a dual-stack socket reports it (::ffff:10.0.0.1) in its plain form. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address
}
