// A TCP proxy of the test's own between the daemon and MariaDB that breaks a connection at a
// chosen statement, as a dying server or a balancer giving up on one does.
import net from 'node:net'

/** A cut armed for the next query whose text matches; see CuttingProxy.cutNext. */
export interface Cut {
  /** Resolves once the query came: cut already ('before'), or sent on and its answer held back ('after'). */
  readonly reached: Promise<void>
  /** 'after' only: breaks the connection now, its answer never delivered. */
  finish(): void
}

/**
 * Listens on a loopback port and passes every connection through to `target`. `cutNext` arms
 * a cut for the next query packet whose text matches a pattern: 'before' breaks that
 * connection without passing the query on (the server never sees it), 'after' passes it on and
 * holds its answer back until `finish` breaks the connection (the server ran it; the client
 * never learns the outcome). `refuse` makes new connections close at once.
 */
export class CuttingProxy {
  private server!: net.Server
  private readonly sockets = new Set<net.Socket>()
  private armed: {pattern: RegExp; when: 'before' | 'after'; reach: () => void; breakConnection?: () => void} | null = null
  private refusing = false
  /** Connections broken by cuts so far. */
  cuts = 0

  constructor(private readonly target: {host: string; port: number}) {}

  /** The port clients connect to. */
  get port(): number {
    return (this.server.address() as net.AddressInfo).port
  }

  async start(): Promise<this> {
    this.server = net.createServer((client) => this.pass(client))
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    return this
  }

  cutNext(pattern: RegExp, when: 'before' | 'after'): Cut {
    if (this.armed) throw new Error('a cut is armed already')
    let reach!: () => void
    const reached = new Promise<void>((resolve) => (reach = resolve))
    const armed = {pattern, when, reach}
    this.armed = armed
    return {
      reached,
      finish: () => {
        const breakConnection = (armed as {breakConnection?: () => void}).breakConnection
        if (!breakConnection) throw new Error('the cut has not been reached')
        breakConnection()
      },
    }
  }

  /** Takes back a cut not reached yet. */
  disarm(): void {
    this.armed = null
  }

  /** New connections are closed at once while on (a database that cannot be reached). */
  refuse(on: boolean): void {
    this.refusing = on
  }

  /** Breaks every open connection (the pool's idle ones too), and waits until they are closed. */
  async breakAll(): Promise<void> {
    const closing = [...this.sockets].map((socket) => new Promise((resolve) => (socket.destroyed ? resolve(null) : socket.once('close', resolve))))
    for (const socket of this.sockets) socket.destroy()
    await Promise.all(closing)
  }

  async stop(): Promise<void> {
    await this.breakAll()
    await new Promise((resolve) => this.server.close(resolve))
  }

  private pass(client: net.Socket): void {
    if (this.refusing) {
      client.destroy()
      return
    }
    const server = net.connect(this.target)
    for (const socket of [client, server]) {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
      socket.on('error', () => undefined)
    }
    let holding = false
    const breakBoth = () => {
      this.cuts++
      client.destroy()
      server.destroy()
    }
    client.on('data', (chunk: Buffer) => {
      const armed = this.armed
      // A query packet: 3 bytes of length, the sequence number, COM_QUERY (3), then the text.
      if (armed && chunk[4] === 3 && armed.pattern.test(chunk.toString('utf8', 5))) {
        this.armed = null
        if (armed.when === 'before') {
          breakBoth()
        } else {
          holding = true
          server.write(chunk)
          Object.assign(armed, {breakConnection: breakBoth})
        }
        armed.reach()
        return
      }
      server.write(chunk)
    })
    server.on('data', (chunk: Buffer) => {
      if (!holding) client.write(chunk)
    })
    client.on('close', () => server.destroy())
    server.on('close', () => client.destroy())
  }
}
