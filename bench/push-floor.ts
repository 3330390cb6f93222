/**
 * The floor under a single create: the same transaction shape straight through mysql2 (begin, a
 * lead-sized insert, an event insert, commit) at the benchmark's concurrency, on the same
 * database, into scratch tables that are dropped afterwards. What a create cannot beat.
 */
import {randomUUID} from 'node:crypto'

import mysql from 'mysql2/promise'

export interface FloorFigures {
  singleMedianMs: number
  concurrentPerSecond: number
}

export async function measureFloor(url: string, sequential: number, concurrent: number, concurrency: number): Promise<FloorFigures> {
  const pool = mysql.createPool({uri: url, connectionLimit: concurrency})
  try {
    await pool.query('CREATE TABLE IF NOT EXISTS bench_floor_leads (id VARCHAR(36) PRIMARY KEY, customer_id VARCHAR(36) NOT NULL, contact_name VARCHAR(200), contact_email VARCHAR(254), created_at BIGINT NOT NULL, KEY (customer_id, created_at)) ENGINE=InnoDB')
    await pool.query('CREATE TABLE IF NOT EXISTS bench_floor_events (id VARCHAR(36) PRIMARY KEY, lead_id VARCHAR(36) NOT NULL, payload TEXT NOT NULL, created_at BIGINT NOT NULL) ENGINE=InnoDB')
    const customerId = randomUUID()
    const create = async (i: number) => {
      const connection = await pool.getConnection()
      try {
        await connection.beginTransaction()
        const leadId = randomUUID()
        await connection.query('INSERT INTO bench_floor_leads (id, customer_id, contact_name, contact_email, created_at) VALUES (?, ?, ?, ?, ?)', [leadId, customerId, `Floor ${i}`, `floor-${i}@example.org`, Date.now()])
        await connection.query('INSERT INTO bench_floor_events (id, lead_id, payload, created_at) VALUES (?, ?, ?, ?)', [randomUUID(), leadId, JSON.stringify({lead_id: leadId, contact_name: `Floor ${i}`}), Date.now()])
        await connection.commit()
      } finally {
        connection.release()
      }
    }
    const single: number[] = []
    for (let i = 0; i < sequential; i++) {
      const started = performance.now()
      await create(i)
      single.push(performance.now() - started)
    }
    let next = 0
    const started = performance.now()
    await Promise.all(Array.from({length: concurrency}, async () => {
      while (next < concurrent) await create(sequential + next++)
    }))
    const seconds = (performance.now() - started) / 1000
    return {singleMedianMs: [...single].sort((a, b) => a - b)[Math.floor(single.length / 2)]!, concurrentPerSecond: concurrent / seconds}
  } finally {
    await pool.query('DROP TABLE IF EXISTS bench_floor_leads, bench_floor_events')
    await pool.end()
  }
}
