/**
 * Where a request's time goes, read off the wire: tcpdump on loopback records every packet of one
 * HTTP port and of the database's port during a burst at c=1, and each request is split at its
 * packets into three phases:
 *   - before the database: from the request's first byte to the first byte sent to the database;
 *   - in the database: from there to the database's last byte before the answer (with several
 *     round trips, the answering process's work between them counts here too);
 *   - after the database: from there to the answer's first byte.
 * Nothing is added to the processes measured (tcpdump runs beside them, for every target alike),
 * and a build and the floor are split alike, so it tells time spent in the daemon's own code from
 * time spent in its statements. Needs tcpdump and
 * the right to capture (root, or CAP_NET_RAW); packets of other clients of the database during the
 * burst are told apart by their connection.
 */
import {execFile, spawn, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'

const TCPDUMP = '/usr/bin/tcpdump'

/** Medians over a burst's requests, in µs. */
export interface WirePhases {
  requests: number
  before_database_us: number
  database_us: number
  after_database_us: number
  total_us: number
}

export interface WireCapture {
  /** Stops the capture and splits what it saw; null when no request went to the database. */
  stop(): Promise<WirePhases | null>
}

/**
 * Why wire phases cannot be measured here, or null when they can: tcpdump is started on loopback
 * for a moment, and one that is missing or may not capture says so at once.
 */
export function wireCaptureProblem(): string | null {
  if (!fs.existsSync(TCPDUMP)) return `no tcpdump at ${TCPDUMP}: apt-get install -y tcpdump`
  const trial = spawnSync(TCPDUMP, ['-i', 'lo', '-c', '1', '-w', os.devNull, 'tcp port 1'], {timeout: 1000, encoding: 'utf8'})
  if (trial.status !== null && trial.status !== 0) return `tcpdump cannot capture on lo (root or CAP_NET_RAW): ${trial.stderr.trim().split('\n').at(-1)}`
  return null
}

/** Starts capturing the packets of `httpPort` and `databasePort` on loopback. */
export async function captureWire(httpPort: number, databasePort: number): Promise<WireCapture> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wire-')), 'burst.pcap')
  const child = spawn(TCPDUMP, ['-i', 'lo', '-nn', '-U', '-w', file, `tcp port ${httpPort} or tcp port ${databasePort}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  // tcpdump says "listening on lo" once packets are being kept.
  await new Promise<void>((resolve, reject) => {
    let said = ''
    child.stderr.on('data', (chunk: Buffer) => {
      said += chunk.toString()
      if (said.includes('listening on')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`tcpdump exited with ${code}: ${said.trim()}`)))
  })
  return {
    async stop() {
      child.kill('SIGINT')
      await exited
      const {stdout} = await promisify(execFile)(TCPDUMP, ['-r', file, '-nn', '-tt', '-q'], {maxBuffer: 1 << 30})
      fs.rmSync(path.dirname(file), {recursive: true, force: true})
      return splitRequests(readPackets(stdout), String(httpPort), String(databasePort))
    },
  }
}

interface Packet {
  seconds: number
  from: string
  to: string
}

/** The packets that carry data, from tcpdump's quick text: `<time> IP <addr>.<port> > <addr>.<port>: tcp <length>`. */
function readPackets(text: string): Packet[] {
  const packets: Packet[] = []
  for (const line of text.split('\n')) {
    const match = /^(\d+\.\d+) IP6? \S+\.(\d+) > \S+\.(\d+): tcp (\d+)$/.exec(line.trim())
    if (match && Number(match[4]) > 0) packets.push({seconds: Number(match[1]), from: match[2]!, to: match[3]!})
  }
  return packets
}

/** The phases of each request that went to the database, in the order of a c=1 burst. */
function splitRequests(packets: readonly Packet[], httpPort: string, databasePort: string): WirePhases | null {
  const phases = {before: [] as number[], database: [] as number[], after: [] as number[], total: [] as number[]}
  let request: {arrived: number; client?: string; sent?: number; answered?: number} | null = null
  for (const {seconds, from, to} of packets) {
    if (to === httpPort) request ??= {arrived: seconds}
    else if (request && to === databasePort) {
      // The first connection the request's process writes to after its arrival is the request's.
      request.client ??= from
      if (from === request.client) request.sent ??= seconds
    } else if (request?.client && from === databasePort && to === request.client) request.answered = seconds
    else if (request && from === httpPort) {
      if (request.sent !== undefined && request.answered !== undefined) {
        phases.before.push(request.sent - request.arrived)
        phases.database.push(request.answered - request.sent)
        phases.after.push(seconds - request.answered)
        phases.total.push(seconds - request.arrived)
      }
      request = null
    }
  }
  if (phases.total.length === 0) return null
  const medianUs = (values: number[]) => Math.round(1e6 * [...values].sort((a, b) => a - b)[values.length >> 1]!)
  return {
    requests: phases.total.length,
    before_database_us: medianUs(phases.before),
    database_us: medianUs(phases.database),
    after_database_us: medianUs(phases.after),
    total_us: medianUs(phases.total),
  }
}
