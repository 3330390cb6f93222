import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'
import mysql from 'mysql2/promise'

import {type DaemonProcess, spawnDaemon} from '../../bench/daemon-process.js'
import {LeadsApiClient} from '../../src/client/api-client.js'
import {LeadWriter} from '../../src/client/lead-writer.js'
import {pullLeads} from '../../src/client/pull.js'
import {loadConfig} from '../../src/config/config.js'
import {HEARTBEAT_MS, LIVE_MS} from '../../src/db/writer-nodes.js'
import {createServices, type Services} from '../../src/services.js'
import {TEST_MASTER_KEY} from '../helpers/backends.js'
import {runCliProcess} from '../helpers/cli.js'
import {GaleraCluster, TOPOLOGY_SUITE_BASE_PORT} from '../helpers/galera.js'
import {freePort, killRedis, startRedis, waitUntil} from '../helpers/local-servers.js'
import {Receiver} from '../helpers/receiver.js'

const LEADS = '/api/agents/crm/leads'
const CLIENTS = 32
/** Traffic runs this long before the writer node is killed, and this long after writes are back. */
const BEFORE_KILL_MS = 8_000
const AFTER_RECOVERY_MS = 5_000

/**
 * MariaDB past one server, on loopback: a three-node Galera cluster started by the test (rsync
 * state transfer), HAProxy sending every connection to one node (node 1, the others backups,
 * health checked on wsrep_local_state), two `--role api` daemons and a worker on it, an own
 * Redis and an HTTPS receiver. The writer node is killed under a steady mix of creates, merges,
 * bulk and a following pull; then it comes back; then two of three nodes are lost.
 */
describe('on a MariaDB Galera cluster (three nodes, HAProxy single writer)', function () {
  this.timeout(600_000)

  let dir: string
  let cluster: GaleraCluster
  let redis: Awaited<ReturnType<typeof startRedis>>
  let env: Record<string, string>
  let services: Services
  let receiver: Receiver
  const apis: DaemonProcess[] = []
  const daemons: DaemonProcess[] = []
  /** The log file of each daemon the suite keeps running throughout: one that dies on its own is reported with it. */
  const logs = new Map<DaemonProcess, string>()
  let customerId: string
  let token: string
  const killAll = () => cluster?.killAllNow()

  before(async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-galera-'))
    process.once('exit', killAll)
    // LEADS_GALERA_BASE_PORT moves the cluster off the ports CI's run of this suite uses.
    cluster = await GaleraCluster.start(dir, {basePort: Number(process.env['LEADS_GALERA_BASE_PORT'] ?? TOPOLOGY_SUITE_BASE_PORT)})
    const admin = await mysql.createConnection({uri: cluster.url})
    await admin.query('CREATE DATABASE leads CHARACTER SET utf8mb4')
    await admin.end()
    const redisPort = await freePort()
    redis = await startRedis(redisPort)
    env = {
      LEADS_DATABASE_URL: `${cluster.url}/leads`,
      LEADS_REDIS_URL: `redis://127.0.0.1:${redisPort}/0`,
      LEADS_MASTER_KEY: TEST_MASTER_KEY,
      LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost',
      LEADS_LOG_LEVEL: 'warn',
      LEADS_METRICS: '1',
    }
    services = await createServices(loadConfig(env), {autoMigrate: true})
    receiver = await new Receiver().start()
    customerId = (await services.customers.create({name: 'Galera Realty'})).id
    await services.rateLimits.set({type: 'customer', id: customerId}, {perMinute: 100_000, perHour: 1_000_000, bulkPerMinute: 1000})
    await services.webhooks.create(customerId, {url: receiver.url, event_types: ['lead.created'], timeout_seconds: 5})
    token = (await services.keys.issue({customerId, scopes: ['public_api:leads:read', 'public_api:leads:write']})).token
    const logged = async (role: 'api' | 'worker', name: string) => {
      const log = path.join(dir, `${name}.log`)
      const daemon = await spawnDaemon(env, role, undefined, undefined, log)
      logs.set(daemon, log)
      return daemon
    }
    apis.push(...(await Promise.all([logged('api', 'api0'), logged('api', 'api1')])))
    daemons.push(...apis, await logged('worker', 'worker'))
  })

  after(async function () {
    // A daemon that died on its own is reported with the end of its log, before the directory goes.
    for (const [daemon, log] of logs) {
      if (daemon.child.exitCode === null && daemon.child.signalCode === null) continue
      const tail = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n').slice(-20).join('\n') : '(no log)'
      console.log(`      ${path.basename(log, '.log')} exited (${daemon.child.exitCode ?? daemon.child.signalCode}); its log ends:\n${tail}`)
    }
    await Promise.all(daemons.map((daemon) => daemon.stop().catch(() => undefined)))
    await receiver?.stop()
    await services?.close().catch(() => undefined)
    if (redis) await killRedis(redis)
    await cluster?.stop()
    process.removeListener('exit', killAll)
    if (dir) fs.rmSync(dir, {recursive: true, force: true})
  })

  const headers = () => ({authorization: `Bearer ${token}`, 'x-customer-id': customerId, 'content-type': 'application/json'})
  /** Every status the API answered, and when: the 5xx among them are what the suite is about. */
  const statuses = new Map<number, number>()
  /** When a write was last refused (503, or its connection dropped). */
  let lastRefusedAt = 0
  const tally = (status: number) => {
    statuses.set(status, (statuses.get(status) ?? 0) + 1)
    if (status === 503 || status === 0) lastRefusedAt = Date.now()
  }

  /**
   * Sends a write until it is answered 2xx, as an integrator's client would: the same body and
   * Idempotency-Key again after a dropped connection, a 5xx or a 409 (its first attempt still in
   * flight). Returns the answer and when the request that got it was sent.
   */
  async function write(url: string, body: unknown, key: string): Promise<{body: any; sentAt: number}> {
    for (let attempt = 0; attempt < 600; attempt++) {
      const sentAt = Date.now()
      try {
        const response = await fetch(url, {method: 'POST', headers: {...headers(), 'idempotency-key': key}, body: JSON.stringify(body)})
        const text = await response.text()
        tally(response.status)
        if (response.status === 503) expect(response.headers.get('retry-after'), 'Retry-After on a 503').to.match(/^\d+$/)
        if (response.status < 300) return {body: JSON.parse(text), sentAt}
        if (response.status < 500 && response.status !== 409) throw new Error(`${key}: ${response.status} ${text}`)
      } catch (error) {
        if ((error as Error).message.startsWith(`${key}:`)) throw error
        tally(0)
      }
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    throw new Error(`${key} was refused 600 times`)
  }

  const query = async <T>(url: string, sql: string, bindings: unknown[] = []): Promise<T[]> => {
    const connection = await mysql.createConnection({uri: url})
    try {
      return ((await connection.query(sql, bindings)) as unknown as [T[]])[0]
    } finally {
      await connection.end()
    }
  }

  /** The multi-writer errors in a daemon's log: the nodes each names. */
  const multiWriterErrors = (log: string): string[][] =>
    (fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '')
      .split('\n')
      .filter((line) => line.includes('Galera nodes at once'))
      .map((line) => (JSON.parse(line) as {nodes: string[]}).nodes)
  /** What `leads status --json` says of the Galera nodes the daemons write through. */
  const galeraStatus = async () => {
    const result = await runCliProcess(['status', '--json'], env)
    const checks = (JSON.parse(result.stdout) as {checks: Array<{check: string; ok: boolean; summary: string; details: {nodes: string[]; writers: unknown[]}}>})
      .checks
    return checks.find((check) => check.check === 'galera')!
  }
  /** The unhandled errors the daemons logged (each is a 500): what the assertions on 500s print. */
  const unhandledErrors = (): string =>
    [
      ...logs.values(),
      ...fs
        .readdirSync(dir)
        .filter((name) => name.startsWith('on-node'))
        .map((name) => path.join(dir, name)),
    ]
      .flatMap((log) =>
        (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n') : [])
          .filter((line) => line.includes('"unhandled error"'))
          .map((line) => `${path.basename(log)}: ${line}`),
      )
      .join('\n')
  /** How often the API daemons logged each retryable database failure ('database unavailable', 'database conflict'). */
  const logged503s = (): string => {
    const counts = new Map<string, number>()
    for (const daemon of apis)
      for (const line of fs.readFileSync(logs.get(daemon)!, 'utf8').split('\n')) {
        const message = /"msg":"(database (?:unavailable|conflict))"/.exec(line)?.[1]
        if (message) counts.set(message, (counts.get(message) ?? 0) + 1)
      }
    return [...counts].map(([message, n]) => `${message} ×${n}`).join(', ') || 'none'
  }
  /** Expects no request answered 500 since `before` (a copy of statuses taken when the test began). */
  const expectNo500Since = (before: ReadonlyMap<number, number>) =>
    expect((statuses.get(500) ?? 0) - (before.get(500) ?? 0), `requests answered 500; the daemons logged:\n${unhandledErrors()}`).to.equal(0)
  const writerNodesMetric = async (daemon: DaemonProcess) =>
    Number((await (await fetch(`${daemon.url}/metrics`)).text()).match(/^leads_galera_writer_nodes (\d+)$/m)?.[1])

  let report = ''

  it('warns at start that every daemon must write to one node, naming the node it reaches', async function () {
    const lines = fs
      .readFileSync(path.join(dir, 'api0.log'), 'utf8')
      .split('\n')
      .filter((line) => line.includes('Galera cluster'))
      .map((line) => JSON.parse(line) as {nodes: number; node: string; msg: string})
    expect(lines).to.have.length(1)
    expect(lines[0]).to.include({nodes: 3, node: 'node1'})
    expect(lines[0]!.msg).to.match(/^the database is a Galera cluster of 3 nodes: every daemon must write to one node at a time/)
  })

  it('loses no lead, event or change when the writer node is killed under load, and answers no request 500', async function () {
    const people = new Map<number, string>()
    const bulkLeads = new Set<string>()
    let merges = 0
    let next = 0
    let killedAt = 0
    let writesBackAt = 0
    let stopAt = Infinity
    const running = () => Date.now() < stopAt
    const statusesBefore = new Map(statuses)

    const creator = async (client: number) => {
      while (running()) {
        const index = next++
        const {body, sentAt} = await write(
          apis[client % apis.length]!.url + LEADS,
          {contact_name: `Person ${index}`, contact_email: `person${index}@example.org`},
          `create-${index}`,
        )
        people.set(index, body.lead.id as string)
        if (killedAt && !writesBackAt && sentAt >= killedAt) writesBackAt = Date.now()
      }
    }
    const merger = async (client: number) => {
      for (let round = 0; running(); round++) {
        const known = [...people.keys()]
        if (known.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, 50))
          continue
        }
        const index = known[Math.floor(Math.random() * known.length)]!
        const {body} = await write(
          apis[client % apis.length]!.url + LEADS,
          {contact_name: `Person ${index} (merged ${round})`, contact_email: `person${index}@example.org`},
          `merge-${client}-${round}`,
        )
        expect(body.merged, `merge ${client}-${round}`).to.equal(true)
        merges++
      }
    }
    const bulker = async () => {
      for (let round = 0; running(); round++) {
        const leads = Array.from({length: 50}, (_, row) => ({contact_name: `Bulk ${round}-${row}`, contact_email: `bulk${round}-${row}@example.org`}))
        const {body} = await write(apis[round % apis.length]!.url + `${LEADS}/bulk`, {leads}, `bulk-${round}`)
        for (const result of body.results as Array<{lead_id?: string}>) if (result.lead_id) bulkLeads.add(result.lead_id)
        await new Promise((resolve) => setTimeout(resolve, 1_000))
      }
    }
    const pulled: Array<{id: string; updated_at: string}> = []
    const stopPull = new AbortController()
    const following = pullLeads(new LeadsApiClient({baseUrl: apis[0]!.url, token, customerId}), {
      baseUrl: apis[0]!.url,
      customerId,
      stateFile: null,
      pageSize: 100,
      includeCustomFields: false,
      follow: true,
      intervalMs: 200,
      signal: stopPull.signal,
      writer: new LeadWriter('ndjson', async (text) => {
        for (const line of text.trim().split('\n').filter(Boolean)) pulled.push(JSON.parse(line) as {id: string; updated_at: string})
      }),
    })
    const traffic = Promise.all([...Array.from({length: CLIENTS}, (_, client) => creator(client)), merger(0), merger(1), bulker()])

    await new Promise((resolve) => setTimeout(resolve, BEFORE_KILL_MS))
    killedAt = Date.now()
    await cluster.kill(0)
    await waitUntil(() => writesBackAt, 'a create sent after the kill to be answered 201', 60_000)
    stopAt = Date.now() + AFTER_RECOVERY_MS
    await traffic
    // Writes are out from the kill until a create sent after it is stored: first refused (503 or a
    // dropped connection) while HAProxy moves to the next node, then held by that node until the
    // cluster has formed without the dead one (Galera's suspect timeout).
    const outSeconds = (writesBackAt - killedAt) / 1000
    const refusedSeconds = Math.max(0, lastRefusedAt - killedAt) / 1000
    const writer = await waitUntil(async () => (await cluster.balancerStats()).find((node) => node.status === 'UP')?.node, 'a node UP at the balancer')

    // Every acknowledged lead is stored, each person once.
    const url = `${cluster.url}/leads`
    const stored = await query<{id: string; contact_email: string}>(url, 'SELECT id, contact_email FROM leads WHERE customer_id = ?', [customerId])
    const storedIds = new Set(stored.map((row) => row.id))
    const acknowledged = [...people.values(), ...bulkLeads]
    expect(
      acknowledged.filter((id) => !storedIds.has(id)),
      'acknowledged leads missing',
    ).to.deep.equal([])
    expect(new Set(stored.map((row) => row.contact_email)).size, 'people stored twice').to.equal(stored.length)
    expect(stored.length, 'leads stored but never acknowledged').to.equal(acknowledged.length)

    // Every lead.created owed (one per single create of a new person) arrives, some perhaps twice.
    const [events] = await query<{n: number}>(url, `SELECT COUNT(*) AS n FROM events WHERE customer_id = ? AND type = 'lead.created'`, [customerId])
    expect(Number(events?.n), 'lead.created events').to.equal(people.size)
    const arrived = () => new Set(receiver.requests.map((request) => (JSON.parse(request.rawBody.toString('utf8')) as {lead: {id: string}}).lead.id))
    await waitUntil(() => arrived().size >= people.size, `${people.size} lead.created deliveries (have ${arrived().size})`, 120_000)
    expect([...arrived()].sort()).to.deep.equal([...people.values()].sort())
    const deliveryIds = receiver.requests.map((request) => String(request.headers['x-service-delivery']))
    const duplicates = deliveryIds.length - new Set(deliveryIds).size

    // The following pull sees every committed version once.
    const versions = async () =>
      (await query<{id: string; updated_at: number}>(url, 'SELECT id, updated_at FROM leads WHERE customer_id = ?', [customerId]))
        .map((row) => `${row.id}@${new Date(Number(row.updated_at)).toISOString()}`)
        .sort()
    const final = await versions()
    const latest = () => [...new Map(pulled.map((lead) => [lead.id, `${lead.id}@${lead.updated_at}`])).values()].sort()
    await waitUntil(() => latest().join() === final.join(), 'the pull to reach every lead as stored', 60_000)
    stopPull.abort()
    await following
    const pulledVersions = pulled.map((lead) => `${lead.id}@${lead.updated_at}`)
    expect(pulledVersions.length - new Set(pulledVersions).size, 'versions pulled twice').to.equal(0)

    report = [
      `      Galera, writer killed: ${acknowledged.length} leads acknowledged, ${stored.length} stored (${people.size} single creates, ${merges} merges, ${bulkLeads.size} bulk rows);`,
      `      lead.created owed ${people.size}, delivered ${arrived().size} (${duplicates} duplicate deliveries); pull saw ${new Set(pulledVersions).size} versions, none twice;`,
      `      writes out for ${outSeconds.toFixed(1)} s after the kill (refused for the first ${refusedSeconds.toFixed(1)} s, then held; now on ${writer}); answers: ${[...statuses].map(([status, n]) => `${status || 'dropped'} ×${n}`).join(', ')}`,
      `      the API daemons' 503s by what they logged: ${logged503s()}`,
    ].join('\n')
    console.log(report)
    expectNo500Since(statusesBefore)
    expect(outSeconds, 'seconds without a write stored').to.be.below(20)
  })

  it('takes the killed node back: it rejoins and takes the writes again', async function () {
    const started = Date.now()
    const statusesBefore = new Map(statuses)
    await cluster.startNode(0)
    const rejoined = (Date.now() - started) / 1000
    await waitUntil(async () => (await cluster.balancerStats()).find((node) => node.node === 'node1')?.status === 'UP', 'node1 UP at the balancer', 15_000)
    const commits = async () => Number((await query<{Value: string}>(cluster.nodes[0]!.url, `SHOW STATUS LIKE 'wsrep_local_commits'`))[0]!.Value)
    const before = await commits()
    for (let i = 0; i < 20; i++)
      await write(apis[i % apis.length]!.url + LEADS, {contact_name: `Back ${i}`, contact_email: `back${i}@example.org`}, `back-${i}`)
    const taken = (await commits()) - before
    console.log(`      node1 rejoined in ${rejoined.toFixed(1)} s and committed ${taken} of the next 20 creates' transactions itself`)
    expect(taken, 'transactions committed on node1').to.be.at.least(20)
    expectNo500Since(statusesBefore)
  })

  it('sees one writer node through the failover and the move back: no multi-writer error, leads status and the metric say one node', async function () {
    // Every daemon has recorded the node it writes through since node1 took the writes again.
    await new Promise((resolve) => setTimeout(resolve, 2 * HEARTBEAT_MS + 500))
    for (const log of logs.values()) expect(multiWriterErrors(log), path.basename(log)).to.deep.equal([])
    const status = await galeraStatus()
    expect(status, status.summary).to.include({ok: true, summary: '3 daemons write through node1'})
    expect(await writerNodesMetric(apis[0]!)).to.equal(1)
  })

  it('keeps one lead per person when two daemons write to two nodes at once (several writers: not supported, but merges hold)', async function () {
    // Each daemon on a node of its own, no balancer: the match-key locks conflict at certification and the loser runs again.
    const nodeLogs = [0, 1].map((i) => path.join(dir, `on-node${i + 1}.log`))
    const spawnedAt = Date.now()
    const statusesBefore = new Map(statuses)
    const onNodes = await Promise.all(
      [0, 1].map((i) => spawnDaemon({...env, LEADS_DATABASE_URL: `${cluster.nodes[i]!.url}/leads`}, 'api', undefined, undefined, nodeLogs[i])),
    )
    daemons.push(...onNodes)
    const PEOPLE = 10
    const PER_PERSON = 8
    // Transactions a node aborted because another node's write to the same rows certified first.
    const conflicts = async () => {
      let sum = 0
      for (const index of [0, 1]) {
        const rows = await query<{Value: string}>(
          cluster.nodes[index]!.url,
          `SHOW STATUS WHERE Variable_name IN ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')`,
        )
        sum += rows.reduce((total, row) => total + Number(row.Value), 0)
      }
      return sum
    }
    const conflictsBefore = await conflicts()
    await Promise.all(
      Array.from({length: PEOPLE * PER_PERSON}, (_, k) =>
        write(onNodes[Math.floor(k / PEOPLE) % 2]!.url + LEADS, {contact_name: `Multi ${k}`, contact_email: `multi${k % PEOPLE}@example.org`}, `multi-${k}`),
      ),
    )
    const connection = await mysql.createConnection({uri: `${cluster.nodes[0]!.url}/leads`})
    try {
      // Every write certified anywhere is applied here before this read.
      await connection.query('SET SESSION wsrep_sync_wait = 1')
      const [rows] = (await connection.query(
        `SELECT contact_email, COUNT(*) AS n FROM leads WHERE customer_id = ? AND contact_email LIKE 'multi%' GROUP BY contact_email`,
        [customerId],
      )) as unknown as [Array<{contact_email: string; n: number}>]
      expect(rows.map((row) => Number(row.n))).to.deep.equal(Array.from({length: PEOPLE}, () => 1))
    } finally {
      await connection.end()
    }
    console.log(
      `      two writers: ${PEOPLE * PER_PERSON} creates of ${PEOPLE} people, ${(await conflicts()) - conflictsBefore} certification conflicts retried, one lead per person`,
    )
    expectNo500Since(statusesBefore)

    // Several writers are seen: by the daemons on the two nodes and by those behind HAProxy (on node1).
    const detectedAfter = await waitUntil(
      () => [...nodeLogs, path.join(dir, 'api0.log')].every((log) => multiWriterErrors(log).length > 0),
      'every daemon to log the multi-writer error',
      30_000,
    )
    expect(detectedAfter).to.equal(true)
    const detectedSeconds = (Date.now() - spawnedAt) / 1000
    for (const log of [...nodeLogs, path.join(dir, 'api0.log')]) expect(multiWriterErrors(log)[0], path.basename(log)).to.deep.equal(['node1', 'node2'])
    const seen = await galeraStatus()
    expect(seen.ok, seen.summary).to.equal(false)
    expect(seen.summary).to.equal('daemons write through 2 nodes at once (node1, node2): several writers are not supported')
    expect(await writerNodesMetric(onNodes[1]!)).to.equal(2)
    expect(await writerNodesMetric(apis[0]!)).to.equal(2)
    console.log(
      `      two writers seen within ${detectedSeconds.toFixed(1)} s of the second daemon's start: logged by both node daemons and api0, leads status: ${seen.summary}`,
    )

    // Once the daemon on node2 stops, one node is written through again.
    await Promise.all(onNodes.map((daemon) => daemon.stop()))
    await new Promise((resolve) => setTimeout(resolve, LIVE_MS + 2 * HEARTBEAT_MS))
    const after = await galeraStatus()
    expect(after, after.summary).to.include({ok: true, summary: '3 daemons write through node1'})
    expect(await writerNodesMetric(apis[0]!)).to.equal(1)
    expect(fs.readFileSync(path.join(dir, 'api0.log'), 'utf8')).to.include('daemons write through one Galera node again')
  })

  it('refuses writes with 503 and Retry-After once two of three nodes are lost, says why in /readyz, and writes nothing half', async function () {
    // A daemon on node1 alone (no balancer) sees the node itself refuse; through HAProxy no node is left to send to.
    const direct = await spawnDaemon({...env, LEADS_DATABASE_URL: `${cluster.nodes[0]!.url}/leads`}, 'api')
    daemons.push(direct)
    // A node without quorum answers reads only when asked for dirty reads.
    const count = async () => {
      const connection = await mysql.createConnection({uri: `${cluster.nodes[0]!.url}/leads`})
      try {
        await connection.query('SET SESSION wsrep_dirty_reads = ON')
        const [rows] = (await connection.query('SELECT COUNT(*) AS n FROM leads')) as unknown as [Array<{n: number}>]
        return Number(rows[0]?.n)
      } finally {
        await connection.end()
      }
    }
    const before = await count()
    await Promise.all([cluster.kill(1), cluster.kill(2)])
    await waitUntil(async () => (await cluster.state(0))?.clusterStatus === 'non-Primary', 'node1 to lose quorum', 60_000)
    await waitUntil(async () => (await cluster.balancerStats()).every((node) => node.status.startsWith('DOWN')), 'every node DOWN at the balancer', 15_000)

    for (const [name, daemon, reason] of [
      ['through HAProxy', apis[0]!, /^database unreachable: /],
      ['on node1 directly', direct, /^database refuses statements \(ER_UNKNOWN_COM_ERROR\): the Galera node is not in the primary component/],
    ] as const) {
      const response = await fetch(daemon.url + LEADS, {
        method: 'POST',
        // An Idempotency-Key is printable ASCII without spaces: the name's spaces would make it a 400.
        headers: {...headers(), 'idempotency-key': `no-quorum-${name.replaceAll(' ', '-')}`},
        body: JSON.stringify({contact_name: 'No Quorum', contact_email: 'no-quorum@example.org'}),
      })
      expect(response.status, name).to.equal(503)
      expect(response.headers.get('retry-after'), name).to.equal('2')
      expect(((await response.json()) as {error: unknown}).error, name).to.include({type: 'api_error', code: 503})
      const ready = await fetch(`${daemon.url}/readyz`)
      const body = (await ready.json()) as {checks: {database: boolean}; reasons: string[]}
      expect(ready.status, name).to.equal(503)
      expect(body.checks.database, name).to.equal(false)
      expect(body.reasons[0], name).to.match(reason)
      console.log(`      no quorum, ${name}: 503 Retry-After 2; /readyz: ${body.reasons[0]}`)
    }
    expect(await count(), 'leads on the survivor').to.equal(before)
  })
})
